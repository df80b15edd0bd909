"""Each distinct case runs once per pytest process (under xdist: once per xdist worker), whatever
the test layout: ``hw.run`` asks the session's memo (accel_regress.core.run_memo) first.

What a test module made or used is let go (held weakly) once pytest moves on to another module;
the memo's byte budget bounds the rest: ``$ACCEL_RUN_MEMO_BYTES``, by default a quarter of the
isolated worker's memory bound (``--worker-memory``), shared by the xdist workers. ``-p no:accel_regress.plugin.run_memo``
turns it off (every ask runs the backend, as a module fixture set up again would).

With ``--repeat N`` a fixture's ask is N runs at once (remembered as one set) and a test body's
ask in repetition i is remembered per repetition: every repetition still runs the device.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional

import pytest

from accel_regress.core.run_memo import RunMemo

if TYPE_CHECKING:        # the runner and the goldens load when a case first runs, not at start-up
    import numpy as np

    from accel_regress.golden.case import Case

@dataclass
class SessionMemo:
    """This session's memo (None until the session engages) and the test module now running (its tag)."""
    memo: Optional[RunMemo] = None
    module: Optional[str] = None


_MEMO = pytest.StashKey[SessionMemo]()


def _state(config) -> SessionMemo:
    return config.stash.setdefault(_MEMO, SessionMemo())


def memo(config) -> Optional[RunMemo]:
    """The session's run memo (None: not engaged, or this plugin turned off)."""
    return config.stash[_MEMO].memo if _MEMO in config.stash else None


def default_budget(context=None) -> float:
    env = os.environ.get("ACCEL_RUN_MEMO_BYTES")
    if env:
        from accel_regress.core.isolation.bounds import parse_size
        try:
            size = parse_size(env)
        except ValueError as exc:
            raise pytest.UsageError(f"$ACCEL_RUN_MEMO_BYTES={env!r}: {exc}") from None
        return float("inf") if size is None else size
    from accel_regress.core import runner
    bound = runner.memory_budget(context) or 8 << 30
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return bound // 4 // max(1, workers)


def pytest_configure(config):
    config.stash[_MEMO] = SessionMemo()


@pytest.hookimpl(trylast=True)     # after the isolation plugin has set the worker's memory bound
def pytest_accel_regress_engaged(config):
    from accel_regress.plugin import isolation
    # the runner (and numpy) load only in the plugin's sessions
    _state(config).memo = RunMemo(default_budget(isolation.context(config)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _state(item.config).module = item.module.__name__ if getattr(item, "module", None) is not None else None


def pytest_runtest_teardown(item, nextitem):
    # Module-scoped fixtures are torn down when the module changes; the memo lets go with them.
    module = item.module.__name__ if getattr(item, "module", None) is not None else None
    active = memo(item.config)
    if active is not None and module and (nextitem is None or getattr(nextitem, "module", None) is None
                                          or nextitem.module.__name__ != module):
        active.release(module)


def run_case(config, backend: str, case: Case, inputs: Mapping[str, np.ndarray], *,
             fault: Optional[str] = None, timeout_s: Optional[float] = None):
    """``runner.run_case`` with the session's context (and --repeat), once per distinct case:
    later asks get the first run's result."""
    from accel_regress.core import runner
    from accel_regress.golden.inputs import sha256_of
    from accel_regress.plugin import isolation
    from accel_regress.plugin import repeat as repeating   # numpy is loaded by now: a case is running
    context = isolation.context(config)
    repeat = repeating.repetitions(config)
    state = _state(config)
    digest = sha256_of(inputs) if state.memo is not None else None    # the key's, handed to the run too

    def one():
        return runner.run_case(backend, case, inputs, fault=fault, timeout_s=timeout_s, context=context,
                               inputs_sha256=digest)

    def run():
        if repeat is None:
            return one()
        return repeating.run_case(repeat, context, one)
    if state.memo is None:
        return run()
    rest = (case.key, digest, fault, timeout_s, repeat.index if repeat is not None else None)
    return state.memo.get_or_run((backend, context.device(backend)) + rest, run, state.module,
                                 key_after=lambda: (backend, context.device(backend)) + rest)

