"""The pytest-process side of isolation: one fork server and one warm worker per pytest process.

``Isolation.run(job)`` hands the job to the warm worker and waits at most the job's bound. The
worker is replaced only when a run hangs (stack dumped, then its process group killed) or the
worker dies (signal, exit code); each case pays a message round trip and the array files (inputs
written once per content: the same case on the next backend reuses them), never an interpreter
start or a torch import. Under pytest-xdist every xdist worker process has its own
``Isolation``, so a hang costs one case of one xdist worker.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from accel_regress.core.errors import CompileError, Crash, Hang, HarnessError, Unsupported, VerdictError
from accel_regress.core.isolation import protocol, reaping, transfer
from accel_regress.core.isolation.bounds import Bounds, describe_status, gib, status_detail

_ERRORS = {"HANG": Hang, "CRASH": Crash, "COMPILE_ERROR": CompileError}
SERVER_START_S = 300.0       # first spawn waits for the server's imports (torch: seconds, loaded host: more)
# Input files are kept by content digest for the next run with the same inputs (the same case on
# the next backend): written once, not once per backend. The least recently used go past this.
INPUT_CACHE_BYTES = 512 << 20
BASE_PRELOAD = ("numpy", "ml_dtypes", "torch", "accel_regress.golden", "accel_regress.core.runner", "accel_regress.core.isolation.worker")


@dataclass
class _Worker:
    pid: int
    sock: socket.socket
    log: Path
    cgroup: Optional[reaping.Cgroup] = None
    ended: bool = False       # killed and reaped: its pid may belong to someone else now
    reaped: tuple = ()        # 'PID COMMAND' of processes its run left and that were killed
    unreaped: tuple = ()      # ... and of those that could not be killed


class _SuiteFault(Exception):
    """The isolation machinery failed under a case (fork server gone): not the case's verdict."""


class IsolationError(RuntimeError):
    """The isolation machinery itself failed (the fork server would not start)."""


# What a verdict keeps of a run's output is its last lines; this much of the log is read to find
# them (a run that printed 512 MB must not cost gigabytes to judge: issue 26 item 12).
LOG_TAIL_BYTES = 1 << 20


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _head(text: str, lines: int) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[:lines])


def _absolute_fault(spec: Optional[str]) -> Optional[str]:
    if not spec:
        return spec
    path, sep, name = spec.rpartition(":")
    if sep and path.endswith(".py"):
        return f"{Path(path).resolve()}:{name}"
    return spec


def _remove_orphans(root: Path, remove=transfer.remove) -> None:
    """Remove transfer folders (on /dev/shm they hold RAM) and worker cgroups (with whatever still
    runs in them) left by pytest processes that were killed."""
    for folder in root.glob("accel-isolation-*-*"):
        try:
            pid = int(folder.name.split("-")[2])
            os.kill(pid, 0)
        except ProcessLookupError:
            remove(folder)
        except (ValueError, IndexError, PermissionError, OSError):
            continue


