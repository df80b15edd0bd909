"""``iree-amd-aie``: IREE with the AMD AIE compiler plugin (nod-ai/iree-amd-aie) and one of its NPU
HAL drivers, on an AMD NPU runner. Seed 003's stack.

The plugin changed its flags and driver names over time; hardware/backends/iree_amd_aie/toolchain.py reads
which era the installed compiler speaks (from its ``--help-hidden``) and which drivers both tools
have, and this backend speaks that:
- compile, ``lower-to-aie`` era (July 2024 on), as build_tools/ci/cpu_comparison/run.py does:
  ``--iree-hal-target-backends=amd-aie``, ``--iree-amdaie-target-device`` (npu1_4col = Phoenix,
  npu4 = Strix), ``--iree-amdaie-lower-to-aie-pipeline``, ``--iree-amdaie-tile-pipeline``,
  ``--iree-amd-aie-peano-install-dir``, ``--iree-amd-aie-install-dir``,
  ``--iree-amdaie-device-hal=<driver>``, ``--iree-hal-memoization=false
  --iree-hal-indirect-command-buffers=false``: each only when the compiler lists it;
- compile, ``use-pipeline`` era (the compilers of seed 003, early 2024), as
  build_tools/ci/run_matmul_test.sh did then: ``--iree-amdaie-use-pipeline=pad-pack|pack-peel``,
  ``--iree-amd-aie-peano-install-dir``, ``--iree-amd-aie-mlir-aie-install-dir``
  (and ``--iree-amd-aie-vitis-install-dir`` when given);
- run: that build's ``iree-run-module --device=<driver>`` (amdxdna, earlier xrt-lite, and xrt in
  the oldest builds) in a subprocess with the case's bound, so a hung NPU run is killed and
  reported as HANG, a dead one as CRASH; a compiler that rejects the program or asserts (seed
  003's two errors) is COMPILE_ERROR with its diagnostic.

Configuration (environment):
  ACCEL_IREE_AMD_AIE_INSTALL   IREE install dir built with the plugin (bin/iree-compile, bin/iree-run-module)
  ACCEL_PEANO_INSTALL_DIR      Peano (llvm-aie) install dir (falls back to $PEANO_INSTALL_DIR)
  ACCEL_AMDAIE_DEVICE_HAL      amdxdna, xrt-lite or xrt (default: the newest both tools have)
  ACCEL_AMDAIE_TARGET_DEVICE   npu1_4col (default), npu1, npu4, ...          (lower-to-aie era)
  ACCEL_AMDAIE_LOWER_TO_AIE    objectFifo (default) or air                  (lower-to-aie era)
  ACCEL_AMDAIE_TILE_PIPELINE   pack-peel (default), pack-peel-4-level-tiling (lower-to-aie era)
  ACCEL_AMDAIE_USE_PIPELINE    pad-pack (default, seed 003's) or pack-peel  (use-pipeline era)
  ACCEL_MLIR_AIE_INSTALL_DIR   mlir-aie install dir (falls back to $MLIR_AIE_INSTALL_DIR; use-pipeline era)
  ACCEL_VITIS_INSTALL_DIR      Vitis install dir, passed when the compiler takes it (optional)
  ACCEL_AMDAIE_RUN_TIMEOUT_S   bound for one NPU run (default 120 s + 1 s per 1e9 multiply-adds)
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import CompileError, Crash, Hang, Unsupported
from accel_regress.toolchains.iree import compiler
from accel_regress.toolchains.iree.program import IREE_PROGRAMS, Program, program_for
from accel_regress.backends.iree_amd_aie import toolchain

TARGET_BACKEND = "amd-aie"
# The plugin binds its options (AMDAIEOptions::bindOptions, iree-amd-aie/Target/AIETarget.h) with
# the target it registers: an iree-compile without them has no amd-aie target.
PLUGIN_OPTION_PREFIX = "--iree-amdaie-"
BUILD_HINT = ("build IREE with the plugin (nod-ai/iree-amd-aie README: cmake -S third_party/iree "
              "-DIREE_CMAKE_PLUGIN_PATHS=<iree-amd-aie> ...; install) and set ACCEL_IREE_AMD_AIE_INSTALL "
              "to the install dir")
DIAGNOSTIC_CHARS = 20000
COMPILE_TIMEOUT_S = 1800.0     # the AIR pipeline took minutes on 2432^3 in 2024

# numpy dtype name -> IREE element type for --input=SHAPExTYPE=@file
ELEMENT_TYPES = {"bfloat16": "bf16", "float32": "f32", "float16": "f16", "int8": "i8", "int16": "i16",
                 "int32": "i32", "uint8": "ui8", "float64": "f64", "int64": "i64"}


def install_dir() -> Optional[Path]:
    env = os.environ.get("ACCEL_IREE_AMD_AIE_INSTALL")
    return Path(env) if env else None


def tool(name: str) -> Optional[str]:
    """``bin/<name>`` of the plugin install; without one, whatever is on PATH (checked later)."""
    root = install_dir()
    if root is not None:
        path = root / "bin" / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name)


def peano_dir() -> Optional[str]:
    return os.environ.get("ACCEL_PEANO_INSTALL_DIR") or os.environ.get("PEANO_INSTALL_DIR") or None


def mlir_aie_dir() -> Optional[str]:
    return os.environ.get("ACCEL_MLIR_AIE_INSTALL_DIR") or os.environ.get("MLIR_AIE_INSTALL_DIR") or None


def settings(era: Optional[str] = None) -> dict[str, str]:
    """The pipeline settings the given compiler era takes (both eras' when it is not known)."""
    out = {}
    if era in (None, "lower-to-aie"):
        out.update(target_device=os.environ.get("ACCEL_AMDAIE_TARGET_DEVICE", "npu1_4col"),
                   lower_to_aie=os.environ.get("ACCEL_AMDAIE_LOWER_TO_AIE", "objectFifo"),
                   tile_pipeline=os.environ.get("ACCEL_AMDAIE_TILE_PIPELINE", "pack-peel"))
    if era in (None, "use-pipeline"):
        out["use_pipeline"] = os.environ.get("ACCEL_AMDAIE_USE_PIPELINE", "pad-pack")
    return out


def _run(argv: Sequence[str], timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)


def _cache_root() -> Path:
    """Beside the shared IREE cache (a user cache folder, not the checkout or site-packages)."""
    env = os.environ.get("ACCEL_IREE_AMD_AIE_CACHE")
    return Path(env) if env else compiler.cache_root().parent / "iree-amd-aie"


class IreeAmdAieBackend(Backend):
    name = "iree-amd-aie"
    kind = "hardware"
    description = ("iree-amd-aie: IREE + the AMD AIE compiler plugin (amd-aie target), run by its NPU HAL "
                   "driver (amdxdna, xrt-lite or xrt) on an AMD NPU")
    default_timeout_s = 120.0
    program_kinds = (IREE_PROGRAMS,)
    device_resource = "npu"

    # --- what the installed build speaks --------------------------------------------------------

    def _help(self) -> str:
        return toolchain.compiler_help(tool("iree-compile"))

    def era(self) -> Optional[str]:
        return toolchain.era(self._help())

    def driver(self) -> str:
        """The HAL driver this run compiles for and runs on (availability() has checked it)."""
        choice = toolchain.choose_driver(self._help(), tool("iree-run-module"))
        if choice.driver is None:
            raise Unsupported(choice.why)
        return choice.driver

    # --- availability ----------------------------------------------------------------------------

    def availability(self) -> Optional[str]:
        root = install_dir()
        compile_tool, run_tool = tool("iree-compile"), tool("iree-run-module")
        where = f"ACCEL_IREE_AMD_AIE_INSTALL={root}" if root else "PATH"
        if compile_tool is None:
            return f"no iree-compile in {where}: {BUILD_HINT}"
        # One start of iree-compile (its option list, which versions() and driver() read too):
        # the plugin that adds the amd-aie target adds its --iree-amdaie-* options with it.
        try:
            help_text = toolchain.compiler_help(compile_tool)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{compile_tool} could not be asked what it supports ({exc}): {BUILD_HINT}"
        if not toolchain.lists_prefix(help_text, PLUGIN_OPTION_PREFIX):
            return (f"{compile_tool} (from {where}) has no '{TARGET_BACKEND}' target backend (its --help-hidden "
                    f"lists no {PLUGIN_OPTION_PREFIX}* option); the PyPI iree-base-compiler never does: {BUILD_HINT}")
        era = toolchain.era(help_text)
        if era is None:
            return (f"{compile_tool} lists neither {toolchain.LOWER_TO_AIE} (July 2024 on) nor "
                    f"{toolchain.USE_PIPELINE} (early 2024) in --help-hidden: cannot tell which flags it takes")
        if not peano_dir() or not Path(peano_dir()).is_dir():
            return ("no Peano (llvm-aie) install: set ACCEL_PEANO_INSTALL_DIR (or PEANO_INSTALL_DIR) to it "
                    "(pip install llvm-aie from https://github.com/Xilinx/llvm-aie/releases, or a build)")
        if era == "use-pipeline" and not (mlir_aie_dir() and Path(mlir_aie_dir()).is_dir()):
            return (f"this iree-compile is of the {era} era ({toolchain.ERAS[era]}), which needs an mlir-aie "
                    "install: set ACCEL_MLIR_AIE_INSTALL_DIR (or MLIR_AIE_INSTALL_DIR)")
        if run_tool is None:
            return f"no iree-run-module next to the plugin's iree-compile ({where}): {BUILD_HINT}"
        try:
            choice = toolchain.choose_driver(help_text, run_tool)
            if choice.driver is None:
                return (f"{choice.why}: rebuild the runtime with the plugin's driver "
                        "(-DIREE_EXTERNAL_HAL_DRIVERS=amdxdna, or xrt with XRT in /opt/xilinx/xrt)")
            found = toolchain.devices(run_tool, choice.driver)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{run_tool} --list_drivers / --list_devices failed: {exc}"
        if not found:
            return (f"the {choice.driver} HAL driver sees no NPU ({run_tool} --list_devices={choice.driver} lists "
                    "none): needs an AMD Ryzen AI machine with the amdxdna kernel driver (amd/xdna-driver)")
        return None

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(IREE_PROGRAMS, op)

    def versions(self) -> dict[str, str]:
        compile_tool = tool("iree-compile")
        out = {"iree-compile": compile_tool or "missing", "peano": peano_dir() or "missing"}
        if not compile_tool:
            return out
        out["iree-compiler"] = compiler.compiler_version(compile_tool)
        try:
            era = self.era()
        except (OSError, subprocess.SubprocessError) as exc:
            return dict(out, **{"iree-amd-aie-era": f"unknown ({type(exc).__name__})"})
        out["iree-amd-aie-era"] = f"{era}: {toolchain.ERAS[era]}" if era else "unknown (neither pipeline flag listed)"
        out.update(settings(era))
        if era == "use-pipeline":
            out["mlir-aie"] = mlir_aie_dir() or "missing"
        run_tool = tool("iree-run-module")
        if run_tool:
            try:
                choice = toolchain.choose_driver(self._help(), run_tool)
                out["hal-driver"] = choice.driver or f"none ({choice.why})"
                if choice.driver:
                    out["npu-devices"] = ", ".join(toolchain.devices(run_tool, choice.driver)) or "none"
            except (OSError, subprocess.SubprocessError):
                pass
        return out

    def timeout(self, case: Case) -> float:
        env = os.environ.get("ACCEL_AMDAIE_RUN_TIMEOUT_S")
        if env:
            return float(env)
        p = case.params
        if all(k in p for k in ("M", "K", "N")):
            # An NPU does ~1e12 bf16 MAC/s; bound at 1e9 MAC/s plus load and transfer time.
            return self.default_timeout_s + p["M"] * p["K"] * p["N"] / 1e9
        return self.default_timeout_s

    # --- compile ---------------------------------------------------------------------------------

    def compile_flags(self) -> list[str]:
        """The flags of the installed compiler's era, each one only if it lists it."""
        help_text, era = self._help(), self.era()
        listed = lambda flag: toolchain.lists(help_text, flag)   # noqa: E731
        flags = [f"--iree-hal-target-backends={TARGET_BACKEND}"]
        if era == "use-pipeline":
            s = settings(era)
            flags.append(f"{toolchain.USE_PIPELINE}={s['use_pipeline']}")
        else:
            s = settings(era)
            flags += [f"{toolchain.LOWER_TO_AIE}={s['lower_to_aie']}", f"{toolchain.TILE_PIPELINE}={s['tile_pipeline']}"]
            if listed(toolchain.TARGET_DEVICE):
                flags.append(f"{toolchain.TARGET_DEVICE}={s['target_device']}")
        flags.append(f"--iree-amd-aie-peano-install-dir={peano_dir()}")
        if listed(toolchain.INSTALL_DIR) and install_dir() is not None:
            flags.append(f"{toolchain.INSTALL_DIR}={install_dir()}")
        elif listed(toolchain.MLIR_AIE_INSTALL_DIR) and mlir_aie_dir():
            flags.append(f"{toolchain.MLIR_AIE_INSTALL_DIR}={mlir_aie_dir()}")
        vitis = os.environ.get("ACCEL_VITIS_INSTALL_DIR")
        if vitis and listed(toolchain.VITIS_INSTALL_DIR):
            flags.append(f"{toolchain.VITIS_INSTALL_DIR}={vitis}")
        if listed(toolchain.DEVICE_HAL):
            flags.append(f"{toolchain.DEVICE_HAL}={self.driver()}")
        flags += [f for f in ("--iree-hal-memoization=false", "--iree-hal-indirect-command-buffers=false")
                  if listed(f.split("=", 1)[0])]
        return flags

    def compile(self, case: Case, program: Program) -> Path:
        """The .vmfb of ``program`` (cached by program text, flags and compiler version)."""
        flags = [*self.compile_flags(), "--iree-hal-dump-executable-files-to={out}/executables"]
        return compiler.compile_cached(program.mlir, flags, timeout_s=COMPILE_TIMEOUT_S, name=case.id,
                                       tool=tool("iree-compile"), root=_cache_root(),
                                       on_error=_compile_error).vmfb

    # --- run -------------------------------------------------------------------------------------

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        program = program_for(case)
        missing = [n for n in program.inputs if n not in inputs]
        if missing:
            raise Unsupported(f"inputs lack {', '.join(missing)} that the program of {case.op} takes")
        vmfb = self.compile(case, program)
        bound = self.timeout(case)
        with tempfile.TemporaryDirectory(prefix="accel-amdaie-") as work:
            driver = self.driver()
            argv = [tool("iree-run-module"), f"--device={driver}", f"--module={vmfb}", f"--function={program.entry}"]
            for name in program.inputs:
                argv.append(f"--input={_input_spec(name, np.ascontiguousarray(inputs[name]), Path(work))}")
            outs = [Path(work) / f"{name}.npy" for name in program.outputs]
            argv += [f"--output=@{p}" for p in outs]
            start = time.perf_counter()
            try:
                proc = _run(argv, timeout=bound)
            except subprocess.TimeoutExpired as exc:
                raise Hang(f"{program.entry} on the NPU did not complete within {bound:.0f} s (iree-run-module killed)",
                           stage="run", detail={"argv": " ".join(argv), "log": _text(exc.stderr)[-4000:]}) from None
            if proc.returncode != 0:
                how = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
                       else f"exit {proc.returncode}")
                diag = (proc.stderr or proc.stdout or "").strip()
                raise Crash(f"iree-run-module --device={driver} failed ({how}) after "
                            f"{time.perf_counter() - start:.1f} s: {_first_error(diag)}",
                            stage="run", detail={"argv": " ".join(argv), "log": diag[-DIAGNOSTIC_CHARS:]})
            result = {}
            for name, path in zip(program.outputs, outs):
                if not path.is_file():
                    raise Crash(f"iree-run-module wrote no output {name!r} ({path.name})", stage="run")
                result[name] = np.load(path, allow_pickle=False)
            return result


