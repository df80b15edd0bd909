"""Backends ``a2a3`` and ``a2a3sim``: the hw-native-sys pypto toolchain (not PyPI's ``pypto``).

How a case runs, the way pypto-lib runs a program: hardware/backends/pypto/program.py renders a kernel
script; the suite writes the harness's golden-data directory (``in/<name>.pt`` for every input
and scalar, ``out/<name>.pt`` for every output: the suite's reference, so the harness's own
check runs too); then ONE SUBPROCESS PER CASE runs

    <python> program.py -p {a2a3|a2a3sim} -d <device> --golden-data DIR --actual-dir DIR

with pypto-lib put first on ``PYTHONPATH`` (its ``golden`` harness; the rest of the caller's
``PYTHONPATH`` stays, where pypto or simpler may be installed). A fresh process per case because the
runtime caches per-device state (CANN's AICPU framework caches the user .so per device context;
simpler's conftest spawns a subprocess per runtime for the same reason). The device's output
comes back as ``out.npy`` and the suite compares it itself.

Verdicts from the process: killed by a signal (SIGSEGV: the a2a3sim crash of seed 002) ->
CRASH; past the case's bound -> HANG (the process group is killed); exited non-zero in the
harness's ``[RUN] compile`` stage -> COMPILE_ERROR; a kernel C++ compile that failed ->
COMPILE_ERROR too, although it happens in the ``[RUN] runtime`` stage (pypto-lib
golden/runner.py:1301-1314 runs ``ir.compile``, which ends at ptoas's C++; the runtime stage's
pypto device_runner.py:559 builds simpler's KernelCompiler, whose failures read
"<Incore|SimKernel|Orchestration> compilation failed with exit code N:", simpler
simpler_setup/kernel_compiler.py:380); a missing ptoas, ccec or g++-15 -> SKIP with the
toolchain's own words; exited without writing ``out.npy`` in any other way -> CRASH naming the
stage; ``out.npy`` written -> outputs, whatever the harness's own allclose said.

Configuration (environment):
  PYPTO_LIB_ROOT    a checkout of https://github.com/hw-native-sys/pypto-lib (required)
  PYPTO_PYTHON      the interpreter that has pypto (hw-native-sys) and simpler installed
                    (default: this one)
  PTOAS_ROOT        the extracted ptoas release (else ``ptoas`` on PATH), found as pypto finds it
  A2A3_DEVICE       device id for a2a3 (default 0): an ACL logical id, so under
                    ASCEND_RT_VISIBLE_DEVICES it names the N-th visible card
  ASCEND_HOME_PATH  CANN (a2a3 only; a2a3sim does not source CANN, as pypto-lib's CI)
  PYPTO_PROG_BUILD_DIR  where pypto writes each program's build (pypto python/pypto/ir/compile.py:
                    319-322); when set, builds stay there for ``lint-pto`` / ``--pto-cpp``,
                    otherwise they go into the case's scratch folder, removed after a clean run
                    (kept, and named in the record, when the case raised a verdict); a case
                    that raised a verdict also carries ``pto_lint``: seed 002's lint over the
                    .pto IR and C++ its build left (lint_build), when it finds anything
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.case import Case
from accel_regress.core.backend import Backend
from accel_regress.core.errors import CompileError, Crash, Hang, Unsupported
from accel_regress.backends.pypto import program

# Imported in the toolchain's interpreter: hw-native-sys pypto has pypto.language with these
# ops and PadValue; PyPI's unrelated ``pypto`` has none of them.
_PROBE = r"""
import json, sys
out = {}
try:
    import pypto
    import pypto.language as pl
    missing = [n for n in ("jit", "at", "row_expand_mul", "set_validshape", "fillpad", "PadValue")
               if not hasattr(pl, n)]
    if missing:
        out["error"] = ("the pypto found is not hw-native-sys pypto (pypto.language lacks "
                        + ", ".join(missing) + "); PyPI's 'pypto' is a different project")
    out["pypto"] = getattr(pypto, "__version__", "unknown")
except Exception as exc:
    out["error"] = "cannot import pypto.language: %s: %s" % (type(exc).__name__, exc)
try:
    import golden
    out["golden_harness"] = getattr(golden, "__file__", "?")
    if not hasattr(golden, "run_jit"):
        out["error"] = out.get("error") or "pypto-lib's golden harness has no run_jit"
