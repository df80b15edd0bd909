"""Compile ahead (``--accel-compile-ahead N``): when collection ends, the compiles the session's
cases need start on N threads while the first cases run, instead of one at a time as each case
reaches its program.

A test module says what its items' cases are by declaring its case fixtures (``case``, and any
other case a test runs) with ``case_fixture``: a fixture whose value is a pure function of the
item's parameters, ``golden_seed`` and other case fixtures, so the plugin may call the same
function at collection; a family needs no other hook. Items it cannot read (another fixture in
the signature, a case built inside the test) compile when they run, as before. Each backend decides what it builds ahead
(``Backend.ahead``; the IREE backends batch their programs: hardware/toolchains/iree/ahead.py).
Skipped items (an unavailable backend, a known hang not attempted, a case the backend does not
support) get nothing built.

Jobs start in the order of the first item each serves. When the session ends (after ``-x`` and
interruptions too) the jobs not started are dropped, the compiles running are killed and the
threads start no more (hardware/util/children.py); a case never waits on a job longer than its
own compile bound (compiler.claim).
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Callable, Optional

import pytest

from accel_regress.plugin import engagement
from accel_regress.util import children

CASE_FIXTURE = "__accel_case_fixture__"


def case_fixture(func: Optional[Callable] = None, *, scope: str = "module"):
    """``@case_fixture`` on a fixture whose value is a case a test runs (the module's ``case``;
    another, e.g. a case built from ``case`` or from a function-level parameter, with
    ``scope="function"``), instead of ``@pytest.fixture``: its arguments are the item's
    parameters (an indirect one as given to ``pytest.param``), ``golden_seed`` and other case
    fixtures, and it makes no other use of them, so compile ahead may call it at collection."""
    def declare(f: Callable) -> Callable:
        setattr(f, CASE_FIXTURE, True)
        return pytest.fixture(scope=scope)(f)   # type: ignore[call-overload]
    return declare(func) if func is not None else declare


def lanes(config) -> int:
    """Threads for compile ahead: the option's N, else (auto) the CPUs this process may use."""
    value = config.getoption("accel_compile_ahead")
    if value not in (None, "auto"):
        return int(value)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, cpus // max(1, workers))


