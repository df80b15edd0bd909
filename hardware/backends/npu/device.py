"""The NPU device: one pyxrt handle per process, opened with retry, and what it is.

Why one handle per process: ``pyxrt.device(i)`` opens /dev/accel/accelN on every construction
and the last handle going away closes it; mlir-aie found the reopen to fail transiently (ENODEV)
and keeps one handle per index for the life of the process, retrying a failed open 5 times with
a linear back-off and a gc pass in between (mlir-aie python/utils/hostruntime/xrtruntime/
device.py: _MAX_RETRIES = 5, _open_device, acquire_device). We do the same. ``release()`` drops the
handle (and everything derived from it, which the caller must drop first) so that ``reset()``
after a HANG really reopens the device.
"""
from __future__ import annotations

import gc
import importlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Optional

RESOURCE = "npu"          # NpuBackend.device_resource: the pool --devices locks
OPEN_RETRIES = 5
_BACKOFF_S = 1.0          # attempt i waits i * _BACKOFF_S, as mlir-aie does

# index -> pyxrt.device
_DEVICES: dict[int, Any] = {}

# Device kinds by what XRT reports as the device name (xrt_info_device.name, XRT's rom_vbnv).
# Longer names first: "Strix" is a prefix of "Strix Halo". mlir-aie's NPU_MODELS table
# (hostruntime/xrtruntime/hostruntime.py) lists the same strings: npu1/Phoenix for the AIE2
# part and npu4/Strix, npu5/Strix Halo, npu6/Krackan for AIE2P.
KINDS = (
    ("npu5", ("npu5", "Strix Halo")),
    ("npu6", ("npu6", "Krackan")),
    ("npu4", ("npu4", "Strix")),
    ("npu1", ("npu1", "Phoenix")),
)
KIND_NAMES = {"npu1": "Phoenix", "npu4": "Strix", "npu5": "Strix Halo", "npu6": "Krackan"}


def pyxrt():
    """The pyxrt module (imported on demand so that this module imports anywhere)."""
    return importlib.import_module("pyxrt")


def device_node(index: int) -> Path:
    return Path(f"/dev/accel/accel{index}")


class NotChosen(RuntimeError):
    """--devices is on and this process holds no NPU lock yet: no device may be touched."""


def device_index() -> int:
    """Which NPU this process drives: the one the runner handed it for --devices
    ($ACCEL_DEVICE_NPU: set in the isolated worker's run and in the pytest process holding the
    lock), else $ACCEL_NPU_DEVICE / 0. Raises NotChosen while --devices locks NPUs and this process
    holds none yet ($ACCEL_DEVICE_NPU empty: an xdist controller, or a worker before its first
    run): taking one here would starve the workers."""
    try:
        from accel_regress.core import devices
    except ImportError:
        devices = None
    value = devices.assigned(RESOURCE) if devices is not None and hasattr(devices, "assigned") else None
    if value == "":
        raise NotChosen("--devices is set and this process holds no NPU lock yet")
    if value is not None:
        return int(value)
    return int(os.environ.get("ACCEL_NPU_DEVICE", "0") or 0)


def _open(index: int):
    xrt = pyxrt()
    for attempt in range(1, OPEN_RETRIES + 1):
        try:
            return xrt.device(index)
        except RuntimeError:
            if attempt == OPEN_RETRIES:
                raise
            gc.collect()                    # a handle awaiting collection still holds the device
            time.sleep(_BACKOFF_S * attempt)
    raise AssertionError("unreachable")


def acquire(index: Optional[int] = None):
    """This process's handle on NPU ``index`` (opened on first use, then reused)."""
    index = device_index() if index is None else index
    handle = _DEVICES.get(index)
    if handle is None:
        handle = _open(index)
        _DEVICES[index] = handle
    return handle


def release(index: Optional[int] = None) -> None:
    """Drop the handle(s) so that the next ``acquire`` reopens the device."""
    if index is None:
        _DEVICES.clear()
    else:
        _DEVICES.pop(index, None)
    gc.collect()


def open_error(index: int) -> Optional[str]:
    """None when the device opens; otherwise the precise reason (no node, or the driver's words)."""
    node = device_node(index)
    try:
        acquire(index)
        return None
    except Exception as exc:            # pyxrt raises RuntimeError with the driver's text
        text = f"{type(exc).__name__}: {exc}".strip()
    if not node.exists():
        return (f"no NPU device node {node} (the amdxdna driver is not loaded or this machine has "
                f"no NPU: install the xdna-driver and check `lsmod | grep amdxdna`); "
                f"pyxrt.device({index}) said: {text}")
    return f"pyxrt.device({index}) failed after {OPEN_RETRIES} tries: {text}"


