"""fused_decode's masked attention (issue 29 item 10): the padding-masked block (full, partly
masked and fully masked score rows) passes compare mode and end to end over many seeds on emu
(and on iree-cpu where IREE is installed), and two softmax faults that only a mask reaches
(tests/selftest/fixtures/tail_faults.py) fail its cases and nothing else of the default run."""
import re
from pathlib import Path

import numpy as np
import pytest

from accel_regress.core import registry
from accel_regress.families.fused_decode import golden as F

pytest_plugins = ["pytester"]

FAULTS = Path(__file__).parents[2] / "fixtures" / "tail_faults.py"
SUITE = Path(__file__).resolve().parents[3] / "test_fused_decode.py"


def test_mask_reaches_full_partial_and_empty_rows():
    case = F.make_case(F.SMALL_MASKED)
    m = np.asarray(F.make_inputs(case)["attn_mask"], np.float64)
    masked = np.isneginf(m).sum(axis=1)
    assert set(np.unique(m)) == {0.0, -np.inf}
    assert 0 in masked and m.shape[1] in masked and ((masked > 0) & (masked < m.shape[1])).any()
    assert np.isneginf(m[0]).sum() == 0            # head 0 keeps its attention sink
    assert F.block(case) == F.MASKED_BLOCK and F.block(F.make_case(F.SMALL)) == F.DECODE_BLOCK


@pytest.mark.parametrize("seed", range(20))
def test_masked_block_clean_over_seeds(seed, judge):
    case = F.make_case(F.SMALL_MASKED, seed)
    assert judge(case, F.make_inputs(case)) == (None, True)


@pytest.mark.parametrize("seed", range(3))
def test_masked_block_clean_on_iree_cpu(seed, judge):
    why = registry.get("iree-cpu").availability()
    if why:
        pytest.skip(why)
    case = F.make_case(F.SMALL_MASKED, seed)
    assert judge(case, F.make_inputs(case), backend="iree-cpu") == (None, True)


@pytest.mark.parametrize("fault", ["masked_row_nan", "mask_after_softmax"])
def test_mask_faults_fail_only_the_masked_cases(pytester, fault):
    pytester.makepyfile(test_fused=SUITE.read_text())
    result = pytester.runpytest("--hw", "emu", "-rf", "--inject-fault", f"{FAULTS}:{fault}")
    failed = {m.group(1) for m in map(re.compile(r"^FAILED (\S+)").match, result.outlines) if m}
    outcomes = result.parseoutcomes()
    assert len(failed) == 2 == outcomes["failed"] and all("small-masked" in f for f in failed), sorted(failed)
    assert outcomes["passed"] >= 6 and not outcomes.get("errors")
    result.stdout.fnmatch_lines(["*first divergent step: attn_softmax (masked_softmax -> probs)*"])
