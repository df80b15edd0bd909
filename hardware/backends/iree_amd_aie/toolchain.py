"""What the installed iree-amd-aie build speaks: its compiler era and its NPU HAL drivers.

Both are read from the tools themselves (``iree-compile --help-hidden``, falling back to
``--help``; ``iree-run-module --list_drivers``), never assumed, because the plugin's flags and
driver names changed under its users (nod-ai/iree-amd-aie history):

- ``use-pipeline`` era, 2024-01-31 (89361beb, #113) to 2024-07-02: ``--iree-amdaie-use-pipeline``
  = ``pad-pack`` (the default) | ``pack-peel`` (Transforms/Passes.cpp:30 at 35e1c0d3, PR #294,
  seed 003's fix) and ``--iree-amd-aie-mlir-aie-install-dir`` (Target/AIETarget.h:52 at 35e1c0d3);
  build_tools/ci/run_matmul_test.sh:190,198,343-346 at 35e1c0d3 runs ``--device=xrt``.
- ``lower-to-aie`` era, from 551403c5 (2024-07-02, #473): ``--iree-amdaie-lower-to-aie-pipeline``
  and ``--iree-amdaie-tile-pipeline`` (Passes.cpp:39,51 there); ``--iree-amd-aie-install-dir``
  from 1680e0ff (2024-07-05, #501), the mlir-aie install dir flag gone at cb5259d1 (2024-07-17,
  #544); ``--iree-amdaie-target-device`` from 33a86189 (2024-07-11, #528, AIETarget.cpp:54).
Each flag is passed only when the compiler lists it, so the days in between work too.

HAL drivers: ``xrt`` (XRT's, the oldest), ``xrt-lite`` (direct to the amdxdna kernel driver,
fad96292, 2024-10-18, #816: driver/xrt-lite/registration/driver_module.c:115, and the compiler's
``--iree-amdaie-device-hal`` with default xrt-lite, Target/AIETarget.h:58,195), renamed
``amdxdna`` at 7864db10 (2026-05-30, #1409; AIETarget.h:93 default AMDXDNA, :326 values xrt |
amdxdna; driver/amdxdna/registration/driver_module.c:106). The e2e script
(build_tools/ci/cpu_comparison/run.py:965,1013,2880 at fddfec1b) compiles with
``--iree-amdaie-device-hal=H`` and runs ``--device=H`` with H = amdxdna by default. The module
must be compiled for the driver that runs it (xrt reads ``amdaie-xclbin-fb``, the others
``amdaie-pdi-fb``: AIETarget.cpp:198,202), so one driver is chosen for both.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

# Newest first: the first one both tools support is used unless $ACCEL_AMDAIE_DEVICE_HAL says.
DRIVERS = ("amdxdna", "xrt-lite", "xrt")
DRIVER_ENV = "ACCEL_AMDAIE_DEVICE_HAL"

USE_PIPELINE = "--iree-amdaie-use-pipeline"
LOWER_TO_AIE = "--iree-amdaie-lower-to-aie-pipeline"
TILE_PIPELINE = "--iree-amdaie-tile-pipeline"
TARGET_DEVICE = "--iree-amdaie-target-device"
INSTALL_DIR = "--iree-amd-aie-install-dir"
MLIR_AIE_INSTALL_DIR = "--iree-amd-aie-mlir-aie-install-dir"
VITIS_INSTALL_DIR = "--iree-amd-aie-vitis-install-dir"
DEVICE_HAL = "--iree-amdaie-device-hal"

ERAS = {
    "use-pipeline": "Jan-Jul 2024 (seed 003's): --iree-amdaie-use-pipeline, --iree-amd-aie-mlir-aie-install-dir",
    "lower-to-aie": "Jul 2024 on: --iree-amdaie-lower-to-aie-pipeline, --iree-amdaie-tile-pipeline",
}


def _run(argv: Sequence[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


@lru_cache(maxsize=8)
def compiler_help(compile_tool: str) -> str:
    """Every option the compiler knows: --help-hidden, else --help (LLVM prints both)."""
    for flag in ("--help-hidden", "--help"):
        out = _run([compile_tool, flag])
        text = out.stdout + out.stderr
        if out.returncode == 0 and "--" in text:
            return text
    return text


def lists(help_text: str, flag: str) -> bool:
    """Whether ``flag`` (``--name``) is one of the options in ``help_text``."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_text) is not None


