"""Run one case on one backend and turn every outcome into outputs or a verdict.

``execute`` is the whole of a run (backend, then the injected fault) and is what the isolation
layer runs away from the pytest process; ``run_case`` wraps it and never raises.

What a run needs from whoever runs it is a ``Context``: the isolated worker (None runs in this
process), the --max-hangs guard, the --devices locks, who observes runs, a script's bound and
commentary. A pytest session owns one (made when it engages, closed at its end:
accel_regress.plugin.isolation) and passes it to every run; a script sets up ``script``, the
context its runs get when they name none (``standalone``).
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.golden.inputs import sha256_of
from accel_regress.core import case_bound, faults, registry
from accel_regress.core.errors import Crash, HarnessError, NotApplicable, Unsupported, VerdictError


@dataclass
class Job:
    backend: str
    case: Case
    inputs: Mapping[str, np.ndarray]
    fault: Optional[str] = None
    timeout_s: float = 120.0
    env: Mapping[str, str] = field(default_factory=dict)   # e.g. the device id from --devices
    inputs_sha256: Optional[str] = None    # sha256_of(inputs): the isolation layer writes each content once
    process_env: Mapping[str, str] = field(default_factory=dict)   # Backend.process_env: a worker of its own


# Whether the injected fault changed the outputs of the last run in this process (backend_report
# carries it out of an isolated worker): a fault that changed no output of any case is said in
# the summary, "its trigger was not reached" (issue 37 item 3).
_FAULT_EFFECT: dict = {}


def _changed(before: Mapping[str, Any], after: Any) -> bool:
    # A fault may return anything (a list, a tensor): whatever is not the same mapping changed it.
    if not isinstance(after, Mapping) or set(before) != set(after):
        return True
    try:
        return not all(np.array_equal(np.asarray(before[k]), np.asarray(after[k]), equal_nan=True) for k in before)
    except (TypeError, ValueError):
        return True


def execute(job: Job) -> dict[str, np.ndarray]:
    backend = registry.get(job.backend)
    _FAULT_EFFECT.clear()
    with case_bound.running(job.timeout_s):
        outputs = backend.run(job.case, job.inputs)
    fault = faults.load(job.fault)
    if fault is not None:
        before = dict(outputs)
        try:
            outputs = fault(job.case, dict(outputs))
        except VerdictError as exc:
            # Raised, not lived through: --max-hangs must not take it for a wedged device.
            exc.detail.setdefault("injected_fault", job.fault)
            raise
        _FAULT_EFFECT["fault_changed"] = _changed(before, outputs)
    wrong = _not_arrays(outputs)
    if wrong:
        # The process lived and answered: what came back breaks the output contract (a FAIL that
        # names it), not a crash of the device.
        raise VerdictError(f"{job.backend} broke the {job.case.op} output contract: {wrong}", stage="compare",
                           detail={"contract": wrong})
    return outputs


def _kind(value: Any) -> str:
    t = type(value)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _not_arrays(outputs: Any) -> Optional[str]:
    """What is wrong with a backend's answer as a dict of numeric numpy arrays (None: nothing)."""
    if not isinstance(outputs, dict):
        return f"returned a {_kind(outputs)}, not a dict of numpy arrays"
    for name, value in outputs.items():
        if not isinstance(value, np.ndarray):
            return f"output {name!r} is a {_kind(value)}, not a numpy array"
        if value.dtype.kind in "OV" and value.dtype.type.__module__ == "numpy":
            return f"output {name!r} has dtype {value.dtype} ({value.dtype.str}), not a numeric dtype"
    return None


