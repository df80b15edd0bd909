"""``iree-cuda``: IREE's CUDA target (LLVM NVPTX: PTX in the module, JIT-compiled by the driver)
run on an NVIDIA GPU through the CUDA HAL driver of iree-base-runtime.

The target is the device's compute capability (``nvidia-smi --query-gpu=compute_cap``), then
older ones: IREE 3.13 builds sm_70..sm_89 and sm_120 but not sm_90 / sm_100 ("missing GPU target
in #hal.executable.target"; ``hopper`` / ``h100`` abort), and PTX built for an older capability
runs on a newer GPU through the driver's JIT, so an H100 runs sm_89 code. Without a GPU the
target is sm_80 and cases compile, then SKIP with the driver's words.
"""
from __future__ import annotations

from accel_regress.toolchains.iree.gpu_backend import IreeGpuBackend, query

# Older capabilities to fall back on, newest first (the PTX of each runs on every later GPU).
FALLBACKS = ("sm_89", "sm_87", "sm_86", "sm_80", "sm_75", "sm_70")
NO_GPU_TARGET = "sm_80"
QUERY = ("nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader")


def gpus() -> list[dict[str, str]]:
    """One row per GPU nvidia-smi lists (empty without the driver)."""
    rows = []
    for line in (query(QUERY) or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append({"name": parts[0], "driver": parts[1], "capability": parts[2]})
    return rows


def candidates_for(capability: str) -> list[str]:
    """``'9.0'`` -> sm_90, then every fallback not newer than it."""
    try:
        major, minor = (int(x) for x in capability.split("."))
    except ValueError:
        return [NO_GPU_TARGET]
    own = major * 10 + minor
    return list(dict.fromkeys([f"sm_{own}", *(t for t in FALLBACKS if int(t[3:]) <= own)]))


class IreeCudaBackend(IreeGpuBackend):
    name = "iree-cuda"
    description = "IREE compiles the linalg program for CUDA (PTX for the GPU's compute capability) and runs it on the NVIDIA GPU"
    driver = "cuda"
    target_flag = "--iree-cuda-target"

    def candidates(self) -> list[str]:
        found = gpus()
        return candidates_for(found[0]["capability"]) if found else [NO_GPU_TARGET]

    def device_versions(self) -> dict[str, str]:
        found = gpus()
        if not found:
            return {"cuda-device": "none (nvidia-smi lists no GPU)"}
        gpu = found[0]
        return {"cuda-device": gpu["name"], "cuda-driver": gpu["driver"], "cuda-capability": gpu["capability"]}
