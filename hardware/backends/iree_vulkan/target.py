"""The IREE GPU target for the Vulkan device present, built from what the device reports.

IREE 3.13 picks its Vulkan target by name (``--iree-vulkan-target``, default
``vp_android_baseline_2022``: SPIR-V 1.3, fp32/int32 compute, 32-bit storage, no subgroup
operations; iree-org/iree compiler/plugins/target/VulkanSPIRV/VulkanSPIRVTarget.cpp,
``VulkanSPIRVTargetOptions::target``) and looks the name up in a table of known GPUs
(compiler/src/iree/compiler/Codegen/Dialect/GPU/TargetUtils/KnownTargets.cpp,
``getVulkanTargetDetails``); lavapipe is there as ``llvmpipe`` (since 3.12.0rc20260530), most
devices are not, and the baseline cannot
hold a bf16 buffer ("failed to legalize operation 'vector.bitcast'"). The executable target the
name would produce is an ``#iree_gpu.target`` attribute; this module writes that attribute from the
device's own features and limits and puts it on the program's module as ``hal.device.targets``,
which iree-compile reads instead of the flag's default.
"""
from __future__ import annotations

import re
from typing import Optional

from accel_regress.backends.iree_vulkan.device import VulkanDevice

# Vulkan API version -> the newest SPIR-V it accepts (Vulkan spec, appendix "Versions": 1.1 -> 1.3,
# 1.2 -> 1.5, 1.3 -> 1.6).
SPIRV_FOR_API = {(1, 0): "v1.0", (1, 1): "v1.3", (1, 2): "v1.5", (1, 3): "v1.6", (1, 4): "v1.6"}


def _compute(dev: VulkanDevice) -> list[str]:
    out = ["fp32", "int32"]
    out += ["fp64"] if dev.has("shaderFloat64") else []
    out += ["fp16"] if dev.has("shaderFloat16") else []
    out += ["int64"] if dev.has("shaderInt64") else []
    out += ["int16"] if dev.has("shaderInt16") else []
    out += ["int8"] if dev.has("shaderInt8") else []
    return out


def _storage(dev: VulkanDevice) -> list[str]:
    out = ["b32"]
    out += ["b64"] if dev.has("shaderInt64") else []
    out += ["b16"] if dev.has("storageBuffer16BitAccess") else []
    out += ["b8"] if dev.has("storageBuffer8BitAccess") else []
    return out


def _subgroup(dev: VulkanDevice) -> list[str]:
    ops = set(dev.subgroup_operations)
    out = ["shuffle"] if "VK_SUBGROUP_FEATURE_SHUFFLE_BIT" in ops else []
    out += ["arithmetic"] if "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT" in ops else []
    return out or ["none"]


def _subgroup_sizes(dev: VulkanDevice) -> list[int]:
    lo, hi = dev.subgroup_sizes
    if not dev.has("subgroupSizeControl") or lo <= 0 or hi < lo:
        return [dev.subgroup_size or 32]
    sizes, s = [], lo
    while s <= hi:
        sizes.append(s)
        s *= 2
    return sizes


def _triple(values, cap: int) -> list[int]:
    return [min(int(v), cap) for v in values][:3]


def target_attr(dev: VulkanDevice) -> str:
    """The ``#hal.executable.target`` for vulkan-spirv describing ``dev``."""
    lim = dev.limits
    spirv = SPIRV_FOR_API.get(dev.api_version[:2], "v1.3")
    int32 = 2 ** 31 - 1
    wgp = (f"compute = {'|'.join(_compute(dev))}, storage = {'|'.join(_storage(dev))}, "
           f"subgroup = {'|'.join(_subgroup(dev))}, dot = none, mma = [], "
           f"subgroup_size_choices = {_subgroup_sizes(dev)}, "
           f"max_workgroup_sizes = {_triple(lim['maxComputeWorkGroupSize'], int32)}, "
           f"max_thread_count_per_workgroup = {int(lim['maxComputeWorkGroupInvocations'])}, "
           f"max_workgroup_memory_bytes = {int(lim['maxComputeSharedMemorySize'])}, "
           f"max_workgroup_counts = {_triple(lim['maxComputeWorkGroupCount'], int32)}")
    return ('#hal.executable.target<"vulkan-spirv", "vulkan-spirv-fb", {iree_codegen.target_info = '
            f'#iree_gpu.target<arch = "", features = "spirv:{spirv},cap:Shader", wgp = <{wgp}>>}}>')


_ALIAS = re.compile(r"^[!#][\w.$-]+\s*=")


def with_target(mlir: str, dev: VulkanDevice) -> str:
    """The program inside a module that names the device's target (type and attribute aliases,
    which MLIR allows only at the top level, stay outside it)."""
    lines = mlir.splitlines()
    aliases = [ln for ln in lines if _ALIAS.match(ln)]
    body = [ln for ln in lines if not _ALIAS.match(ln)]
    devices = f'[#hal.device.target<"vulkan", [{target_attr(dev)}]> : !hal.device]'
    return "\n".join([*aliases, f"module attributes {{hal.device.targets = {devices}}} {{", *body, "}", ""])


# Element types a program's buffers may hold, and what the device needs for each: IREE's SPIR-V
# path stores bf16 as i16 and computes in f32, so bf16 needs 16-bit storage and int16.
NEEDS = {
    "bf16": (("storageBuffer16BitAccess", "shaderInt16"), "bf16 buffers (kept as i16 by IREE's SPIR-V path)"),
    "f16": (("storageBuffer16BitAccess", "shaderFloat16"), "f16 buffers"),
    "i8": (("storageBuffer8BitAccess", "shaderInt8"), "i8 buffers"),
    "i16": (("storageBuffer16BitAccess", "shaderInt16"), "i16 buffers"),
    "f64": (("shaderFloat64",), "f64 arithmetic"),
    "i64": (("shaderInt64",), "i64 buffers"),
}
_TENSOR_TYPES = re.compile(r"tensor<(?:[0-9?]+x)*([a-z]+[0-9]+)>")


def cannot_hold(mlir: str, dev: VulkanDevice) -> Optional[str]:
    """What in the program's tensor types the device lacks, or None."""
    for et in sorted(set(_TENSOR_TYPES.findall(mlir))):
        feats, what = NEEDS.get(et, ((), ""))
        lacking = [f for f in feats if not dev.has(f)]
        if lacking:
            return f"{dev.name} cannot hold {what}: it does not report {', '.join(lacking)}"
    return None
