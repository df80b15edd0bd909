"""``--repeat N``: run every suite case N times, to catch intermittent bugs (iree-amd-aie's CI saw 2
wrong results in 1000 runs).

Every backend run of a case happens N times, alternating between the warm isolated worker (runs
1, 3, 5 ...) and a freshly started one (runs 2, 4 ...), so state a worker keeps between cases (a
device handle, a cache, a leaked buffer) and state a fresh process rebuilds both get their chance;
the test body then runs N times, repetition i checking the outputs of run i. A run made in a
(module-scoped) fixture is made N times at once and handed to the body as a ``Repeated`` run; a
run the body makes itself is made once per repetition. The outcomes decide:
- all the same: the case's verdict is that outcome (the first failure is reported as it was);
- mixed: the verdict is FLAKY, with its rate k of N (k = runs that did not pass), which runs and
  workers failed how, and what differed between a failing and a passing run: outputs element by
  element (with the census's Where), inputs, versions, time. The gate blocks a new FLAKY like a
  new FAIL.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pytest

from accel_regress.core import runner, verdicts
from accel_regress.core.errors import Unsupported, VerdictError


class Flaky(VerdictError):
    """Mixed outcomes over --repeat; ``detail['repeat']`` holds the rate and what differed."""
    verdict = verdicts.FLAKY
    default_stage = "compare"


# Its option (--repeat) is declared with the core's (plugin/options.py): this plugin is registered
# only once a session is the plugin's (plugin/engagement.py).


@dataclass
class Repetitions:
    """This session's --repeat: how many runs of each case, and the repetition the test body is in."""
    n: int = 1
    index: Optional[int] = None      # None: outside any test body


_REPETITIONS = pytest.StashKey[Repetitions]()


def repetitions(config) -> Optional[Repetitions]:
    """This session's --repeat (None: the plugin is not registered, or --repeat 1)."""
    state = config.stash.get(_REPETITIONS, None)
    return state if state is not None and state.n > 1 else None


def pytest_configure(config):
    n = config.getoption("accel_repeat")
    if n < 1:
        raise pytest.UsageError(f"--repeat: must be 1 or more, not {n}")
    config.stash[_REPETITIONS] = Repetitions(n)


class Repeated:
    """N runs of one case; reads as the run of the repetition the test body is in."""

    def __init__(self, runs: list, state: Repetitions):
        self.runs = runs
        self.state = state

    def current(self):
        index = self.state.index
        return self.runs[index if index is not None and index < len(self.runs) else 0]

    def __getattr__(self, name):
        return getattr(self.current(), name)

    def __getitem__(self, name):
        return self.current()[name]


def run_case(state: Repetitions, context: runner.Context, run: Callable[[], runner.Run]):
    """``run()`` (one backend run) as --repeat makes it: once in a test body (the body itself runs N
    times), else N times alternating the warm and a fresh worker, as one ``Repeated``."""
    if state.index is not None:      # the body's own call, once per repetition
        return run()
    runs = []
    for i in range(state.n):
        if i % 2 == 1:
            _fresh_worker(context)
        one = run()
        if one.skip:                 # cannot run here: one SKIP, not N
            return one
        runs.append(one)
    return Repeated(runs, state)


@dataclass
class Outcome:
    n: int
    worker: str                  # "same", "fresh" or "in-process"
    verdict: str
    exc: Optional[BaseException] = None
    runs: list = field(default_factory=list)       # accel_regress.core.runner.Run objects the body touched
    seconds: float = 0.0

    def to_json(self) -> dict:
        first = (str(self.exc).strip().splitlines() or [""])[0][:200] if self.exc is not None else ""
        return {"run": self.n, "worker": self.worker, "verdict": self.verdict, "seconds": round(self.seconds, 4),
                "message": first}


def _verdict_of(exc: Optional[BaseException]) -> str:
    if exc is None:
        return verdicts.PASS
    if isinstance(exc, VerdictError):
        return exc.verdict
    if isinstance(exc, (Unsupported, pytest.skip.Exception)):
        return verdicts.SKIP
    return verdicts.FAIL


def _fresh_worker(context: runner.Context) -> str:
    iso = context.isolation
    if iso is None:
        return "in-process"
    iso.retire_worker()
    return "fresh"


def _run_once(context: runner.Context, original, n: int, fresh: bool) -> Outcome:
    worker = _fresh_worker(context) if fresh else ("same" if context.isolation is not None else "in-process")
    seen: list = []
    outer = context.observer

    def observe(run):
        if all(r is not run for r in seen):
            seen.append(run)
        if outer is not None:
            outer(run)
    context.observer = observe
    start = time.perf_counter()
    exc = None
    try:
        original()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:           # noqa: BLE001 - every outcome of the body is a verdict here
        exc = e
    finally:
        context.observer = outer
    return Outcome(n, worker, _verdict_of(exc), exc, seen, time.perf_counter() - start)


def _outputs(o: Outcome) -> dict:
    out = {}
    for run in o.runs:
        for name, a in (run._outputs or {}).items():
            out.setdefault(name, a)
    return out


