"""Backends, the hardware fixture, isolation, verdicts, expectations, gate and reports."""
from accel_regress.core.errors import CompileError, Crash, Hang, Unsupported, VerdictError

__all__ = ["CompileError", "Crash", "Hang", "Unsupported", "VerdictError"]