def lists_prefix(help_text: str, prefix: str) -> bool:
    """Whether any option in ``help_text`` starts with ``prefix`` (``--iree-amdaie-``)."""
    return re.search(rf"(?<![\w-]){re.escape(prefix)}[\w-]", help_text) is not None


def enum_values(help_text: str, flag: str) -> tuple[str, ...]:
    """The values LLVM lists under an enum option (``  =xrt   -   xrt device HAL`` lines)."""
    match = re.search(rf"(?<![\w-]){re.escape(flag)}=<[^>]*>.*?\n((?:\s+=[\w-]+.*\n?)+)", help_text)
    if not match:
        return ()
    return tuple(re.findall(r"^\s+=([\w-]+)", match.group(1), re.MULTILINE))


def era(help_text: str) -> Optional[str]:
    if lists(help_text, LOWER_TO_AIE):
        return "lower-to-aie"
    if lists(help_text, USE_PIPELINE):
        return "use-pipeline"
    return None


def compiler_drivers(help_text: str) -> tuple[str, ...]:
    """Drivers the compiler can build for: --iree-amdaie-device-hal's values; before that flag
    existed (up to fad96292) the plugin built XRT xclbins only."""
    if not lists(help_text, DEVICE_HAL):
        return ("xrt",)
    values = enum_values(help_text, DEVICE_HAL)
    return values or DRIVERS      # a help format we cannot parse: let the runtime decide


@lru_cache(maxsize=8)
def runtime_drivers(run_tool: str) -> tuple[str, ...]:
    """NPU drivers compiled into this iree-run-module (``--list_drivers``: ``name: description``)."""
    out = _run([run_tool, "--list_drivers"])
    names = {line.split(":", 1)[0].strip() for line in out.stdout.splitlines() if ":" in line}
    return tuple(d for d in DRIVERS if d in names)


@lru_cache(maxsize=16)
def devices(run_tool: str, driver: str) -> tuple[str, ...]:
    out = _run([run_tool, f"--list_devices={driver}"])
    return tuple(line.strip() for line in out.stdout.splitlines() if line.strip().startswith(f"{driver}://"))


@dataclass(frozen=True)
class Choice:
    driver: Optional[str]
    why: str = ""


def choose_driver(help_text: str, run_tool: str) -> Choice:
    """The driver to compile for and run on, or why there is none."""
    can_build = compiler_drivers(help_text)
    can_run = runtime_drivers(run_tool)
    wanted = os.environ.get(DRIVER_ENV, "").strip()
    if wanted:
        if wanted not in DRIVERS:
            return Choice(None, f"${DRIVER_ENV}={wanted!r}: expected one of {', '.join(DRIVERS)}")
        if wanted not in can_build:
            return Choice(None, f"${DRIVER_ENV}={wanted}: this iree-compile builds for {', '.join(can_build)} only")
        if wanted not in can_run:
            return Choice(None, f"${DRIVER_ENV}={wanted}: {run_tool} has no {wanted!r} HAL driver "
                                f"(it has: {', '.join(can_run) or 'no NPU driver'})")
        return Choice(wanted)
    for driver in DRIVERS:
        if driver in can_build and driver in can_run:
            return Choice(driver)
    return Choice(None, f"{run_tool} has no NPU HAL driver this iree-compile can build for (compiler: "
                        f"{', '.join(can_build)}; runtime: {', '.join(can_run) or 'none of ' + ', '.join(DRIVERS)})")