def differences(bad: Outcome, good: Outcome) -> list[str]:
    """What differed between a failing and a passing run, in a few lines."""
    from accel_regress.golden.compare import census
    lines = []
    if bad.worker != good.worker:
        lines.append(f"worker: {bad.worker} in run {bad.n}, {good.worker} in run {good.n}")
    b_in = sorted(r.inputs_sha256 for r in bad.runs)
    g_in = sorted(r.inputs_sha256 for r in good.runs)
    if b_in != g_in:
        lines.append(f"inputs differ (sha256 {', '.join(x[:12] for x in b_in)} vs {', '.join(x[:12] for x in g_in)})")
    b_v = bad.runs[0].versions if bad.runs else {}
    g_v = good.runs[0].versions if good.runs else {}
    for key in sorted(set(b_v) | set(g_v)):
        if b_v.get(key) != g_v.get(key):
            lines.append(f"versions: {key} {b_v.get(key)} vs {g_v.get(key)}")
    errors = [r.error for r in bad.runs if r.error is not None]
    if errors:
        lines.append(f"run {bad.n}'s backend run ended {errors[0].verdict}: "
                     f"{(errors[0].message.splitlines() or [''])[0][:160]}")
    b_out, g_out = _outputs(bad), _outputs(good)
    for name in sorted(set(b_out) | set(g_out)):
        if name not in b_out or name not in g_out:
            lines.append(f"output {name}: only in run {bad.n if name in b_out else good.n}")
            continue
        x, y = np.asarray(b_out[name]), np.asarray(g_out[name])
        if x.shape != y.shape or x.dtype != y.dtype:
            lines.append(f"output {name}: {x.dtype}{list(x.shape)} in run {bad.n}, {y.dtype}{list(y.shape)} in run {good.n}")
            continue
        c = census(x.astype(np.float64), y.astype(np.float64), name=name)
        if c.differ:
            lines.append(f"output {name}: {c.differ} of {c.elements} elements differ between runs {bad.n} and "
                         f"{good.n}, largest by {c.max_abs:.6g} at {c.max_abs_index}; where: {c.where()}")
    if bad.runs and good.runs:
        lines.append(f"backend time: {sum(r.duration_s for r in bad.runs):.3f} s in run {bad.n}, "
                     f"{sum(r.duration_s for r in good.runs):.3f} s in run {good.n}")
    return lines


def decide(outcomes: list[Outcome]) -> Optional[BaseException]:
    """None when every run passed; the first failure when all failed alike; else a Flaky."""
    kinds = {o.verdict for o in outcomes}
    if kinds == {verdicts.PASS}:
        return None
    if len(kinds) == 1:
        exc = outcomes[0].exc
        note = f"--repeat {len(outcomes)}: {outcomes[0].verdict} in every run"
        if hasattr(exc, "add_note") and note not in getattr(exc, "__notes__", ()):   # a shared run's error: once
            exc.add_note(note)
        return exc
    n = len(outcomes)
    failed = [o for o in outcomes if o.verdict != verdicts.PASS]
    passed = [o for o in outcomes if o.verdict == verdicts.PASS]
    first = failed[0]
    differed = differences(first, passed[0]) if passed else []
    runs = "; ".join(f"run {o.n} ({o.worker} worker) {o.verdict}" for o in failed)
    head = (f"FLAKY {len(failed)}/{n}: {runs}; the other {n - len(failed)} passed" if passed else
            f"FLAKY: outcomes differ over {n} runs: " + "; ".join(f"run {o.n} ({o.worker}) {o.verdict}" for o in outcomes))
    first_msg = str(first.exc).strip().splitlines() if first.exc is not None else []
    message = "\n".join([head] + [f"what differed: {d}" for d in differed] +
                        ([f"run {first.n}'s failure:"] + first_msg[:14] if first_msg else []))
    detail = {"repeat": {"runs": n, "failed": len(failed), "rate": f"{len(failed)}/{n}",
                         "outcomes": [o.to_json() for o in outcomes], "differed": differed}}
    flaky = Flaky(message, stage=getattr(first.exc, "stage", None) or "compare", detail=detail)
    flaky.__cause__ = first.exc          # the failing run's census and heatmap stay reachable
    census = getattr(first.exc, "census", None)
    if census is not None:
        flaky.census = census
    return flaky


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    state = repetitions(item.config)
    if state is None or "hw" not in getattr(item, "fixturenames", ()):
        return (yield)
    from accel_regress.plugin import isolation
    context = isolation.context(item.config)
    original = item.runtest

    def repeated():
        outcomes = []
        try:
            for i in range(state.n):
                state.index = i
                outcome = _run_once(context, original, i + 1, fresh=i % 2 == 1)
                if i == 0 and outcome.verdict == verdicts.SKIP:
                    raise outcome.exc          # a case that cannot run here is a SKIP, not N of them
                outcomes.append(outcome)
        finally:
            state.index = None
        exc = decide(outcomes)
        if exc is not None:
            raise exc

    item.runtest = repeated
    try:
        return (yield)
    finally:
        del item.runtest
