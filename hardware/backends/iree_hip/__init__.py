"""``iree-hip``: IREE's HIP target (LLVM AMDGPU code objects for a gfx architecture) run on an
AMD GPU through the HIP HAL driver of iree-base-runtime.

The target is the device's architecture as ROCm reports it (``rocm_agent_enumerator``, gfx000 is
the CPU agent), then gfx942 (MI300, which IREE 3.13 builds); without a GPU the target is gfx942
and cases compile, then SKIP with the driver's words.
"""
from __future__ import annotations

from accel_regress.toolchains.iree.gpu_backend import IreeGpuBackend, query

NO_GPU_TARGET = "gfx942"


def agents() -> list[str]:
    out = query(("rocm_agent_enumerator",)) or ""
    return [ln.strip() for ln in out.splitlines() if ln.strip().startswith("gfx") and ln.strip() != "gfx000"]


class IreeHipBackend(IreeGpuBackend):
    name = "iree-hip"
    description = "IREE compiles the linalg program for HIP (the GPU's gfx architecture) and runs it on the AMD GPU"
    driver = "hip"
    target_flag = "--iree-rocm-target"

    def candidates(self) -> list[str]:
        return list(dict.fromkeys([*agents()[:1], NO_GPU_TARGET]))

    def device_versions(self) -> dict[str, str]:
        found = agents()
        return {"hip-device": found[0] if found else "none (rocm_agent_enumerator lists no GPU)"}