def _cases_of(item, seed: int, made: dict) -> list:
    """The cases of the item's case fixtures, each through the same function its fixture calls;
    one that cannot be said (an argument that is neither a parameter, ``golden_seed`` nor another
    case fixture; a fixture that raises) is left out."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return []
    missing = object()

    def value(name: str, depth: int = 0):
        if name == "golden_seed":
            return seed
        if name in callspec.params:
            return callspec.params[name]
        fixture = defs.get(name)
        if not fixture or not getattr(fixture[-1].func, CASE_FIXTURE, False) or depth > 8:
            return missing
        args = {a: value(a, depth + 1) for a in fixture[-1].argnames}
        if any(v is missing for v in args.values()):
            return missing
        key = (fixture[-1].func, tuple(sorted((k, repr(v)) for k, v in args.items())))
        if key not in made:
            try:
                made[key] = fixture[-1].func(**args)
            except Exception:       # the fixture raises again when the item runs, and says so there
                made[key] = missing
        return made[key]

    out = []
    for name in item.fixturenames:
        fixture = defs.get(name)
        if fixture and getattr(fixture[-1].func, CASE_FIXTURE, False):
            case = value(name)
            if case is not missing:
                out.append(case)
    return out


def _attempted(item) -> bool:
    from accel_regress.plugin import expectations
    return item.get_closest_marker("skip") is None and not expectations.nothing_to_build(item)


def _plannable(backend, case, *, alone: bool) -> bool:
    """Whether ``case`` can be built ahead: the backend supports it and (``alone``) planning it
    raises nothing. A family's code that raises here (its program(), its supports) is left out
    of the plan, never the session's INTERNALERROR: it raises again when its case runs, and the
    case reports it (issue 47 defect 6)."""
    try:
        if backend.supports(case) is not None or backend.supports_inputs(case) is not None:
            return False
        if alone:
            backend.ahead([case])
        return True
    except Exception:
        return False


def plan(config, items) -> list[tuple[int, Callable[[], None], str]]:
    """Every backend's jobs for the items' cases, in the order of the first item each serves, each
    with what it builds in words (the backend and its first case: the live status names it)."""
    from accel_regress.core import registry
    seed = config.getoption("accel_golden_seed")
    made: dict = {}
    per_backend: dict[str, tuple[list, list[int]]] = {}
    for position, item in enumerate(items):
        callspec = getattr(item, "callspec", None)
        if callspec is None or "hw" not in callspec.params or not engagement.is_ours(item) or not _attempted(item):
            continue
        cases, positions = per_backend.setdefault(callspec.params["hw"], ([], []))
        for case in _cases_of(item, seed, made):
            if case not in cases[-4:]:      # the items of one case come together
                cases.append(case)
                positions.append(position)
    out: list[tuple[int, Callable[[], None], str]] = []
    for name, (cases, positions) in per_backend.items():
        if registry.availability(name) is not None:
            continue
        backend = registry.get(name)
        runnable = [i for i, c in enumerate(cases) if _plannable(backend, c, alone=False)]
        try:
            jobs = backend.ahead([cases[i] for i in runnable])
        except Exception:       # a family's program() that raises: leave its cases out, keep the rest
            runnable = [i for i in runnable if _plannable(backend, cases[i], alone=True)]
            jobs = backend.ahead([cases[i] for i in runnable])
        out += [(positions[runnable[index]], job, f"{name} {cases[runnable[index]].id}") for index, job in jobs]
    out.sort(key=lambda job: job[0])
    return out


class Ahead:
    """The session's compile-ahead threads: they take jobs in order until none is left or the
    session ends. What they are building, and how many are left, is read by the live status."""

    def __init__(self, jobs: list[Callable[[], None]], threads: int, labels: Optional[list[str]] = None):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        for job, label in zip(jobs, labels or [""] * len(jobs)):
            self.jobs.put((job, label))
        self.total, self.finished = len(jobs), 0
        self.building: dict[int, str] = {}      # thread ident -> what it builds now
        self._count = threading.Lock()
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._work, name=f"accel-compile-ahead-{i}", daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def _work(self) -> None:
        try:
            while not self.stopped.is_set():
                try:
                    job, label = self.jobs.get_nowait()
                except queue.Empty:
                    return
                self.building[threading.get_ident()] = label
                try:
                    job()
                except Exception:       # a job never fails a session: its case builds and reports it
                    pass
                finally:
                    self.building.pop(threading.get_ident(), None)
                    with self._count:
                        self.finished += 1
        finally:
            children.forget()

    def stop(self) -> None:
        self.stopped.set()
        children.stop({t.ident for t in self.threads if t.ident is not None})
        for t in self.threads:
            t.join(timeout=30)


_AHEAD = pytest.StashKey[Optional[Ahead]]()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    config = session.config
    if not engagement.engaged(config) or config.option.collectonly or not session.items:
        return
    if getattr(config, "workerinput", None) is None and config.pluginmanager.hasplugin("dsession"):
        return      # an xdist controller runs no case; its workers compile ahead for theirs
    threads = lanes(config)
    if threads <= 0:
        return
    planned = plan(config, session.items)
    if planned:
        config.stash[_AHEAD] = Ahead([job for _, job, _ in planned], min(threads, len(planned)),
                                     [label for _, _, label in planned])


def progress(config) -> Optional[tuple[int, int, list[str]]]:
    """The compiles ahead: (finished, total, what is building now), or None when there are none."""
    ahead = config.stash.get(_AHEAD, None)
    if ahead is None:
        return None
    return ahead.finished, ahead.total, [label for label in list(ahead.building.values()) if label]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    ahead = session.config.stash.get(_AHEAD, None)
    if ahead is not None:
        ahead.stop()
        session.config.stash[_AHEAD] = None