def _input_spec(name: str, arr: np.ndarray, work: Path) -> str:
    """``SHAPExTYPE=@file`` with the raw bytes: IREE tools read those for any element type
    (bf16 included, which a .npy header cannot name)."""
    etype = ELEMENT_TYPES.get(arr.dtype.name)
    if etype is None:
        raise Unsupported(f"input {name!r} has dtype {arr.dtype.name}, which the IREE tools take no raw form of")
    path = work / f"{name}.bin"
    arr.tofile(path)
    return "x".join(str(d) for d in arr.shape) + f"x{etype}=@{path}"


def _first_error(diag: str) -> str:
    lines = diag.splitlines()
    pick = next((ln for ln in lines if "Assertion" in ln or "error:" in ln), None)
    return (pick or (lines[0] if lines else "no diagnostic")).strip()[:400]


def _compile_error(proc: subprocess.CompletedProcess, argv, name: str) -> CompileError:
    diag = (proc.stderr or proc.stdout or "").strip()
    how = (f"aborted by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
           else f"exit {proc.returncode}")
    return CompileError(f"iree-compile (amd-aie) failed ({how}) on {name}: {_first_error(diag)}",
                        stage="compile", detail={"diagnostic": diag[-DIAGNOSTIC_CHARS:], "argv": " ".join(argv)})


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
