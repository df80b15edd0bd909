"""The ``hw`` fixture (one backend, with the session's fault, seed and bound) and ``golden_seed``;
which (test, backend) pairs exist, and which SKIP before any input is made."""
from __future__ import annotations

from typing import Optional

import pytest

from accel_regress.golden.case import Case
from accel_regress.core import registry, runner
from accel_regress.core.errors import SetupError, Unsupported


class Hardware:
    """The ``hw`` fixture: one backend, with the session's fault and seed applied."""

    def __init__(self, name: str, config):
        self.name = name
        self.backend = registry.get(name)
        self.fault = config.getoption("inject_fault")
        self.golden_seed = config.getoption("golden_seed")
        self.case_timeout = config.getoption("case_timeout")

    def run(self, case: Case, inputs) -> runner.Run:
        return runner.run_case(self.name, case, inputs, fault=self.fault, timeout_s=self.case_timeout)

    def __repr__(self) -> str:
        return f"<hw {self.name}>"


def pytest_generate_tests(metafunc):
    if "hw" in metafunc.fixturenames:
        names = metafunc.config._accel_hw
        metafunc.parametrize("hw", names, ids=names, indirect=True, scope="module")


NOT_APPLICABLE = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """``-k`` / ``-m`` deselection first (three of four collected items are opt-in input classes or
    large cases), so that what runs after it on every item (pytest's fixture reordering, the
    NOT_APPLICABLE marking below, hypothesis) sees only the items that run. pytest's own functions
    deselect, in pytest's order, so the same items go; its own pass then finds nothing left to
    deselect. Runs after the expectations plugin's hook, which counts every collected test."""
    try:
        from _pytest.mark import deselect_by_keyword, deselect_by_mark
    except ImportError:         # a pytest without them: its own pass deselects, later
        pass
    else:
        deselect_by_keyword(items, config)
        deselect_by_mark(items, config)
    # Called from here: pytest registers only hook functions named pytest_*, so a second
    # pytest_collection_modifyitems under another name (specname) is never called.
    skip_what_a_backend_cannot_run(config, items)


def skip_what_a_backend_cannot_run(config, items):
    """A backend that cannot run a family at all SKIPs its tests before any input is made; so does
    one a test's ``backends(...)`` marker does not name (a check that is a stage of those only)."""
    said: dict[tuple, Optional[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        family = item.get_closest_marker("family")
        if callspec is None or "hw" not in callspec.params or family is None:
            continue
        key = (callspec.params["hw"], family.args[0])
        if key not in said:
            name, op = key
            reason = registry.availability(name)
            said[key] = (f"backend {name} unavailable: {reason}", False) if reason else (_op_reason(name, op), True)
        reason, never = said[key]
        stage_of = item.get_closest_marker("backends")
        if stage_of is not None and key[0] not in stage_of.args:
            reason, never = f"{item.originalname} is a stage of {', '.join(stage_of.args)} only", True
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
            if never:   # the backend can never run this family: NOT_APPLICABLE, not a SKIP that matters
                item.stash[NOT_APPLICABLE] = reason


def _op_reason(name: str, op: str) -> Optional[str]:
    reason = registry.get(name).supports_op(op)
    return f"{name}: {reason}" if reason else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except Unsupported as exc:
        if exc.never:    # the backend can never run this configuration: NOT_APPLICABLE, not a SKIP
            item.stash[NOT_APPLICABLE] = str(exc)
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def hw(request) -> Hardware:
    __tracebackhide__ = True    # a set-up error is about the installation, not this code
    name = request.param
    reason = registry.availability(name)
    if reason:
        pytest.skip(f"backend {name} unavailable: {reason}")
    missing = registry.get(name).missing_files()
    if missing:
        raise SetupError(f"backend {name} cannot be set up: its installation lacks {', '.join(missing)} "
                         f"(package data; reinstall the package that registers {name})")
    return Hardware(name, request.config)


@pytest.fixture(scope="session")
def golden_seed(request) -> int:
    return request.config.getoption("golden_seed")