@dataclass
class Context:
    """What the runs of one session (a pytest session, per xdist worker; or a script) share."""
    isolation: Any = None      # accel_regress.core.isolation.Isolation, or None: run in this process
    hang_guard: Any = None     # accel_regress.core.isolation.HangGuard, or None: never stop trying
    devices: Any = None        # accel_regress.core.devices.DeviceLocks, or None: no --devices
    observer: Optional[Callable[["Run"], None]] = None   # who observes runs as tests read them
    case_timeout: Optional[float] = None   # a script's --case-timeout (None: each backend's own bound)
    progress: Optional[Callable[[str], None]] = None     # a script's running commentary (None in pytest)

    _handed: dict = field(default_factory=dict, repr=False)   # variable -> its value before it was handed over

    def device_env(self, backend_name: str) -> dict[str, str]:
        """Hold ``backend_name``'s device (--devices) and hand it to the backend: the environment
        that names it (accel_regress.core.devices), set in this process too (the backend's
        ``versions`` is asked here) and given to every isolated run with its job."""
        if self.devices is None:
            return {}
        env = self.devices.acquire(registry.get(backend_name).device_resource, backend_name)
        self._hand(env)
        return env

    def expect_devices(self, backend_names) -> None:
        """Tell the backends whose pool --devices locks that this process holds none of it yet
        (``ACCEL_DEVICE_<RESOURCE>`` empty): until it does, they touch no device."""
        if self.devices is None:
            return
        from accel_regress.core.devices import env_name
        for name in backend_names:
            resource = registry.get(name).device_resource
            if resource and resource not in self.devices.held and self.devices.ids_for(resource, name) is not None:
                self._hand({env_name(resource): ""})

    def _hand(self, env: Mapping[str, str]) -> None:
        for key, value in env.items():
            self._handed.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def close(self) -> None:
        """The session ends: its devices are let go and the environment it handed over is taken back."""
        if self.devices is not None:
            self.devices.release()
        for key, old in self._handed.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        self._handed.clear()

    def device(self, backend_name: str) -> Optional[str]:
        """The device this process holds for ``backend_name`` (None: none held, or no --devices)."""
        resource = registry.get(backend_name).device_resource
        held = self.devices.held.get(resource) if self.devices is not None and resource else None
        return held[0] if held else None


# The context of a script's runs (``standalone`` sets it up); a pytest session passes its own.
script = Context()


@dataclass
class Run:
    backend: str
    case: Case
    inputs_sha256: str
    duration_s: float = 0.0
    versions: dict = field(default_factory=dict)
    error: Optional[VerdictError | HarnessError] = None   # HarnessError: no verdict on the device (a FAIL at stage harness)
    skip: Optional[str] = None
    never: bool = False           # skip is a NotApplicable reason: the backend never runs this case
    report: dict = field(default_factory=dict)   # what the backend measured (backend_report), isolated or not
    _outputs: Optional[dict] = None
    context: Optional[Context] = field(default=None, repr=False, compare=False)   # whose observer sees it read

    @property
    def verdict(self) -> Optional[str]:
        """The run's own verdict before any comparison (None when outputs came back)."""
        if self.skip:
            return "SKIP"
        return self.error.verdict if self.error else None

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        __tracebackhide__ = True    # a failure points at the test's line, not here
        observer = self.context.observer if self.context is not None else None
        if observer is not None:
            observer(self)
        if self.skip:
            raise Unsupported(self.skip, never=self.never)
        if self.error is not None:
            # A run is read by every test of its case (hardware/core/run_memo.py): a traceback left
            # from an earlier reader would grow with each raise and keep that test's frames alive.
            raise self.error.with_traceback(None)
        return self._outputs

    def __getitem__(self, name: str) -> np.ndarray:
        __tracebackhide__ = True
        outputs = self.outputs
        if name not in outputs:
            raise Crash(f"{self.backend} returned no output {name!r} (it returned {', '.join(outputs) or 'nothing'})",
                        stage="run")
        return outputs[name]

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "case": self.case.to_json(), "inputs_sha256": self.inputs_sha256,
                "duration_s": round(self.duration_s, 6), "verdict": self.verdict,
                **({"fault_changed": self.report["fault_changed"]} if "fault_changed" in self.report else {})}


