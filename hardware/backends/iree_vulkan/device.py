"""The Vulkan device present, as its driver reports it: ``vulkaninfo --json`` (Debian
``vulkan-tools``) writes the first device's features, properties and limits in the Vulkan
Profiles JSON schema (``capabilities.device.{features,properties}``), the same device that
``iree-run-module --device=vulkan`` opens (both enumerate through the Vulkan loader; device 0).
"""
from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

APT_HINT = "apt-get install mesa-vulkan-drivers vulkan-tools (lavapipe, Mesa's Vulkan driver on the CPU)"
# Where the Vulkan loader finds drivers' manifests (its docs, LoaderDriverInterface.md: the XDG
# data and config folders), and where NVIDIA's container images mount their driver.
ICD_DIRS = ("/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d", "/etc/vulkan/icd.d",
            "/usr/local/nvidia/share/vulkan/icd.d")
GLVND_HINT = ("NVIDIA's Vulkan driver ({icd}, {lib}) loads only with glvnd's libGLdispatch.so.0, which is "
              "not installed: apt-get install libglvnd0 libvulkan1 vulkan-tools (seen on an NVIDIA H200 "
              "machine: vkCreateInstance failed with VK_ERROR_INCOMPATIBLE_DRIVER until it was)")


def _icd_manifests() -> list[Path]:
    named = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    if named:
        return [Path(p) for p in named.split(os.pathsep) if p]
    return [p for d in ICD_DIRS for p in sorted(Path(d).glob("*.json"))]


def hint() -> str:
    """What to install when no Vulkan device could be opened: glvnd where an NVIDIA driver is
    there without it (its GLX library carries the Vulkan driver), else lavapipe."""
    for manifest in _icd_manifests():
        try:
            lib = str(json.loads(manifest.read_text())["ICD"]["library_path"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if "nvidia" in lib.lower() and ctypes.util.find_library("GLdispatch") is None:
            return GLVND_HINT.format(icd=manifest, lib=lib)
    return APT_HINT


@dataclass(frozen=True)
class VulkanDevice:
    name: str
    device_type: str                 # VK_PHYSICAL_DEVICE_TYPE_CPU for lavapipe
    api_version: tuple[int, int, int]
    driver: str                      # driverName + driverInfo (e.g. 'llvmpipe Mesa 22.3.6 (LLVM 15.0.6)')
    features: dict = field(default_factory=dict)   # every VkBool32 feature the device reports, by name
    limits: dict = field(default_factory=dict)
    subgroup_size: int = 0
    subgroup_sizes: tuple[int, int] = (0, 0)       # min, max (subgroup size control)
    subgroup_operations: tuple[str, ...] = ()

    def has(self, feature: str) -> bool:
        return bool(self.features.get(feature))


def _api_version(packed: int) -> tuple[int, int, int]:
    # VK_API_VERSION_MAJOR/MINOR/PATCH (Vulkan spec, "Version Numbers"): 7-bit variant, 7, 10, 12 bits.
    return ((packed >> 22) & 0x7F, (packed >> 12) & 0x3FF, packed & 0xFFF)


def parse_profile(doc: dict) -> VulkanDevice:
    """A device from vulkaninfo's Vulkan Profiles JSON."""
    cap = doc["capabilities"]["device"]
    props = cap["properties"]
    base = props["VkPhysicalDeviceProperties"]
    features: dict = {}
    for struct in cap.get("features", {}).values():
        for key, value in struct.items():
            if isinstance(value, bool):
                features[key] = features.get(key, False) or value
    sub = props.get("VkPhysicalDeviceSubgroupProperties", {})
    size_ctl = props.get("VkPhysicalDeviceSubgroupSizeControlProperties", {})
    drv = props.get("VkPhysicalDeviceDriverProperties", {})
    size = int(sub.get("subgroupSize", 0))
    return VulkanDevice(
        name=base.get("deviceName", "?"), device_type=base.get("deviceType", "?"),
        api_version=_api_version(int(base.get("apiVersion", 0))),
        driver=" ".join(x for x in (drv.get("driverName", ""), drv.get("driverInfo", "")) if x) or "?",
        features=features, limits=dict(base.get("limits", {})), subgroup_size=size,
        subgroup_sizes=(int(size_ctl.get("minSubgroupSize", size)), int(size_ctl.get("maxSubgroupSize", size))),
        subgroup_operations=tuple(sub.get("supportedOperations", ())))


class NoDevice(Exception):
    """No Vulkan device could be read; the message says what is missing."""


@lru_cache(maxsize=1)
def probe() -> VulkanDevice:
    tool = shutil.which("vulkaninfo")
    if tool is None:
        raise NoDevice(f"vulkaninfo not found: {APT_HINT}")
    with tempfile.TemporaryDirectory(prefix="accel-vulkaninfo-") as tmp:
        try:
            proc = subprocess.run([tool, "--json"], cwd=tmp, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise NoDevice(f"vulkaninfo --json failed: {exc}") from None
        files = sorted(Path(tmp).glob("*.json"))
        if proc.returncode != 0 or not files:
            words = (proc.stderr or proc.stdout).strip().splitlines()
            raise NoDevice(f"no Vulkan device (vulkaninfo exit {proc.returncode}: "
                           f"{words[-1] if words else 'no output'}): {hint()}")
        try:
            return parse_profile(json.loads(files[0].read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            raise NoDevice(f"vulkaninfo wrote a profile this backend cannot read ({type(exc).__name__}: {exc})") from None


def availability() -> Optional[str]:
    try:
        probe()
    except NoDevice as exc:
        return str(exc)
    return None
