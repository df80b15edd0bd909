"""The hw-native-sys pypto toolchain: backends a2a3 / a2a3sim and the ptoas codegen lint.

Nothing here imports pypto itself: the toolchain runs in its own interpreter, one process per
case (see backend.py), so the suite loads on any machine.
"""
__all__ = ["A2a3Backend", "A2a3SimBackend"]


def __getattr__(name):
    # Loaded when the entry point asks for them, so that the pytest plugin's --pto-cpp option
    # (pto_cpp_option.py, in this package) costs a project that never runs a backend no backend import.
    if name in __all__:
        from accel_regress.backends.pypto import backend
        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
