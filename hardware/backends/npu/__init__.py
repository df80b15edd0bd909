"""``npu`` backend: AMD NPUs through pyxrt (raw, from prebuilt artifacts) or through IRON."""
__all__ = ["NpuBackend"]


def __getattr__(name):
    # Loaded when the entry point asks for it, so that the pytest plugin's NPU options and marker
    # (markers.py, in this package) cost a project that never runs a backend no backend import.
    if name == "NpuBackend":
        from accel_regress.backends.npu.backend import NpuBackend
        return NpuBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