class Isolation:
    def __init__(self, bounds: Bounds = Bounds(), preload: Iterable[str] = (), root: Optional[Path] = None):
        self.bounds = bounds
        self.last_report: dict = {}      # the backend's report of the last run that returned outputs
        # $ACCEL_ISOLATION_PRELOAD (comma-separated modules) adds site modules every worker needs.
        extra = [m for m in os.environ.get("ACCEL_ISOLATION_PRELOAD", "").split(",") if m.strip()]
        self.preload = list(dict.fromkeys([*BASE_PRELOAD, *preload, *extra]))
        root = Path(root or transfer.default_root())
        _remove_orphans(root)
        self.dir = Path(tempfile.mkdtemp(prefix=f"accel-isolation-{os.getpid()}-", dir=root))
        self._server: Optional[subprocess.Popen] = None
        self._ctrl: Optional[socket.socket] = None
        self._worker: Optional[_Worker] = None
        # A backend with settings read once per process (Backend.process_env) has a warm worker of
        # its own; the one not in use waits here, keyed by those settings ("": none).
        self._worker_key = ""
        self._parked: dict[str, _Worker] = {}
        self._spawned = 0
        self._inputs: "OrderedDict[str, tuple[list, int]]" = OrderedDict()   # digest -> (file index, bytes)
        self._inputs_bytes = 0
        self.stats = {"jobs": 0, "workers": 0, "hangs": 0, "deaths": 0, "server_restarts": 0, "retries": 0}
        self._cgroups, why = reaping.cgroup_base()
        if self._cgroups is not None:
            _remove_orphans(self._cgroups, lambda folder: reaping.Cgroup(folder).kill())
        self.reaping = (f"each worker in its own {why}" if self._cgroups else
                        f"process group + subreaper sweep of descendants (no cgroup: {why})")

    # --- the fork server ---------------------------------------------------------------------

    def start(self) -> None:
        """Start the fork server now (it imports in the background; the first run waits for it)."""
        if self._server is not None and self._server.poll() is None:
            return
        self._stop_server()
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"     # a killed worker's last prints are in its log, not a buffer
        log = open(self.dir / "server.log", "ab")
        try:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "accel_regress.core.isolation.server", "--fd", str(theirs.fileno()),
                 "--preload", ",".join(self.preload)],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                env=env, cwd=os.getcwd())
        finally:
            theirs.close()
            log.close()
        self._ctrl = ours

    def _stop_server(self) -> None:
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._server is not None:
            try:
                self._server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
            self._server = None

    def _request(self, msg: dict, timeout: float, with_fds: bool = False):
        self._ctrl.settimeout(timeout)
        protocol.send(self._ctrl, msg)
        return protocol.recv(self._ctrl, with_fds=with_fds)

    def _server_log(self) -> str:
        try:
            return _tail((self.dir / "server.log").read_text(errors="replace"), self.bounds.tail_lines)
        except OSError:
            return ""

    def _spawn(self) -> _Worker:
        for attempt in (1, 2):
            self.start()
            log = self.dir / f"worker-{self._spawned}.log"
            cgroup = None
            if self._cgroups is not None:
                cgroup, problem = reaping.Cgroup.make(self._cgroups, f"{self.dir.name}-w{self._spawned}")
                if problem:
                    self._cgroups, self.reaping = None, f"process group + subreaper sweep (no cgroup: {problem})"
            self._spawned += 1
            try:
                reply, fds = self._request({"op": "spawn", "log": str(log), "memory": self.bounds.memory_bytes,
                                            "cgroup": cgroup and str(cgroup.path)}, SERVER_START_S, with_fds=True)
            except (protocol.ChannelClosed, OSError) as exc:
                # The server died (or never started): start a fresh one once, then give up.
                if cgroup is not None:
                    cgroup.kill()
                self._stop_server()
                if attempt == 2:
                    raise IsolationError(f"the isolation fork server failed ({type(exc).__name__}: {exc}); "
                                         f"its log:\n{self._server_log()}") from None
                continue
            self.stats["workers"] += 1
            return _Worker(int(reply["pid"]), socket.socket(fileno=fds[0]), log, cgroup)
        raise AssertionError("unreachable")

    def server_alive(self) -> bool:
        return self._server is not None and self._server.poll() is None

    def _reap(self, worker: _Worker, timeout: float = 5.0) -> Optional[int]:
        """Kill the worker's process group unless it is gone already, and return its wait status."""
        if worker.ended:
            return None
        worker.sock.close()
        reply: dict = {}
        try:
            reply = self._request({"op": "wait", "pid": worker.pid, "timeout": timeout}, timeout + 5)
        except (protocol.ChannelClosed, OSError, ValueError):
            pass
        if reply.get("status") is None:
            self._kill(worker)
            try:
                reply = self._request({"op": "wait", "pid": worker.pid, "timeout": 5.0}, 10)
            except (protocol.ChannelClosed, OSError, ValueError):
                pass
        worker.ended = True
        worker.reaped += tuple(reply.get("reaped") or ())
        worker.unreaped += tuple(reply.get("unreaped") or ())
        if worker.cgroup is not None:
            before = worker.cgroup.pids()
            worker.unreaped += tuple(worker.cgroup.kill())
            worker.reaped += tuple(f"{p} (in the worker's cgroup)" for p in before if p != worker.pid)
        elif not self.server_alive():
            worker.unreaped += ("(the fork server is gone and there is no cgroup: processes this worker "
                                "started in their own session may still run)",)
        return reply.get("status")

    @staticmethod
    def _kill(worker: _Worker) -> None:
        if worker.ended:
            return
        if worker.cgroup is not None:
            worker.cgroup.kill(wait_s=0.0)        # the whole tree at once, whatever sessions it made
        for kill in (os.killpg, os.kill):
            try:
                kill(worker.pid, signal.SIGKILL)
                return
            except OSError:
                continue

    def _drop(self, worker: _Worker) -> Optional[int]:
        if self._worker is worker:
            self._worker = None
        self._kill(worker)
        return self._reap(worker, timeout=5.0)

    # --- a run ---------------------------------------------------------------------------------

    def run(self, job) -> dict[str, np.ndarray]:
        """Run ``job`` (a ``accel_regress.core.runner.Job``) in the warm worker; raise its verdict error.

        A fault of the machinery (the fork server killed, a worker gone before it got the job) is
        not the case's: the server is restarted and the case run once more; only the case's own
        process ending badly is its CRASH."""
        try:
            return self._run_once(job)
        except _SuiteFault as first:
            self.stats["retries"] += 1
            self._restart_server()
            try:
                return self._run_once(job)
            except _SuiteFault as second:
                raise IsolationError(f"the isolation machinery failed twice under {job.case.id}: {first}; "
                                     f"then {second}") from None

    def _restart_server(self) -> None:
        self.stats["server_restarts"] += 1
        self.retire_worker()        # the parked ones too: they die with the server that forked them
        self._stop_server()
        self.start()

    def _use_worker_of(self, process_env) -> None:
        key = "\0".join(f"{k}={v}" for k, v in sorted((process_env or {}).items()))
        if key == self._worker_key:
            return
        if self._worker is not None:
            self._parked[self._worker_key] = self._worker
        self._worker, self._worker_key = self._parked.pop(key, None), key

    def _run_once(self, job) -> dict[str, np.ndarray]:
        self._use_worker_of(job.process_env)
        worker = self._worker or self._spawn()
        self._worker = worker
        self.stats["jobs"] += 1
        folder = transfer.new_job_folder(self.dir, str(self.stats["jobs"]))
        in_flight = False
        try:
            msg = {"op": "run", "backend": job.backend, "case": job.case.to_json(),
                   "fault": _absolute_fault(job.fault), "timeout_s": job.timeout_s, "env": dict(job.env),
                   "process_env": dict(job.process_env),
                   "cwd": os.getcwd(), "folder": str(folder),
                   "inputs": self._input_files(job) or transfer.write_arrays(folder, "in", job.inputs)}
            offset = self._log_size(worker)
            try:
                protocol.send(worker.sock, msg)
            except OSError as exc:          # it died between cases (its server was killed): not this case's
                self._drop(worker)
                raise _SuiteFault(f"the warm worker was gone before the case started ({exc})") from None
            sent = time.monotonic()
            in_flight = True
            worker.sock.settimeout(max(job.timeout_s, 0.001))
            try:
                reply = protocol.recv(worker.sock)
            except (socket.timeout, TimeoutError):
                error = self._hang(worker, job, offset)
                in_flight = False
                raise self._stamp(error, sent) from None
            except (protocol.ChannelClosed, ConnectionError):
                in_flight = False
                if not self.server_alive():
                    # PR_SET_PDEATHSIG ended the worker because its fork server died: the suite's fault.
                    self._drop(worker)
                    raise _SuiteFault("the isolation fork server died while the case ran") from None
                error = self._death(worker, job, offset)
                raise self._stamp(error, sent) from None
            in_flight = False
            return self._answer(reply, worker, job, offset)
        finally:
            if in_flight:
                # Interrupted (SIGINT/SIGTERM) mid-run or mid-verdict: the worker's state is unknown; end it.
                self._drop(worker)
            transfer.remove(folder)

    def _input_files(self, job) -> Optional[list]:
        """The index of the job's input files, written once per content (``job.inputs_sha256``) and
        kept for the next run with the same inputs; None without a digest. A worker reads them
        (a copy-on-write map or a copy), never writes them."""
        digest = getattr(job, "inputs_sha256", None)
        if not digest:
            return None
        kept = self._inputs.get(digest)
        if kept is not None and all(os.path.exists(entry[1]) for entry in kept[0]):
            self._inputs.move_to_end(digest)
            return kept[0]
        folder = self.dir / f"inputs-{digest[:32]}"
        transfer.remove(folder)
        folder.mkdir()
        index = transfer.write_arrays(folder, "in", job.inputs)
        size = sum(os.path.getsize(entry[1]) for entry in index)
        if kept is not None:
            self._inputs_bytes -= kept[1]
        self._inputs[digest] = (index, size)
        self._inputs_bytes += size
        while self._inputs_bytes > INPUT_CACHE_BYTES and len(self._inputs) > 1:
            old, (_, old_size) = self._inputs.popitem(last=False)
            transfer.remove(self.dir / f"inputs-{old[:32]}")
            self._inputs_bytes -= old_size
        return index

    def _reaping_detail(self, worker: _Worker, reply: Optional[dict] = None) -> dict:
        """What was done about processes the run left (and what could not be), for the record."""
        reaped = [*worker.reaped, *((reply or {}).get("reaped") or ())]
        unreaped = [*worker.unreaped, *((reply or {}).get("unreaped") or ())]
        out = {"reaping": self.reaping}
        if reaped:
            out["reaped"] = "; ".join(reaped)
        if unreaped:
            out["unreaped"] = "; ".join(unreaped)
        return out

    @staticmethod
    def _stamp(exc: VerdictError, sent: float) -> VerdictError:
        # From handing the job over to the verdict: the bound plus what ending the worker took.
        exc.detail["verdict_after_s"] = round(time.monotonic() - sent, 3)
        return exc

    def _log_size(self, worker: _Worker) -> int:
        try:
            return worker.log.stat().st_size
        except OSError:
            return 0

    def _log_from(self, worker: _Worker, offset: int, end: Optional[int] = None, head: bool = False) -> str:
        """The worker's output between ``offset`` and ``end`` (its end): only the last LOG_TAIL_BYTES
        of it (the first, with ``head``), so a run that printed gigabytes costs no more to judge."""
        try:
            with open(worker.log, "rb") as f:
                stop = os.fstat(f.fileno()).st_size if end is None else end
                start = offset if head else max(offset, stop - LOG_TAIL_BYTES)
                f.seek(start)
                data = f.read(max(0, min(stop - start, LOG_TAIL_BYTES)))
            return data.decode(errors="replace")
        except OSError:
            return ""

    def _hang(self, worker: _Worker, job, offset: int) -> Hang:
        self.stats["hangs"] += 1
        before = self._log_size(worker)
        # faulthandler in the worker writes every thread's Python stack on this signal, from its C
        # signal handler: it works even while the run blocks in native code holding the GIL.
        try:
            os.kill(worker.pid, signal.SIGUSR1)
        except OSError:
            pass
        self._await_quiet_log(worker, before)
        output = self._log_from(worker, offset, before)
        stack = self._log_from(worker, before, head=True)
        status = self._drop(worker)
        detail = {"bound_s": job.timeout_s, "worker_pid": worker.pid,
                  "stack": _head(stack, 4 * self.bounds.tail_lines) or "(the worker wrote no stack)",
                  "output": _tail(output, self.bounds.tail_lines)}
        detail.update(status_detail(status))
        detail.update(self._reaping_detail(worker))
        return Hang(f"{job.backend} gave no result for {job.case.id} within {job.timeout_s:g} s "
                    f"(case bound; --case-timeout overrides it); the worker was killed, its Python stack is below",
                    stage="run", detail=detail)

    def _await_quiet_log(self, worker: _Worker, before: int) -> None:
        deadline = time.monotonic() + self.bounds.stack_wait_s
        size, quiet_since = before, None
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = self._log_size(worker)
            if now != size:
                size, quiet_since = now, time.monotonic()
            elif quiet_since is not None and time.monotonic() - quiet_since > 0.1:
                return

    def _death(self, worker: _Worker, job, offset: int) -> Crash:
        self.stats["deaths"] += 1
        if self._worker is worker:
            self._worker = None
        status = self._reap(worker, timeout=5.0)
        output = self._log_from(worker, offset)
        how = describe_status(status)
        detail = {"worker_pid": worker.pid, "output": _tail(output, 4 * self.bounds.tail_lines),
                  "memory_bound": gib(self.bounds.memory_bytes)}
        detail.update(status_detail(status))
        detail.update(self._reaping_detail(worker))
        return Crash(f"{job.backend} run of {job.case.id} ended its process: {how}", stage="run", detail=detail)

    def _answer(self, reply: dict, worker: _Worker, job, offset: int) -> dict[str, np.ndarray]:
        if reply.get("unreaped"):
            print(f"accel-regress: {job.case.id}: processes its run started could not be ended: "
                  f"{'; '.join(reply['unreaped'])}", file=sys.stderr)
        if reply.get("ok"):
            self.last_report = reply.get("report") or {}
            return transfer.read_arrays(reply["outputs"], unlink=True)
        output = _tail(self._log_from(worker, offset), self.bounds.tail_lines)
        if "error" in reply:
            err = reply["error"]
            cls = _ERRORS.get(err["verdict"], VerdictError)
            detail = dict(err.get("detail") or {})
            if output and "output" not in detail:
                detail["output"] = output
            exc = cls(err["message"], stage=err.get("stage"), detail=detail)
            if cls is VerdictError:
                exc.verdict = err["verdict"]
            raise exc
        if "unsupported" in reply:
            raise Unsupported(reply["unsupported"])
        if "harness_error" in reply:
            err = reply["harness_error"]
            raise HarnessError(err["message"], stage=err.get("stage") or "harness", detail=err.get("detail"))
        if "memory_error" in reply:
            raise Crash(f"{job.backend} ran out of memory on {job.case.id}: {reply['memory_error']} "
                        f"(worker address-space bound {gib(self.bounds.memory_bytes)}, --worker-memory)",
                        stage="run", detail={"traceback": reply.get("traceback", ""), "output": output,
                                             "memory_bound": gib(self.bounds.memory_bytes)})
        raise Crash(f"{job.backend} raised {reply.get('exception', 'an unknown error')}", stage="run",
                    detail={"traceback": reply.get("traceback", ""), "output": output,
                            **self._reaping_detail(worker, reply)})

    # --- after a hang -------------------------------------------------------------------------

    def reset(self, backend: str) -> Optional[str]:
        """Run ``Backend.reset()`` in a fresh worker, bounded; return None or what went wrong."""
        worker = self._worker or self._spawn()
        self._worker = worker
        try:
            protocol.send(worker.sock, {"op": "reset", "backend": backend})
            worker.sock.settimeout(self.bounds.reset_timeout_s)
            reply = protocol.recv(worker.sock)
        except (socket.timeout, TimeoutError):
            self._drop(worker)
            return f"{backend}.reset() did not return within {self.bounds.reset_timeout_s:g} s"
        except (protocol.ChannelClosed, ConnectionError):
            status = self._drop(worker)
            return f"{backend}.reset() ended its process: {describe_status(status)}"
        except BaseException:
            self._drop(worker)
            raise
        return None if reply.get("ok") else f"{backend}.reset() raised {reply.get('exception')}"

    def retire_worker(self) -> None:
        """End the warm workers, so the next run starts in a fresh one (--repeat alternates)."""
        for worker in [self._worker, *self._parked.values()]:
            if worker is not None:
                self._drop(worker)
        self._parked.clear()

    def close(self) -> None:
        self.retire_worker()
        self._stop_server()
        transfer.remove(self.dir)
