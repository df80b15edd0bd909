"""Backends ``a2a3`` and ``a2a3sim``: the hw-native-sys pypto toolchain (not PyPI's ``pypto``).

How a case runs, the way pypto-lib runs a program: hardware/pypto/program.py renders a kernel
script; the suite writes the harness's golden-data directory (``in/<name>.pt`` for every input
and scalar, ``out/<name>.pt`` for every output: the suite's reference, so the harness's own
check runs too); then ONE SUBPROCESS PER CASE runs

    <python> program.py -p {a2a3|a2a3sim} -d <device> --golden-data DIR --actual-dir DIR

with ``PYTHONPATH=<pypto-lib>`` (its ``golden`` harness). A fresh process per case because the
runtime caches per-device state (CANN's AICPU framework caches the user .so per device context;
simpler's conftest spawns a subprocess per runtime for the same reason). The device's output
comes back as ``out.npy`` and the suite compares it itself.

Verdicts from the process: killed by a signal (SIGSEGV: the a2a3sim crash of seed 002) ->
CRASH; past the case's bound -> HANG (the process group is killed); exited non-zero in the
harness's ``[RUN] compile`` stage -> COMPILE_ERROR; exited without writing ``out.npy`` in any
later stage -> CRASH naming the stage; ``out.npy`` written -> outputs, whatever the harness's
own allclose said.

Configuration (environment):
  PYPTO_LIB_ROOT    a checkout of https://github.com/hw-native-sys/pypto-lib (required)
  PYPTO_PYTHON      the interpreter that has pypto (hw-native-sys) and simpler installed
                    (default: this one)
  A2A3_DEVICE       device id for a2a3 (default 0)
  ASCEND_HOME_PATH  CANN (a2a3 only; a2a3sim does not source CANN, as pypto-lib's CI)
"""
from __future__ import annotations

import json
import os
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

from golden import tiles
from golden.case import Case
from hardware.backend import Backend
from hardware.errors import CompileError, Crash, Hang
from hardware.pypto import program

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


def _cann_root() -> Optional[Path]:
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        v = os.environ.get(var)
        if v and Path(v).is_dir():
            return Path(v)
    default = Path("/usr/local/Ascend/ascend-toolkit/latest")
    return default if default.is_dir() else None


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

    def _env(self) -> dict:
        env = dict(os.environ)
        # Only pypto-lib on the path: its ``golden`` package must not meet the suite's.
        env["PYTHONPATH"] = str(self.lib_root)
        env.setdefault("PYPTO_GOLDEN_NUM_THREADS", "2")
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
        return v

    def timeout(self, case: Case) -> float:
        return self.default_timeout_s

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        cfg = tiles.config_of(case)
        work = Path(tempfile.mkdtemp(prefix=f"accel-{self.platform}-"))
        try:
            return self._run_in(work, case, cfg, inputs)
        finally:
            if not os.environ.get("ACCEL_KEEP_WORK"):
                shutil.rmtree(work, ignore_errors=True)

    # --- one case ------------------------------------------------------------------------------
    def _run_in(self, work: Path, case: Case, cfg: tiles.TileConfig, inputs) -> dict[str, np.ndarray]:
        import torch
        _, u, sub, _ = tiles.DTYPES[cfg.dtype]
        script = work / "program.py"
        _write_text(script, program.render(cfg, case.id, rtol=u, atol=sub))
        data = work / "data"
        tdtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[cfg.dtype]
        ref = tiles.reference(inputs, cfg)
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
        log, rc, elapsed, timed_out = _run(argv, self._env(), work, self.timeout(case))
        detail = {"argv": " ".join(argv), "exit": rc, "log": log[-6000:], "seconds": round(elapsed, 2)}
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


class A2a3Backend(PyptoBackend):
    platform = "a2a3"
    kind = "hardware"
    description = "pypto programs on an Ascend a2a3 NPU (hw-native-sys pypto + simpler + CANN)"
    device_resource = "a2a3"

    def _device_reason(self) -> Optional[str]:
        if self.device < 0:
            return f"A2A3_DEVICE={os.environ.get('A2A3_DEVICE')!r} is not an integer device id"
        if _cann_root() is None:
            return ("CANN not found: set ASCEND_HOME_PATH (source $CANN_ROOT/set_env.sh) or install the "
                    "Ascend toolkit under /usr/local/Ascend/ascend-toolkit/latest")
        dev = Path(f"/dev/davinci{self.device}")
        if not dev.exists():
            return f"no Ascend NPU device {dev} (A2A3_DEVICE={self.device}); a2a3 needs an a2a3 board"
        return None

    def versions(self) -> dict[str, str]:
        v = super().versions()
        root = _cann_root()
        v["cann"] = str(root.resolve()) if root else "missing"
        v["device"] = str(self.device)
        return v


class A2a3SimBackend(PyptoBackend):
    platform = "a2a3sim"
    kind = "simulator"
    description = "pypto programs on the a2a3 simulator (hw-native-sys pypto + simpler; no CANN needed)"


# --- helpers ---------------------------------------------------------------------------------

@lru_cache(maxsize=8)
def _probe(python: str, lib_root: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = lib_root
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
