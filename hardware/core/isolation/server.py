"""The fork server: imports numpy, torch and the selected backends once, then forks warm workers.

Started by the pytest process (``python -m accel_regress.core.isolation.server --fd N``) with one end of a
socket pair. Requests (JSON, see ``protocol``):

- ``{"op": "spawn", "log": PATH, "memory": BYTES|null}``: fork a worker whose stdout/stderr go to
  PATH; answer ``{"pid": P}`` with the worker's socket attached (SCM_RIGHTS).
- ``{"op": "wait", "pid": P, "timeout": S}``: reap worker P; answer ``{"status": waitpid status|null}``.

The server never runs a job itself (so no OpenMP pool is started before a fork), ignores SIGINT,
and dies with its parent (PR_SET_PDEATHSIG); when its control socket closes it kills its workers.
"""
from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import signal
import socket
import sys
import time
import traceback

from accel_regress.core.isolation import protocol, reaping

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        pass   # not Linux: the closed control socket still ends the server


def _preload(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception as exc:   # the worker will report the same failure as a verdict
            print(f"fork server: preloading {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _wait(pid: int, timeout: float):
    deadline = time.monotonic() + timeout
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.005)


def serve(ctrl: socket.socket) -> None:
    children: set[int] = set()
    while True:
        try:
            msg = protocol.recv(ctrl)
        except protocol.ChannelClosed:
            break
        op = msg.get("op")
        if op == "spawn":
            parent_end, child_end = socket.socketpair()
            log_fd = os.open(msg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    ctrl.close()
                    parent_end.close()
                    die_with_parent()
                    from accel_regress.core.isolation import worker
                    worker.main(child_end, log_fd, msg.get("memory"), msg.get("cgroup"))
                except BaseException:
                    traceback.print_exc()          # into the worker's log: its CRASH record shows it
                finally:
                    os._exit(70)
            child_end.close()
            os.close(log_fd)
            children.add(pid)
            protocol.send(ctrl, {"pid": pid}, fds=[parent_end.fileno()])
            parent_end.close()
        elif op == "wait":
            pid = int(msg["pid"])
            status = _wait(pid, float(msg.get("timeout", 5.0)))
            reply = {"status": status}
            if status is not None:
                children.discard(pid)
                # Orphans of the ended worker came to this subreaper: end them too.
                killed, left = reaping.sweep_descendants(os.getpid(), keep=frozenset(children))
                reply.update({"reaped": killed} if killed else {}, **({"unreaped": left} if left else {}))
            protocol.send(ctrl, reply)
        else:
            protocol.send(ctrl, {"error": f"unknown op {op!r}"})
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _wait(pid, 1.0)
    reaping.sweep_descendants(os.getpid())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accel_regress.core.isolation.server")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--preload", default="")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    problem = reaping.become_subreaper()
    if problem:
        print(f"fork server: {problem}: orphans of a worker go to init, not to this server", file=sys.stderr)
    ctrl = socket.socket(fileno=args.fd)
    _preload([m for m in args.preload.split(",") if m])
    serve(ctrl)
    return 0


if __name__ == "__main__":
    status = main()
    # serve() has killed and reaped everything this server started; the interpreter's own shutdown
    # with torch and IREE loaded (module teardown, collections) takes seconds that every pytest
    # process, and every xdist worker, would wait for at its end.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
