"""``npu`` backend: AMD NPUs through pyxrt (raw, from prebuilt artifacts) or through IRON."""
from accel_regress.backends.npu.backend import NpuBackend

__all__ = ["NpuBackend"]