def backend_report(name: str) -> dict:
    """What a backend measured in its last run, beyond the outputs (qemu-rvv's cycles and codegen
    scan, FireSim's slot and console): its ``last_report`` (contracts.BackendOptional), in the process that ran it."""
    return {**(getattr(registry.get(name), "last_report", None) or {}), **_FAULT_EFFECT}


def invoke(job: Job, isolation=None) -> dict[str, np.ndarray]:
    """Run ``job`` in ``isolation`` (an accel_regress.core.isolation.Isolation), else in this process."""
    if isolation is not None:
        return isolation.run(job)
    unset = {k: v for k, v in job.process_env.items() if os.environ.get(k) != v}
    if unset:
        # This process may have fixed them already (another backend's run): a verdict then would
        # belong to another kernel path than the one the backend names.
        settings = " ".join(f"{k}={v}" for k, v in unset.items())
        raise Unsupported(f"{job.backend} needs {settings} set before its first use in a process; without "
                          f"isolation (ACCEL_ISOLATION=none) every backend shares this one: run it isolated, "
                          f"or export {settings}")
    os.environ.update(job.env)
    return execute(job)


_versions_seen: dict[str, dict] = {}


def versions_of(backend_name: str) -> dict:
    """A backend's versions, asked once per process (after its device is held, so the device's
    own facts are in them): they cannot change within a session."""
    if backend_name not in _versions_seen:
        try:
            _versions_seen[backend_name] = {k: str(v) for k, v in registry.get(backend_name).versions().items()}
        except Exception as exc:
            return {"error": f"{backend_name}.versions() raised {type(exc).__name__}: {exc}"}
    return _versions_seen[backend_name]


def _after_hang(backend_name: str, run: "Run", isolation) -> None:
    """Give the backend its reset hook (in a fresh worker when isolated); note a failed reset."""
    try:
        problem = isolation.reset(backend_name) if isolation is not None else registry.get(backend_name).reset()
    except Exception as exc:
        problem = f"{backend_name}.reset() raised {type(exc).__name__}: {exc}"
    if problem and run.error is not None:
        run.error.detail["reset"] = problem


def contract_error(backend_name: str, case: Case, outputs: Mapping[str, np.ndarray]) -> Optional[VerdictError]:
    """A FAIL when an output's dtype or shape breaks its family's contract (the golden module's
    ``output_contract(case)``): right values in a wrong dtype must not pass a comparison."""
    module = registry.module_for("family", case.op)
    declare = getattr(module, "output_contract", None)
    if declare is None:
        return None
    contract = declare(case)
    wrong = []
    for name, got in outputs.items():
        want = contract.get(name) or contract.get("*")
        if want is None:
            continue
        dtype, shape = want
        if got.dtype != np.dtype(dtype) or (shape is not None and tuple(got.shape) != tuple(shape)):
            expected = f"{dtype} {tuple(shape)}" if shape is not None else dtype
            wrong.append(f"{name}: expected {expected}, got {got.dtype} {tuple(got.shape)}")
    if not wrong:
        return None
    return VerdictError(f"{backend_name} broke the {case.op} output contract: {'; '.join(wrong)}",
                        stage="compare", detail={"contract": "; ".join(wrong)})


