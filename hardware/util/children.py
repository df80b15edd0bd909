"""Child processes, each known by the thread that started it, so that whoever owns a thread can
stop what it runs: compile ahead (plugin/ahead.py) ends its threads' compiles when the session
ends, and none of a case's own. Each child is killed by the kernel when the thread that started
it dies (PR_SET_PDEATHSIG): a session killed mid-compile (SIGKILL, the OOM killer) leaves no
``iree-compile`` running on (issue 47 defect 11)."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from typing import Sequence

_live: dict[subprocess.Popen, int] = {}
_stopped: set[int] = set()      # threads told to stop: they start no more children
_lock = threading.Lock()


class Stopped(RuntimeError):
    """A thread that was told to stop (``stop``) tried to start a child."""


# util-linux's setpriv (Debian's util-linux, essential) sets PR_SET_PDEATHSIG in the child and
# execs the command, so Popen needs no preexec_fn. With one, CPython forks instead of vfork-ing
# (Modules/_posixsubprocess.c), which runs the pthread_atfork handlers and Python in the child: a
# compile-ahead thread's fork while the main thread was in numpy's BLAS hung both for good (seen
# here: a default run stalled 9 minutes, the main thread in a GEMM, the other in Popen).
SETPRIV = "/usr/bin/setpriv"


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` so that its process gets SIGKILL when the thread that started it ends (prctl(2)
    PR_SET_PDEATHSIG, kept across execve); unchanged where setpriv is missing, or where the
    program itself is not there (Popen's own FileNotFoundError says so, not setpriv's exit 127)."""
    argv = list(argv)
    program = argv[0] if not argv or os.sep in argv[0] else (shutil.which(argv[0]) or "")
    if not argv or not os.access(SETPRIV, os.X_OK) or not os.access(program, os.X_OK):
        return argv
    return [SETPRIV, "--pdeathsig", "KILL", "--", *argv]


def run(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)``, stoppable by
    ``stop``; raises ``Stopped`` in a thread told to stop."""
    if threading.get_ident() in _stopped:
        raise Stopped(f"not started, the thread was told to stop: {argv[0]}")
    with subprocess.Popen(dying_with_parent(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        with _lock:
            _live[proc] = threading.get_ident()
        try:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                raise subprocess.TimeoutExpired(list(argv), timeout, output=out, stderr=err) from None
        finally:
            with _lock:
                _live.pop(proc, None)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def stop(threads: set[int]) -> int:
    """Kill the children the given threads are waiting for, and let them start no more (until
    each calls ``forget``); how many there were."""
    with _lock:
        _stopped.update(threads)
        procs = [p for p, t in _live.items() if t in threads]
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass
    return len(procs)


def told_to_stop() -> bool:
    """Whether this thread was told to stop: a wait it is in (a claim) ends now."""
    return threading.get_ident() in _stopped


def forget() -> None:
    """This thread ends its stopped work: its id, which a later thread may get, starts children again."""
    _stopped.discard(threading.get_ident())
