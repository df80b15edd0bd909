"""``npu`` backend: AMD NPUs through pyxrt (raw, from prebuilt artifacts) or through IRON."""
from hardware.npu.backend import NpuBackend

__all__ = ["NpuBackend"]