def run_case(backend_name: str, case: Case, inputs: Mapping[str, np.ndarray], *,
             fault: Optional[str] = None, timeout_s: Optional[float] = None,
             context: Optional[Context] = None, inputs_sha256: Optional[str] = None) -> Run:
    """One run of ``case`` on a backend; ``context``: the session's (None: the script's, ``script``).
    ``inputs_sha256``: ``sha256_of(inputs)`` when the caller has it already (the run memo's key):
    hashing the inputs again costs as much as the first time."""
    ctx = context if context is not None else script
    isolation, hang_guard = ctx.isolation, ctx.hang_guard
    backend = registry.get(backend_name)
    run = Run(backend_name, case, inputs_sha256 or sha256_of(inputs), context=ctx)
    reason = registry.availability(backend_name)
    if reason is None:
        reason = backend.supports_inputs(case) or backend.supports(case)
    if reason is not None:
        run.skip, run.never = f"{backend_name}: {reason}", isinstance(reason, NotApplicable)
        return run
    blocked = hang_guard.blocked(backend_name) if hang_guard is not None else None
    if blocked:
        run.skip = blocked
        return run
    env = ctx.device_env(backend_name)
    run.versions = versions_of(backend_name)
    bound = timeout_s or ctx.case_timeout or backend.timeout(case)
    if ctx.progress is not None:     # a script says what it waits for: a hang is never a silent minute
        ctx.progress(f"{backend_name} {case.id}: running (bound {bound:g} s; --case-timeout changes it)")
    process_env = getattr(backend, "process_env", None)
    job = Job(backend_name, case, dict(inputs), fault, bound, env, run.inputs_sha256,
              dict(process_env()) if process_env is not None else {})
    start = time.perf_counter()
    try:
        run._outputs = invoke(job, isolation)
        run.report = dict(getattr(isolation, "last_report", None) or {}) if isolation is not None \
            else backend_report(backend_name)
    except (VerdictError, HarnessError) as exc:
        run.error = exc.with_traceback(None)   # raised again where a test reads it: point there
    except Unsupported as exc:
        run.skip = f"{backend_name}: {exc}"
    except Exception as exc:
        run.error = Crash(f"{backend_name} raised {type(exc).__name__}: {exc}",
                          detail={"traceback": traceback.format_exc(limit=8)})
    run.duration_s = time.perf_counter() - start
    if run._outputs is not None:
        run.error = contract_error(backend_name, case, run._outputs)
        if run.error is not None:
            run._outputs = None
    if run.verdict == "HANG":
        _after_hang(backend_name, run, isolation)
    if hang_guard is not None and not (run.error and "injected_fault" in run.error.detail):
        hang_guard.record(backend_name, case.id, run.verdict)
    return run


def standalone(prog: str, fault: Optional[str] = None, backend: Optional[str] = None,
               timeout_s: Optional[float] = None, narrate: bool = True) -> Optional[int]:
    """Set up a script's runs (repros, ``python -m accel_regress sweep``) as the pytest plugin sets up a
    session's: the same isolated worker (hangs and crashes become verdicts, never a stalled or
    dead script), the same bounds (``$ACCEL_ISOLATION=none`` runs in this process, for a debugger).
    ``timeout_s``: the script's --case-timeout; ``narrate``: a line on stderr before each run.
    The fault is loaded first: one that cannot be loaded (a typo, a missing file, a broken module)
    is a usage error, said on stderr; the return value is then 2 (the exit status), else None."""
    script.case_timeout = timeout_s
    if narrate:      # a line on stderr before each run: a repro stuck on a hang says so while it waits
        script.progress = lambda message: print(f"{prog}: {message}", file=sys.stderr, flush=True)   # noqa: E731
    if fault:
        try:
            faults.load(fault)
        except (Exception, SystemExit) as exc:   # anything the fault file raises on import is a usage error
            print(f"{prog}: {exc}" if isinstance(exc, ValueError) else
                  f"{prog}: --inject-fault {fault}: cannot load it: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    if script.isolation is None and os.environ.get("ACCEL_ISOLATION", "process") != "none":
        import atexit

        from accel_regress.core.isolation import Bounds, Isolation
        from accel_regress.core.isolation.bounds import default_memory
        preload = [registry.KNOWN[backend].split(":")[0]] if backend in registry.KNOWN else []
        script.isolation = Isolation(Bounds(memory_bytes=default_memory()), preload=preload)
        atexit.register(script.isolation.close)
    return None


def memory_budget(context: Optional[Context] = None) -> Optional[int]:
    """Bytes one case may use: the isolated worker's bound, and never more than 80 % of this machine."""
    from accel_regress.core.isolation.bounds import default_memory
    isolation = (context if context is not None else script).isolation
    bounds = [b for b in (default_memory(), isolation and isolation.bounds.memory_bytes) if b]
    return min(bounds) if bounds else None
