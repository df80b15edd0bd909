"""Session state lives on its session (issue 28 item 4): pytester's inline sessions, one after
another inside this one, neither see each other's state (--repeat, records) nor take this
session's (its runner context, its records, its stop state)."""
import json

import pytest

from accel_regress.plugin import isolation, recording

pytest_plugins = ["pytester"]

SMALL = '''
import pytest
from accel_regress.families.gemm_partition_n import golden as gemm

pytestmark = pytest.mark.family(gemm.OP)
CFG = gemm.CI_CONFIGS[7]     # M64-K512-N256-...-P4

@pytest.fixture(scope="module")
def run(hw, golden_seed):
    case = gemm.make_case(CFG, golden_seed)
    return hw.run(case, gemm.make_inputs(case))

@pytest.mark.parametrize("part", range(2), ids=lambda p: f"C{p}")
def test_partition(run, part):
    assert run[f"C_{part}"].shape[0] >= CFG.M
'''
ARGS = ("--hw", "emu", "--isolation", "none", "-p", "no:cacheprovider", "--history", "none")


def _runs(pytester) -> dict:
    data = json.loads((pytester.path / "reports" / "results.json").read_text())
    return {c["test"]: len(c["runs"]) for c in data["cases"]}


def test_inline_sessions_keep_their_own_state_and_leave_this_ones(pytester, request):
    config = request.config
    context, records, stop = isolation.context(config), recording.recorder(config), isolation.stop(config)
    mine = records.current
    assert context.observer == records.observe and stop.phase == "running"

    pytester.makepyfile(test_small=SMALL)
    pytester.runpytest(*ARGS, "--repeat", "2").assert_outcomes(passed=2)
    assert _runs(pytester) == {"test_partition[emu-C0]": 2, "test_partition[emu-C1]": 2}   # each repetition read its run
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    assert _runs(pytester) == {"test_partition[emu-C0]": 1, "test_partition[emu-C1]": 1}   # no --repeat left over

    # This session's own state is as it was: the same context, observed by its own records, the
    # record of this test still the current one, its stop state untouched.
    assert isolation.context(config) is context and context.observer == records.observe
    assert recording.recorder(config) is records and records.current is mine and mine["nodeid"] == request.node.nodeid
    assert isolation.stop(config) is stop and stop.phase == "running" and stop.reason is None


def test_a_session_context_is_not_shared(pytester, request):
    """Two configs, two contexts: what one session sets up (its observer, isolated worker, locks)
    is never what another runs with."""
    inner = pytester.parseconfigure(*ARGS)
    try:
        assert isolation.context(inner) is not isolation.context(request.config)
        assert recording.recorder(inner) is not recording.recorder(request.config)
    finally:
        inner._ensure_unconfigure()


@pytest.mark.parametrize("given", ["--repeat=2", None])
def test_repetitions_are_per_session(pytester, given):
    from accel_regress.plugin import repeat
    config = pytester.parseconfigure(*ARGS, *([given] if given else []))
    try:
        config.pluginmanager.import_plugin("accel_regress.plugin.repeat")
        state = repeat.repetitions(config)
        assert (state.n if state else 1) == (2 if given else 1)
    finally:
        config._ensure_unconfigure()
