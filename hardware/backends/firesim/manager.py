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


class Started:
    """A manager task running in its own process group, with output appended to ``log``."""

    def __init__(self, executable: str, task: str, config: Path, *, cwd: Path, log: Path,
                 env: Optional[Mapping[str, str]] = None, note: str = ""):
        self.argv = [executable, task, "-c", str(config)]
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._start = time.monotonic()
        with open(log, "ab") as out:
            out.write(f"$ {' '.join(self.argv)}  (cwd {cwd}{note})\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         env=dict(env) if env is not None else None)

    def wait(self, seconds: float) -> bool:
        """True when it ended within ``seconds``."""
        try:
            self.proc.wait(timeout=seconds)
            return True
        except subprocess.TimeoutExpired:
            return False
        except BaseException:
            _stop(self.proc)
            raise

    def stop(self) -> None:
        _stop(self.proc)

    def result(self, timed_out: bool) -> ManagerRun:
        return ManagerRun(self.argv, None if timed_out else self.proc.returncode, timed_out,
                          time.monotonic() - self._start, self.log)


def run(executable: str, task: str, config: Path, *, cwd: Path, bound_s: float, log: Path,
        env: Optional[Mapping[str, str]] = None) -> ManagerRun:
    """``firesim <task>`` to its end, or stopped (with everything it started) at ``bound_s``."""
    task_run = Started(executable, task, config, cwd=cwd, log=log, env=env, note=f", bound {bound_s:.0f} s")
    if task_run.wait(bound_s):
        return task_run.result(False)
    task_run.stop()
    return task_run.result(True)
