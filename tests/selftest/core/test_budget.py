"""A simulator's default-run budget is decided at collection (issue 37's leftover, issue 39): a case
over it is ``large`` on simulators only, deselected there unless ``-m large`` (never a SKIP row,
never compiled ahead), and runs by default on every other backend."""
import pytest

pytest_plugins = ["pytester"]

FILE = '''
import pytest
from accel_regress.core.budget import on_simulators, simulator_budget

pytestmark = pytest.mark.family("gemm_partition_n")

@pytest.mark.parametrize("macs", [pytest.param(10, id="small", marks=simulator_budget(10)),
                                  pytest.param(10**7, id="big", marks=simulator_budget(10**7)),
                                  pytest.param(5, id="odd", marks=on_simulators("its steps run elsewhere"))])
def test_case(hw, macs):
    pass
'''


@pytest.fixture
def suite(pytester):
    pytester.makeconftest("pass")
    pytester.makepyfile(test_cases=FILE)
    return pytester


def _ids(res) -> set:
    return {line.split("::", 1)[1] for line in res.outlines if "::test_case[" in line}


def test_over_budget_cases_are_large_on_simulators_only(suite):
    for hw in ("qemu-rvv", "firesim"):
        res = suite.runpytest("--hw", f"emu,{hw}", "--collect-only", "-q")
        assert _ids(res) == {"test_case[emu-small]", "test_case[emu-big]", "test_case[emu-odd]",
                             f"test_case[{hw}-small]"}, res.outlines
        assert any("4/6 tests collected (2 deselected)" in line for line in res.outlines), res.outlines
        large = suite.runpytest("--hw", f"emu,{hw}", "--collect-only", "-q", "-m", "large")
        assert _ids(large) == {f"test_case[{hw}-big]", f"test_case[{hw}-odd]"}, large.outlines
        every = suite.runpytest("--hw", f"emu,{hw}", "--collect-only", "-q", "-m", "large or not large")
        assert len(_ids(every)) == 6


def test_the_budget_is_no_skip_row(suite):
    res = suite.runpytest("--hw", "emu,qemu-rvv", "--isolation", "none", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=4, deselected=2)
