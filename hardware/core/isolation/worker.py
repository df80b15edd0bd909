"""The isolated worker: a child forked by the fork server that runs jobs until it hangs or dies.

It runs ``accel_regress.core.runner.execute`` (backend, then the injected fault) and answers with file names
of its outputs or with the verdict error it raised. Everything that can end it badly (a signal, an
``os._exit``, a native hang holding the GIL) is observed from outside by the pytest process; inside,
faulthandler writes the Python stack to the worker's log on a fatal signal and on SIGUSR1 (sent by
the pytest process before it kills a hung worker).
"""
from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from accel_regress.core.isolation import bounds as _bounds
from accel_regress.core.isolation import protocol, reaping, transfer

STACK_SIGNAL = signal.SIGUSR1


def _jsonable(detail: dict) -> dict:
    out = {}
    for key, value in (detail or {}).items():
        out[str(key)] = value if isinstance(value, (str, int, float, bool, type(None), list, dict)) else str(value)
    return out


# What the worker was started with, for the bound each backend's run declares.
_started = {"memory_bytes": None, "cgroup": None}


def _bound_memory(backend: str) -> str:
    from accel_regress.core import registry
    try:
        kind = getattr(registry.get(backend), "memory_bound", "address-space")
    except Exception:       # an unknown backend fails in runner.execute with its own message
        kind = "address-space"
    return _bounds.apply_memory_bound(kind, _started["memory_bytes"], _started["cgroup"])


def _run(msg: dict) -> dict:
    from accel_regress.golden.case import Case
    from accel_regress.core import runner
    from accel_regress.core.errors import HarnessError, Unsupported, VerdictError

    # process_env first: this worker runs only jobs with these settings, so they are in place
    # before the first run's library reads them.
    os.environ.update(msg.get("process_env") or {})
    os.environ.update(msg.get("env") or {})
    cwd = msg.get("cwd")
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)
    case = Case.from_json(msg["case"])
    inputs = transfer.read_arrays(msg["inputs"])
    job = runner.Job(msg["backend"], case, inputs, msg.get("fault"), float(msg["timeout_s"]),
                     env=dict(msg.get("env") or {}), process_env=dict(msg.get("process_env") or {}))
    start = time.perf_counter()
    try:
        _bound_memory(job.backend)
        outputs = runner.execute(job)
        index = transfer.write_arrays(Path(msg["folder"]), "out", outputs)
        return {"ok": True, "outputs": index, "run_s": time.perf_counter() - start,
                "report": _jsonable(runner.backend_report(job.backend))}
    except VerdictError as exc:
        return {"error": {"verdict": exc.verdict, "message": exc.message, "stage": exc.stage,
                          "detail": _jsonable(exc.detail)}}
    except Unsupported as exc:
        return {"unsupported": str(exc)}
    except HarnessError as exc:
        return {"harness_error": {"message": exc.message, "stage": exc.stage, "detail": _jsonable(exc.detail)}}
    except MemoryError as exc:
        return {"memory_error": f"MemoryError: {exc}".rstrip(": "), "traceback": traceback.format_exc(limit=8)}
    except Exception as exc:
        return {"exception": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}
    except SystemExit as exc:
        return {"exception": f"SystemExit({exc.code!r}) (the run called sys.exit)",
                "traceback": traceback.format_exc(limit=8)}
    except BaseException as exc:      # KeyboardInterrupt, GeneratorExit...: raised by the run itself
        return {"exception": f"{type(exc).__name__}: {exc}".rstrip(": ") + " (raised inside the run)",
                "traceback": traceback.format_exc(limit=8)}
    finally:
        # Reference counting frees the arrays now; no gc.collect() (it costs ~0.2 s with torch loaded).
        del inputs


def _reset(msg: dict) -> dict:
    from accel_regress.core import registry
    try:
        registry.get(msg["backend"]).reset()
        return {"ok": True}
    except Exception as exc:
        return {"exception": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}


def _sweep(reply: dict) -> None:
    """End whatever the run left running (also in another session: this worker is their subreaper)."""
    killed, left = reaping.sweep_descendants(os.getpid())
    if killed:
        print(f"accel-regress: the run left {len(killed)} process(es) running; killed: {'; '.join(killed)}",
              file=sys.stderr)
        reply["reaped"] = killed
    if left:
        reply["unreaped"] = left


def main(sock: socket.socket, log_fd: int, memory_bytes, cgroup=None) -> None:
    """Runs in the forked child; never returns."""
    # Own process group: killing the group also ends whatever the backend started (qemu, a simulator).
    os.setpgid(0, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    # First, before anything runs: descendants stay in the cgroup / come back to us when orphaned.
    problems = [p for p in (cgroup and reaping.Cgroup.join(cgroup), reaping.become_subreaper()) if p]
    for problem in problems:
        print(f"accel-regress: {problem}", file=sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the pytest process's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    faulthandler.register(STACK_SIGNAL, file=sys.stderr, all_threads=True, chain=False)
    _bounds.apply_in_worker(_bounds.Bounds(memory_bytes=memory_bytes))
    _started.update(memory_bytes=memory_bytes, cgroup=cgroup)
    while True:
        try:
            msg = protocol.recv(sock)
        except protocol.ChannelClosed:
            os._exit(0)
        op = msg.get("op")
        if op == "run":
            reply = _run(msg)
            _sweep(reply)
        elif op == "reset":
            reply = _reset(msg)
        elif op == "ping":
            reply = {"ok": True, "pid": os.getpid()}
        else:
            os._exit(0)
        sys.stdout.flush()
        sys.stderr.flush()
        protocol.send(sock, reply)
