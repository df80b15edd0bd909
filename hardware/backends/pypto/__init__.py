"""The hw-native-sys pypto toolchain: backends a2a3 / a2a3sim and the ptoas codegen lint.

Nothing here imports pypto itself: the toolchain runs in its own interpreter, one process per
case (see backend.py), so the suite loads on any machine.
"""
from accel_regress.backends.pypto.backend import A2a3Backend, A2a3SimBackend

__all__ = ["A2a3Backend", "A2a3SimBackend"]
