"""Backends, the hardware fixture, isolation, verdicts, expectations, gate and reports."""
from importlib import metadata as _metadata

from accel_regress.core.errors import CompileError, Crash, Hang, Unsupported, VerdictError

try:
    # One source, pyproject.toml's version, as installed (pip install -e . included).
    __version__ = _metadata.version("accel-regress")
except _metadata.PackageNotFoundError:       # imported from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = ["CompileError", "Crash", "Hang", "Unsupported", "VerdictError", "__version__"]
