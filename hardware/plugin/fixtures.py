"""The ``hw`` fixture (one backend, with the session's fault, seed and bound) and ``golden_seed``;
which (test, backend) pairs exist, which opt-in cases are generated at all, and which SKIP before
any input is made. Only the plugin's own tests (plugin/engagement.py) are parametrized, filtered
or deselected here: a project's own ``hw`` fixture or argument, and its own ``large`` tests, are
its own."""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pytest

from accel_regress.core.errors import SetupError
from accel_regress.plugin import engagement, run_memo, selection

if TYPE_CHECKING:
    from accel_regress.core import runner
    from accel_regress.golden.case import Case


class Hardware:
    """The ``hw`` fixture: one backend, with the session's fault and seed applied."""

    def __init__(self, name: str, config):
        from accel_regress.core import registry
        self.name = name
        self.config = config
        self.backend = registry.get(name)
        self.fault = config.getoption("accel_inject_fault")
        self.golden_seed = config.getoption("accel_golden_seed")
        self.case_timeout = config.getoption("accel_case_timeout")

    def run(self, case: Case, inputs) -> runner.Run:
        return run_memo.run_case(self.config, self.name, case, inputs, fault=self.fault, timeout_s=self.case_timeout)

    def __repr__(self) -> str:
        return f"<hw {self.name}>"


def _ours(metafunc) -> bool:
    """The test takes the plugin's ``hw`` (not a project's own fixture or argument of that name)."""
    return engagement.uses_own_fixture(metafunc, "hw") and not engagement.parametrized_directly(metafunc.definition, "hw")


def pytest_generate_tests(metafunc):
    if "hw" in metafunc.fixturenames and _ours(metafunc):
        engagement.engage(metafunc.config)      # the fork server starts while the rest is collected
        names = selection.selected(metafunc.config)
        metafunc.parametrize("hw", names, ids=names, indirect=True, scope="module")


# pytest registers only functions named pytest_*: a second implementation of a hook in this module
# is named pytest_<hook>_<what it does>, with specname.
@pytest.hookimpl(wrapper=True, specname="pytest_generate_tests")
def pytest_generate_tests_only_what_is_selected(metafunc):
    """The opt-in cases (``large``, ``input_classes``: three of four of the suite's) become items
    only when ``-m`` names their marker, instead of being made and then deselected."""
    result = yield
    config = metafunc.config
    if engagement.engaged(config) and (_ours(metafunc) or engagement.family_of(metafunc.definition)):
        calls = metafunc._calls
        keep = [c for c in calls if not selection.opt_in_unwanted(config, {m.name for m in c.marks})]
        if keep and len(keep) < len(calls):     # none left: pytest's own deselection says so
            metafunc._calls = keep
    return result


NOT_APPLICABLE = pytest.StashKey[str]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The plugin's opt-in cases that ``-m`` does not name are deselected (the rest of ``-m`` is
    pytest's, unchanged, for every test). Then ``-k`` / ``-m`` over the plugin's items first, so
    that what runs after it on every item (pytest's fixture reordering, the NOT_APPLICABLE marking
    below, hypothesis) sees only the items that run; pytest's own functions, in pytest's order, so
    the same items go, and its own pass later finds none of them left to deselect. Runs after the
    expectations plugin's hook, which counts every collected test."""
    ours = engagement.claim(config, items)
    if not ours:
        return
    _check_contracts(ours)
    for item in ours:
        _mark_large_on(item)
    out = [i for i in ours if selection.opt_in_unwanted(config, {m.name for m in i.iter_markers()})]
    if out:
        config.hook.pytest_deselected(items=out)
    gone = set(out)
    kept = [i for i in ours if i not in gone]
    try:
        from _pytest.mark import deselect_by_keyword, deselect_by_mark
    except ImportError:         # a pytest without them: its own pass deselects, later
        pass
    else:
        deselect_by_keyword(kept, config)
        deselect_by_mark(kept, config)
    still = set(kept)
    gone.update(i for i in ours if i not in still)
    if gone:
        items[:] = [i for i in items if i not in gone]


def _mark_large_on(item) -> None:
    """A case ``large_on`` its item's backend (a kind or a name: core/budget.py) is a ``large``
    case there, so ``-m`` selects it as one."""
    mark = item.get_closest_marker("large_on")
    callspec = getattr(item, "callspec", None)
    if mark is None or callspec is None or "hw" not in callspec.params:
        return
    from accel_regress.core import budget, registry
    name = callspec.params["hw"]
    try:
        kind = registry.get(name).kind
    except Exception:          # an unknown name: the hw fixture says so when the item runs
        return
    if budget.large_on(mark, name, kind):
        item.add_marker(pytest.mark.large)


def _check_contracts(items) -> None:
    """Every registered module of the families collected (golden, emu model, IREE program, ...)
    loaded and checked against its Protocol (core/contracts.py) now, before any case: a broken one
    is one usage error naming the registration, the member and what it should be, never a FAIL
    per case. Here, not at engagement: an error raised while a module is collected is that
    module's collection error, one raised from this hook ends the session with exit 4. (An xdist
    controller, which collects nothing, checks every family when it engages: plugin/options.py.)"""
    check_contracts({op for op in map(engagement.family_of, items) if op is not None})


def check_contracts(ops) -> None:
    from accel_regress.core import contracts, registry
    ops = sorted(ops)
    problems = []
    for kind in contracts.CONTRACTS:
        if kind == "backend":       # a backend is checked when it is made (registry.get)
            continue
        try:
            regs = registry.registrations(kind)
        except registry.RegistrationError as exc:
            problems.append(str(exc))
            continue
        for op in ops:
            if op in regs:
                try:
                    registry.module_for(kind, op)
                except registry.RegistrationError as exc:
                    problems.append(str(exc))
    if problems:
        raise pytest.UsageError("accel-regress registrations: " + "\n".join(dict.fromkeys(problems)))


@pytest.hookimpl(specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_skip_what_a_backend_cannot_run(config, items):
    """A backend that cannot run a family at all SKIPs its tests before any input is made; so does
    one a test's ``backends(...)`` marker does not name (a check that is a stage of those only)."""
    if not engagement.engaged(config):
        return
    from accel_regress.core import registry
    said: dict[tuple, Optional[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        family = item.get_closest_marker("family")
        if callspec is None or "hw" not in callspec.params or family is None or not engagement.is_ours(item):
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
    from accel_regress.core import registry
    reason = registry.get(name).supports_op(op)
    return f"{name}: {reason}" if reason else None


@pytest.fixture(scope="module")
def hw(request) -> Hardware:
    __tracebackhide__ = True    # a set-up error is about the installation, not this code
    from accel_regress.core import registry
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
    return request.config.getoption("accel_golden_seed")
