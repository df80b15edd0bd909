"""One bisect step: the case run by pytest in a given environment, and its verdict.

The step is the suite's own run of that one test (``python -m pytest NODEID --hw BACKEND
--golden-seed N --ignore-expectations``), so the case runs isolated as usual (hangs and crashes
are verdicts) on the same inputs; the environment is put in front (``PYTHONPATH`` for its Python
packages, ``PATH`` for its executables). The verdict, stage, message and the versions the backend
recorded come from the run's results.json; a run that records no result for the test (a node id
that does not exist in this checkout, pytest itself failing) is the verdict ``ERROR`` with the
tail of pytest's output.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

ERROR = "ERROR"               # the step could not run the test (no result recorded, pytest timed out)
BUILD_ERROR = "BUILD_ERROR"   # the step's environment could not be built
NOT_A_VERDICT = (ERROR, BUILD_ERROR, "SKIP")   # never good or bad: a bisect skips such a step
# A -m expression true for every test that names `large` and `input_classes`: the suite then
# deselects neither, and a simulator runs the named case whatever its default-run budget
# (accel_regress/plugin/options.py _markexpr, core/budget.py large_on).
EVERY_TEST = "large or input_classes or not (large or input_classes)"
_COMMIT = re.compile(r"@\s*([0-9a-f]{40})\b")


@dataclass
class Outcome:
    version: str
    verdict: str                 # PASS, FAIL, HANG, CRASH, COMPILE_ERROR, SKIP, ERROR, or BUILD_ERROR
    message: str = ""
    stage: Optional[str] = None
    seconds: float = 0.0         # the run (not the build)
    build_s: float = 0.0
    env_cached: bool = False
    versions: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    case: Optional[dict] = None  # the case the test ran (results.json's runs[0].case), when it ran one

    def first_line(self, width: int = 200) -> str:
        """The message's first line, and the census's worst elements when it has them."""
        lines = [ln.strip() for ln in self.message.splitlines() if ln.strip()]
        line = " | ".join(lines[:1] + [ln for ln in lines[1:] if ln.startswith("Worst:")][:1])
        return line if len(line) <= width else line[: width - 3] + "..."

    def commits(self) -> dict:
        """``{versions key: commit}`` for every recorded version that names a commit (IREE's
        ``iree-compile --version``: '3.0.0rc20241118 @ 29c451b0...')."""
        return {k: m.group(1) for k, v in self.versions.items() if (m := _COMMIT.search(str(v)))}

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Outcome":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _die_with_parent() -> None:
    """In the step's pytest: be killed when the bisect that started it dies (a killed bisect leaves
    no step running on)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except Exception:
        pass


def backend_of(nodeid: str, known: Sequence[str]) -> Optional[str]:
    """The backend a test id carries (``test_x[iree-cpu-...]`` -> iree-cpu), the longest match."""
    params = nodeid.rsplit("[", 1)[1] if nodeid.endswith("]") and "[" in nodeid else ""
    hits = [b for b in known if params == b or params.startswith(b + "-")]
    return max(hits, key=len) if hits else None


def run_step(version: str, nodeid: str, *, hw: Optional[str], seed: int, python_path: Sequence[Path] = (),
             bin_path: Sequence[Path] = (), cwd: Optional[Path] = None, timeout_s: float = 1800.0,
             extra_env: Optional[dict] = None) -> Outcome:
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, python_path), *filter(None, [env.get("PYTHONPATH")])])
    if bin_path:
        env["PATH"] = os.pathsep.join([*map(str, bin_path), env.get("PATH", "")])
    env.update(extra_env or {})
    with tempfile.TemporaryDirectory(prefix="accel-bisect-step-") as reports:
        argv = [sys.executable, "-m", "pytest", nodeid, "-q", "-p", "no:cacheprovider", "--ignore-expectations",
                "--golden-seed", str(seed), "--report-dir", reports, f"--rootdir={cwd or os.getcwd()}", "-m", EVERY_TEST,
                # A step is not a run of the user's suite: its PASS / FAIL sequence in their history
                # would read as a flaky test (issue 34 item 4).
                "--history", "none"]
        if hw:
            argv += ["--hw", hw]
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=cwd, env=env,
                                  stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
            tail = (proc.stdout + proc.stderr)[-3000:]
        except subprocess.TimeoutExpired:
            return Outcome(version, ERROR, f"the step's pytest run did not finish within {timeout_s:.0f} s",
                           seconds=time.perf_counter() - start)
        seconds = time.perf_counter() - start
        try:
            doc = json.loads((Path(reports) / "results.json").read_text())
            cases = [c for c in doc.get("cases", []) if c.get("nodeid") == nodeid]
            if not cases:     # an id relative to another root: the one case whose id ends with it
                cases = [c for c in doc.get("cases", []) if str(c.get("nodeid", "")).endswith("/" + nodeid)][:1]
        except (OSError, ValueError):
            cases = []
    if not cases:
        return Outcome(version, ERROR, f"pytest (exit {proc.returncode}) recorded no result for {nodeid}: "
                       + " | ".join(ln for ln in tail.strip().splitlines()[-6:]), seconds=seconds)
    case = cases[0]
    runs = case.get("runs") if isinstance(case.get("runs"), list) else []
    ran = runs[0].get("case") if runs and isinstance(runs[0], dict) else None
    return Outcome(version, str(case.get("verdict")), str(case.get("message") or ""), case.get("stage"),
                   seconds, versions={k: str(v) for k, v in (case.get("versions") or {}).items()}, case=ran)
