"""Child processes, each known by the thread that started it, so that whoever owns a thread can
stop what it runs: compile ahead (plugin/ahead.py) ends its threads' compiles when the session
ends, and none of a case's own. Each child is killed by the kernel when the thread that started
it dies (PR_SET_PDEATHSIG): a session killed mid-compile (SIGKILL, the OOM killer) leaves no
``iree-compile`` running on (issue 47 defect 11)."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from functools import lru_cache
from typing import Callable, Optional, Sequence

_live: dict[subprocess.Popen, int] = {}
_stopped: set[int] = set()      # threads told to stop: they start no more children
_lock = threading.Lock()


class Stopped(RuntimeError):
    """A thread that was told to stop (``stop``) tried to start a child."""


@lru_cache(maxsize=1)
def _prctl() -> Optional[Callable[..., int]]:
    """libc's prctl, looked up in the parent: the forked child only calls it."""
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):      # not Linux
        return None


PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when the thread that forked it ends (prctl(2)
    PR_SET_PDEATHSIG; kept across execve), and kills itself at once when that parent is already
    gone (it died between the fork and the prctl)."""
    prctl, parent = _prctl(), os.getpid()

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os.kill(os.getpid(), signal.SIGKILL)
    return preexec


def run(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)``, stoppable by
    ``stop``; raises ``Stopped`` in a thread told to stop."""
    if threading.get_ident() in _stopped:
        raise Stopped(f"not started, the thread was told to stop: {argv[0]}")
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          preexec_fn=die_with_parent()) as proc:
        with _lock:
            _live[proc] = threading.get_ident()
        try:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
                raise subprocess.TimeoutExpired(proc.args, timeout, output=out, stderr=err) from None
        finally:
            with _lock:
                _live.pop(proc, None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


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
