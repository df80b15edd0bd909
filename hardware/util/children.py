"""Child processes, each known by the thread that started it, so that whoever owns a thread can
stop what it runs: compile ahead (plugin/ahead.py) ends its threads' compiles when the session
ends, and none of a case's own."""
from __future__ import annotations

import subprocess
import threading
from typing import Sequence

_live: dict[subprocess.Popen, int] = {}
_stopped: set[int] = set()      # threads told to stop: they start no more children
_lock = threading.Lock()


class Stopped(RuntimeError):
    """A thread that was told to stop (``stop``) tried to start a child."""


def run(argv: Sequence[str], *, timeout: float) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True, text=True, timeout=timeout)``, stoppable by
    ``stop``; raises ``Stopped`` in a thread told to stop."""
    if threading.get_ident() in _stopped:
        raise Stopped(f"not started, the thread was told to stop: {argv[0]}")
    with subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
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
