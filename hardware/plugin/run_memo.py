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
from typing import TYPE_CHECKING, Mapping, Optional

import pytest

from accel_regress.core.run_memo import RunMemo

if TYPE_CHECKING:        # the runner and the goldens load when a case first runs, not at start-up
    import numpy as np

    from accel_regress.golden.case import Case

active: Optional[RunMemo] = None
_module: Optional[str] = None       # the test module whose test is running (the memo's tag)


def default_budget() -> float:
    env = os.environ.get("ACCEL_RUN_MEMO_BYTES")
    if env:
        from accel_regress.core.isolation.bounds import parse_size
        try:
            size = parse_size(env)
        except ValueError as exc:
            raise pytest.UsageError(f"$ACCEL_RUN_MEMO_BYTES={env!r}: {exc}") from None
        return float("inf") if size is None else size
    from accel_regress.core import runner
    bound = runner.memory_budget() or 8 << 30
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return bound // 4 // max(1, workers)


def pytest_configure(config):
    global active
    config._accel_saved_memo = active
    active = None


@pytest.hookimpl(trylast=True)     # after the isolation plugin has set the worker's memory bound
def pytest_accel_regress_engaged(config):
    global active
    active = RunMemo(default_budget())      # the runner (and numpy) load only in the plugin's sessions


def pytest_unconfigure(config):
    global active
    if hasattr(config, "_accel_saved_memo"):
        active = config._accel_saved_memo


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    global _module
    _module = item.module.__name__ if getattr(item, "module", None) is not None else None


def pytest_runtest_teardown(item, nextitem):
    # Module-scoped fixtures are torn down when the module changes; the memo lets go with them.
    module = item.module.__name__ if getattr(item, "module", None) is not None else None
    if active is not None and module and (nextitem is None or getattr(nextitem, "module", None) is None
                                          or nextitem.module.__name__ != module):
        active.release(module)


def _device(backend: str) -> Optional[str]:
    from accel_regress.core import registry, runner
    locks, resource = runner.devices, registry.get(backend).device_resource
    held = locks.held.get(resource) if locks is not None and resource else None
    return held[0] if held else None


def _repetition() -> Optional[int]:
    from accel_regress.plugin import repeat
    return repeat._index if repeat._repeat > 1 else None


def run_case(backend: str, case: Case, inputs: Mapping[str, np.ndarray], *,
             fault: Optional[str] = None, timeout_s: Optional[float] = None):
    """``runner.run_case``, once per distinct case: later asks get the first run's result."""
    from accel_regress.core import runner
    from accel_regress.golden.inputs import sha256_of
    def run():
        return runner.run_case(backend, case, inputs, fault=fault, timeout_s=timeout_s)
    if active is None:
        return run()
    rest = (case.key, sha256_of(inputs), fault, timeout_s, _repetition())
    return active.get_or_run((backend, _device(backend)) + rest, run, _module,
                             key_after=lambda: (backend, _device(backend)) + rest)
