"""Running the FireSim manager (``firesim <task> -c <config>``) under a wall-clock bound.

The manager has no bound of its own and no pass/fail exit status for the target: runworkload polls
until every simulation ends (deploy/runtools/firesim_topology_with_passes.py:871-). It runs in
its own process group so that the bound can stop it and everything it started; its output goes
to a file, not a pipe, so a chatty manager can never block on a full pipe.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional


@dataclass
class ManagerRun:
    argv: list
    returncode: Optional[int]     # None when the bound stopped it
    timed_out: bool
    seconds: float
    log: Path

    def tail(self, chars: int = 4000) -> str:
        try:
            data = self.log.read_bytes()
        except OSError:
            return ""
        return data[-chars:].decode("utf-8", errors="replace")


def _stop(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def run(executable: str, task: str, config: Path, *, cwd: Path, bound_s: float, log: Path,
        env: Optional[Mapping[str, str]] = None) -> ManagerRun:
    argv = [executable, task, "-c", str(config)]
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(log, "ab") as out:
        out.write(f"$ {' '.join(argv)}  (cwd {cwd}, bound {bound_s:.0f} s)\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, env=dict(env) if env is not None else None)
        try:
            code: Optional[int] = proc.wait(timeout=bound_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _stop(proc)
            code, timed_out = None, True
        except BaseException:
            _stop(proc)
            raise
    return ManagerRun(argv, code, timed_out, time.monotonic() - start, log)