except Exception as exc:
    out["error"] = out.get("error") or "cannot import pypto-lib's golden harness: %s: %s" % (type(exc).__name__, exc)
try:
    import simpler
    out["simpler"] = getattr(simpler, "__version__", "installed")
except Exception:
    out["simpler"] = "not importable"
import torch
out["torch"] = torch.__version__
print(json.dumps(out))
"""

_SUPPORTED_OP = tiles.OP


# pypto python/pypto/backend/_ptoas_locate.py:15-45: under $PTOAS_ROOT only (launcher up to v0.50,
# ptoas.sh from v0.55, bin/ptoas from v0.51); without it, PATH.
PTOAS_RELATIVE_PATHS = ("ptoas", "ptoas.sh", "bin/ptoas")
# CANN's usual homes: the toolkit layout, and the /usr/local/Ascend/latest that pypto-lib
# (models/qwen3_14b/paged_attention_cce.py:25) falls back to.
CANN_DEFAULTS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/latest")
# Toolchain pieces missing at run time (pypto pto_backend.py:210-219, simpler
# kernel_compiler.py:537, 683, 752): an environment without the tool, not a bad kernel.
_MISSING_TOOL = re.compile(r"ptoas binary not found|no executable ptoas was found|"
                           r"ccec (?:compiler|linker) not found|not found\. Please install")
_KERNEL_COMPILE_FAILED = re.compile(r"\b(\w+) compilation failed with exit code (\d+)")


def find_ptoas() -> tuple[Optional[str], str]:
    """(path or None, where it was looked for), as pypto looks for it."""
    root = os.environ.get("PTOAS_ROOT")
    if not root:
        return shutil.which("ptoas"), "PATH (PTOAS_ROOT is not set)"
    for rel in PTOAS_RELATIVE_PATHS:
        cand = os.path.join(root, rel)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand, f"PTOAS_ROOT={root}"
    return None, "PTOAS_ROOT=" + root + " (tried " + ", ".join(PTOAS_RELATIVE_PATHS) + ")"


# pypto _ptoas_locate.py:15-27: which file the release provides tells its era.
_PTOAS_ERA = {"ptoas": "shell launcher (PTOAS <= v0.50)", "bin/ptoas": "self-linked bin/ptoas (PTOAS >= v0.51)",
              "ptoas.sh": "bundled-CPython launcher (PTOAS >= v0.55)"}


@lru_cache(maxsize=4)
def ptoas_version(path: str) -> str:
    """``ptoas --version`` prints "ptoas X.Y" (PTOAS tools/ptoas/ptoas.cpp:54-56, 897 @a56b18c)."""
    try:
        p = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({type(exc).__name__})"
    lines = [l.strip() for l in (p.stdout + p.stderr).splitlines() if l.strip()]
    return lines[0][:200] if p.returncode == 0 and lines else f"unknown (exit {p.returncode})"


def ptoas_era(path: str) -> str:
    root = os.environ.get("PTOAS_ROOT")
    if root:
        rel = os.path.relpath(path, root)
        return _PTOAS_ERA.get(rel, rel)
    return "on PATH"


def _cann_root() -> Optional[Path]:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        v = os.environ.get(var)
        if v and Path(v).is_dir():
            return Path(v)
    for default in map(Path, CANN_DEFAULTS):
        if default.is_dir():
            return default
    return None


def physical_device(logical: int) -> Optional[int]:
    """The card behind an ACL logical device id: ASCEND_RT_VISIBLE_DEVICES renumbers the visible
    cards from 0 (simpler src/common/platform/include/common/acl_hal_device.h:30-42), so
    /dev/davinci<logical> is the wrong node under it. None when the id is not visible."""
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if not visible:
        return logical
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    if logical >= len(ids) or not ids[logical].isdigit():
        return None
    return int(ids[logical])


class PyptoBackend(Backend):
    platform = ""
    kind = ""
    default_timeout_s = 600.0

    # --- configuration -----------------------------------------------------------------------
    @property
    def lib_root(self) -> Optional[Path]:
        v = os.environ.get("PYPTO_LIB_ROOT")
        return Path(v) if v else None

    @property
    def python(self) -> str:
        return os.environ.get("PYPTO_PYTHON") or sys.executable

    @property
    def device(self) -> int:
        raw = os.environ.get("A2A3_DEVICE", "0")
        try:
            return int(raw)
        except ValueError:
            return -1

    def _env(self, work: Optional[Path] = None) -> dict:
        env = _child_env(str(self.lib_root))
        env.setdefault("PYPTO_GOLDEN_NUM_THREADS", "2")
        build = os.environ.get("PYPTO_PROG_BUILD_DIR")
        if build:
            # Absolute: the child runs in the scratch folder, which goes away.
            env["PYPTO_PROG_BUILD_DIR"] = str(Path(build).resolve())
        elif work is not None:
            env["PYPTO_PROG_BUILD_DIR"] = str(work / "build_output")
        return env

    # --- Backend interface -------------------------------------------------------------------
    def availability(self) -> Optional[str]:
        root = self.lib_root
        if root is None:
            return ("PYPTO_LIB_ROOT is not set: point it at a checkout of "
                    "https://github.com/hw-native-sys/pypto-lib (its golden/ harness runs pypto programs), "
                    "and PYPTO_PYTHON at an interpreter with hw-native-sys pypto and simpler installed "
                    "(not PyPI's 'pypto', a different project)")
        if not (root / "golden" / "__init__.py").is_file():
            return f"PYPTO_LIB_ROOT={root} has no golden/__init__.py: not a pypto-lib checkout"
        if shutil.which(self.python) is None and not Path(self.python).is_file():
            return f"PYPTO_PYTHON={self.python}: no such interpreter"
        probe = self._probe()
        if "error" in probe:
            return f"{probe['error']} (interpreter {self.python}, PYPTO_LIB_ROOT={root})"
        ptoas, where = find_ptoas()
        if ptoas is None:
            return (f"ptoas not found in {where}: pypto compiles every kernel with it; set PTOAS_ROOT to "
                    f"the extracted ptoas release (https://github.com/hw-native-sys/PTOAS/releases)")
        return self._device_reason()

    def _device_reason(self) -> Optional[str]:
        return None

    def _probe(self) -> dict:
        return _probe(self.python, str(self.lib_root))

    def supports_op(self, op: str) -> Optional[str]:
        if op != _SUPPORTED_OP:
            return f"{self.name} runs pypto programs for {_SUPPORTED_OP} only, not {op!r}"
        return None

    def versions(self) -> dict[str, str]:
        probe = self._probe()
        v = {k: str(probe[k]) for k in ("pypto", "simpler", "torch") if k in probe}
        v["platform"] = self.platform
        v["pypto_lib"] = str(self.lib_root)
        ptoas = find_ptoas()[0]
        v["ptoas"] = ptoas or "missing"
        if ptoas:
            v["ptoas_era"] = ptoas_era(ptoas)
            v["ptoas_version"] = ptoas_version(ptoas)
        return v

    def timeout(self, case: Case) -> float:
        return self.default_timeout_s

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        cfg = tiles.config_of(case)
        work = Path(tempfile.mkdtemp(prefix=f"accel-{self.platform}-"))
        started = time.time()
        try:
            out = self._run_in(work, case, cfg, inputs)
        except Exception as exc:
            # The build (ptoas C++, kernel_config.py) is what one lints or replays after a failure.
            if isinstance(exc, (CompileError, Crash, Hang)):
                exc.detail["work_dir"] = str(work)
                found = lint_build(Path(exc.detail.get("build_dir") or work / "build_output"), started)
                if found:
                    exc.detail["pto_lint"] = found
            else:
                shutil.rmtree(work, ignore_errors=True)
            raise
        if not os.environ.get("ACCEL_KEEP_WORK"):
            shutil.rmtree(work, ignore_errors=True)
        return out

    # --- one case ------------------------------------------------------------------------------
    def _run_in(self, work: Path, case: Case, cfg: tiles.TileConfig, inputs) -> dict[str, np.ndarray]:
        import torch
        _, u, sub, _ = tiles.DTYPES[cfg.dtype]
        script = work / "program.py"
        _write_text(script, program.render(cfg, case.id, rtol=u, atol=sub))
        data = work / "data"
        tdtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[cfg.dtype]
        ref = tiles.tile_reference(inputs, cfg)
        valid_rows = cfg.valid_rows if cfg.valid_rows is not None else cfg.valid_row
        ins = {"gated": _tensor(inputs["gated"], tdtype), "scale": _tensor(inputs["scale"], tdtype),
               "valid_rows": torch.tensor(valid_rows, dtype=torch.int32)}
        outs = {"out": _tensor(ref, tdtype)}
        if cfg.variant == "split":
            outs["scratch"] = _tensor(tiles.round_to(tiles.row_expand_mul(inputs["gated"], inputs["scale"]),
                                                     cfg.dtype), tdtype)
        for name, t in ins.items():
            _save_pt(data / "in" / f"{name}.pt", t)
        for name, t in outs.items():
            _save_pt(data / "out" / f"{name}.pt", t)
        actual = work / "actual"
        argv = [self.python, str(script), "-p", self.platform, "-d", str(self.device),
                "--golden-data", str(data), "--actual-dir", str(actual)]
        env = self._env(work)
        log, rc, elapsed, timed_out = _run(argv, env, work, self.timeout(case))
        detail = {"argv": " ".join(argv), "exit": rc, "log": log[-6000:], "seconds": round(elapsed, 2),
                  "build_dir": env["PYPTO_PROG_BUILD_DIR"]}
        stage = _last_stage(log)
        if timed_out:
            raise Hang(f"{self.platform}: no completion within {self.timeout(case):.0f} s "
                       f"(last harness stage: {stage or 'none'})", stage="run", detail=detail)
        if rc < 0:
            sig = signal.Signals(-rc).name if -rc in signal.Signals._value2member_map_ else str(-rc)
            raise Crash(f"{self.platform}: the program died with {sig} during [RUN] {stage or 'start-up'}",
                        stage="compile" if stage == "compile" else "run", detail=detail)
        out_file = actual / "out.npy"
        if not out_file.is_file():
            missing = _MISSING_TOOL.search(log)
            if missing:
                raise Unsupported(f"{self.platform}: toolchain incomplete: {_line_at(log, missing.start())}")
            failed = _KERNEL_COMPILE_FAILED.search(log)
            if failed:
                diag = _compiler_diagnostic(log, failed.end())
                detail["diagnostic"] = diag
                raise CompileError(f"{self.platform}: {failed.group(1)} compilation failed (exit {failed.group(2)}) "
                                   f"in [RUN] {stage or 'start-up'}: {diag}", detail=detail)
            if stage == "compile":
                diag = _last_error_line(log)
                detail["diagnostic"] = diag
                raise CompileError(f"{self.platform}: pypto compile failed (exit {rc}): {diag}", detail=detail)
            if rc == 0:
                raise Crash(f"{self.platform}: the program exited 0 but wrote no output (no validate stage ran)",
                            detail=detail)
            raise Crash(f"{self.platform}: the program exited {rc} in stage [RUN] {stage or 'start-up'} "
                        f"without an output", detail=detail)
        try:
            got = np.load(out_file, allow_pickle=False)
        except ValueError as exc:
            raise Crash(f"{self.platform}: {out_file} is not a readable .npy: {exc}", detail=detail) from None
        if got.shape != (cfg.rows, cfg.cols):
            raise Crash(f"{self.platform}: {out_file} has shape {got.shape}, expected {(cfg.rows, cfg.cols)}",
                        detail=detail)
        return {"out": np.asarray(got, np.float32)}


def lint_build(build_dir: Path, since: float) -> list[str]:
    """Seed 002's lint (lint.py, lint_ir.py) over what a case's build left: pypto writes
    ``<build>/<program>_<timestamp>/ptoas/<unit>.pto`` (the IR, pypto
    python/pypto/backend/pto_backend.py:1210-1215 @e2d0f78a) and ``kernels/<core>/*.cpp``. Only
    program folders written since ``since``: PYPTO_PROG_BUILD_DIR collects every case's. Findings
    as text; input the lint cannot read is one line saying so, never an exception."""
    from accel_regress.backends.pypto import lint
    if not build_dir.is_dir():
        return []
    fresh = [d for d in sorted(build_dir.iterdir()) if d.is_dir() and d.stat().st_mtime >= since - 1]
    if not fresh:
        return []
    try:
        findings, _ = lint.lint_paths(fresh)
    except lint.LintInputError as exc:
        return [f"lint-pto could not read the build: {exc}"]
    return [f.describe() for f in findings]


class A2a3Backend(PyptoBackend):
    platform = "a2a3"
    kind = "hardware"
    description = "pypto programs on an Ascend a2a3 NPU (hw-native-sys pypto + simpler + CANN)"
    device_resource = "a2a3"

    def _device_reason(self) -> Optional[str]:
        if self.device < 0:
            return f"A2A3_DEVICE={os.environ.get('A2A3_DEVICE')!r} is not an integer device id"
        if _cann_root() is None:
            return ("CANN not found: set ASCEND_HOME_PATH (source $CANN_ROOT/set_env.sh) or install it under "
                    + " or ".join(CANN_DEFAULTS))
        card = physical_device(self.device)
        if card is None:
            return (f"A2A3_DEVICE={self.device} is not visible: ASCEND_RT_VISIBLE_DEVICES="
                    f"{os.environ.get('ASCEND_RT_VISIBLE_DEVICES')!r} lists fewer cards")
        dev = Path(f"/dev/davinci{card}")
        if not dev.exists():
            via = f" (logical {self.device} through ASCEND_RT_VISIBLE_DEVICES)" if card != self.device else ""
            return f"no Ascend NPU device {dev}{via}; a2a3 needs an a2a3 board"
        return None

    def versions(self) -> dict[str, str]:
        v = super().versions()
        root = _cann_root()
        v["cann"] = str(root.resolve()) if root else "missing"
        v["device"] = str(self.device)
        card = physical_device(self.device)
        if card is not None and card != self.device:
            v["device_card"] = str(card)
        return v


class A2a3SimBackend(PyptoBackend):
    platform = "a2a3sim"
    kind = "simulator"
    description = "pypto programs on the a2a3 simulator (hw-native-sys pypto + simpler; no CANN needed)"


# --- helpers ---------------------------------------------------------------------------------

def _child_env(lib_root: str) -> dict:
    """pypto-lib first on PYTHONPATH (its ``golden`` wins over the suite's), the rest kept."""
    env = dict(os.environ)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != lib_root]
    env["PYTHONPATH"] = os.pathsep.join([lib_root] + rest)
    return env


@lru_cache(maxsize=8)
def _probe(python: str, lib_root: str) -> dict:
    env = _child_env(lib_root)
    try:
        p = subprocess.run([python, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120,
                           cwd=lib_root)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"probing {python} failed: {exc}"}
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"probing {python} failed (exit {p.returncode}): {tail}"}
    try:
        return json.loads(lines[-1])
    except ValueError:
        return {"error": f"probing {python}: unreadable answer {lines[-1][:200]!r}"}


def _tensor(a, dtype):
    import torch
    return torch.from_numpy(np.ascontiguousarray(np.asarray(a, np.float32))).to(dtype)


def _save_pt(path: Path, t) -> None:
    """The harness's file format (torch.save; it loads with weights_only=True), written atomically."""
    import torch
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(t, tmp)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _run(argv, env, cwd: Path, timeout_s: float) -> tuple[str, int, float, bool]:
    """Run in its own process group; on timeout kill the whole group (simulator children too)."""
    start = time.monotonic()
    with open(cwd / "log.txt", "w+b") as log:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        timed_out = False
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = proc.wait()
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
    return text, rc, time.monotonic() - start, timed_out


def _last_error_line(log: str) -> str:
    """The last non-blank line of the log that is not a traceback frame: the error itself."""
    lines = [l.strip() for l in log.splitlines() if l.strip()]
    for line in reversed(lines):
        if not line.startswith(("File ", "^", "[RUN]", "~")):
            return line[:500]
    return "no diagnostic printed"


def _line_at(log: str, pos: int) -> str:
    start = log.rfind("\n", 0, pos) + 1
    end = log.find("\n", pos)
    return log[start:end if end >= 0 else len(log)].strip()[:500]


def _compiler_diagnostic(log: str, pos: int) -> str:
    """The compiler's first error line after simpler's "compilation failed" message."""
    tail = [l.strip() for l in log[pos:].splitlines() if l.strip()]
    for line in tail:
        if re.search(r"\berror\b", line, re.I):
            return line[:500]
    return (tail[0] if tail else "no diagnostic printed")[:500]


def _last_stage(log: str) -> Optional[str]:
    """The harness prints "[RUN] <stage> ..." on entering a stage (pypto-lib golden/runner.py
    _Stage) and "[RUN] <stage> done" on leaving it, also when the stage raised; so the stage a
    failed run died in is the last one entered."""
    stage = None
    for line in log.splitlines():
        line = line.strip()
        if line.startswith("[RUN] ") and line.endswith(" ..."):
            stage = line[6:-4]
    return stage