def kind_of(name: str) -> Optional[str]:
    """npu1 / npu4 / npu5 / npu6 from XRT's device name, longer names tested first."""
    for kind, needles in KINDS:
        for needle in needles:
            if re.search(rf"(?<![A-Za-z0-9]){re.escape(needle)}(?![A-Za-z0-9])", name, re.IGNORECASE):
                return kind
    return None


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
        return value if isinstance(value, dict) else {}
    except (TypeError, ValueError):
        return {}


def describe(handle) -> dict[str, str]:
    """Device kind, name, and XRT / driver / firmware versions, for every result."""
    xrt = pyxrt()
    info: dict[str, str] = {}
    name = handle.get_info(xrt.xrt_info_device.name)
    kind = kind_of(name)
    info["npu_device_name"] = name
    info["npu_device_kind"] = kind or f"unknown ({name})"
    if kind:
        info["npu_device_family"] = KIND_NAMES[kind]
    try:
        info["npu_bdf"] = handle.get_info(xrt.xrt_info_device.bdf)
    except Exception:
        pass
    # xrt_info_device.host is XRT's get_xrt_info(): version, branch, hash, build_hash_date and a
    # "drivers" list of {name, version, hash} read from /sys/module/<driver>/version.
    host = _json(handle.get_info(xrt.xrt_info_device.host))
    info["xrt_version"] = str(host.get("version", "unknown"))
    if host.get("hash"):
        info["xrt_hash"] = str(host["hash"])
    drivers = host.get("drivers") or []
    if isinstance(drivers, dict):       # boost's JSON writer turns a one-element array into {"": ...}
        drivers = list(drivers.values())
    for drv in drivers if isinstance(drivers, list) else []:
        if isinstance(drv, dict) and drv.get("name"):
            info[f"driver_{drv['name']}"] = str(drv.get("version", "unknown"))
    info.setdefault("driver_amdxdna", _sys_module_version("amdxdna"))
    timeout = driver_timeout_s()
    info["amdxdna_timeout_in_sec"] = "no such parameter" if timeout is None else str(timeout)
    info["npu_firmware"] = firmware_version()
    return info


SYS_MODULE = Path("/sys/module")


def driver_timeout_s() -> Optional[int]:
    """The amdxdna driver's own command timeout, ``timeout_in_sec`` (None where the parameter does
    not exist; 0 = off). amd/xdna-driver src/driver/amdxdna/aie2_tdr.c:12-14 (default 2, 0644,
    since 7e3e157c, 2024-07-19): a watchdog that every timeout_in_sec seconds checks whether any
    context with pending commands completed one since the last check, and if none did, stops and
    restarts every context (aie2_tdr_work, aie2_rq_is_all_context_stuck): a healthy command that
    runs longer than that (1-2 periods) is ended with ERT_CMD_STATE_TIMEOUT, the ones queued
    behind it with ABORT (aie2_ctx.c aie2_ctx_cmd_health_data)."""
    path = SYS_MODULE / "amdxdna" / "parameters" / "timeout_in_sec"
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _sys_module_version(module: str) -> str:
    path = Path("/sys/module") / module / "version"
    try:
        return path.read_text().split(",")[0].strip() or "unknown"
    except OSError:
        return f"unknown (no {path})"


_FIRMWARE_RE = re.compile(r"firmware\s+version\s*:\s*(\S+)", re.IGNORECASE)


def firmware_version(timeout_s: float = 10.0) -> str:
    """NPU firmware version as ``xrt-smi examine`` prints it (pyxrt has no binding for it)."""
    smi = shutil.which("xrt-smi") or ("/opt/xilinx/xrt/bin/xrt-smi"
                                      if os.access("/opt/xilinx/xrt/bin/xrt-smi", os.X_OK) else None)
    if smi is None:
        return "unknown (xrt-smi not found)"
    try:
        out = subprocess.run([smi, "examine"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown (xrt-smi examine: {type(exc).__name__})"
    match = _FIRMWARE_RE.search(out.stdout or "")
    return match.group(1) if match else "unknown (xrt-smi examine printed no firmware version)"
