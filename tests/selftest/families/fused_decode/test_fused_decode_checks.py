"""The fused_decode family's input classes and per-step statistics each catch a fault of their own
(issue 29 item 6), and clean runs pass both over many seeds and every class.

Faults (tests/selftest/fixtures/fused/class_faults.py): ``rmsnorm_f16_squares`` only the shifted
class reaches, ``ftz_daz`` only the subnormal class; ``down_proj_truncated`` (the down projection's
bf16 output truncated instead of rounded to nearest) keeps every element within its allowance at
the model's sizes (K = 8192 widens it), and only the magnitude-bias statistic of compare mode
finds it, which the failure names. The output contract is shown by
test_fused_decode_pipeline.py::test_output_contract_names_every_buffer_in_bf16.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from accel_regress.core import runner
from accel_regress.families.fused_decode import golden as F
from accel_regress.golden import census

FIXTURE = Path(__file__).parents[2] / "fixtures" / "fused" / "class_faults.py"
_spec = importlib.util.spec_from_file_location("fused_class_faults", FIXTURE)
CF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(CF)


def _first(case, inputs, fault=None):
    out = runner.execute(runner.Job("emu", case, inputs))
    if fault is not None:
        out = fault(case, dict(out))
    return F.first_divergent(F.compare_steps(case, inputs, out))


def test_clean_emu_passes_every_class_and_statistic_over_20_seeds():
    for cls in F.CLASSES:
        for seed in range(20):
            case = F.make_case(F.SMALL, seed, inputs=cls)
            first = _first(case, F.make_inputs(case))
            assert first is None, (cls, seed, first.step.name, first.census.describe())


def test_class_inputs_are_what_they_say():
    shifted = F.make_inputs(F.make_case(F.SMALL, inputs="shifted"))
    subnormal = F.make_inputs(F.make_case(F.SMALL, inputs="subnormal"))
    x = np.asarray(shifted["x"], np.float64)
    assert abs(x.mean()) > 500 * x.std()
    xs = np.abs(np.asarray(subnormal["x"], np.float64))
    assert (xs < 2.0 ** -126).all() and (xs > 0).mean() > 0.9
    assert F.make_case(F.SMALL).id == f"{F.SMALL.id}-steps"       # the normal class keeps its ids and seeds
    assert F.make_case(F.SMALL, inputs="shifted").id == f"{F.SMALL.id}-shifted-steps"


@pytest.mark.parametrize("fault, reaches", [("rmsnorm_f16_squares", "shifted"), ("ftz_daz", "subnormal")])
def test_each_class_fault_is_caught_by_its_class_only(fault, reaches):
    for cls in F.CLASSES:
        case = F.make_case(F.SMALL, inputs=cls)
        first = _first(case, F.make_inputs(case), getattr(CF, fault))
        if cls == reaches:
            assert first is not None and first.step.name == "attn_norm", cls
        else:
            assert first is None, (cls, first.step.name, first.census.describe())


def test_statistics_alone_find_a_truncated_output_and_compare_mode_names_them():
    case = F.make_case(F.LLAMA_3_2_1B)
    inputs = F.make_inputs(case)
    clean = runner.execute(runner.Job("emu", case, inputs))
    assert F.first_divergent(F.compare_steps(case, inputs, clean)) is None
    bad = CF.down_proj_truncated(case, dict(clean))
    results = F.compare_steps(case, inputs, bad)
    first = F.first_divergent(results)
    assert first.step.name == "down_proj"
    assert first.census.over_tolerance == 0, "the per-element bound must not be what finds it"
    assert first.failed_statistics() == ["magnitude_bias"]
    # Per element alone (the allowance without the model's statistics) it passes.
    p = F.step_params(case, first.step)
    ins = [bad[n] if n in bad else inputs[n] for n in first.step.ins]
    ref = F.llama_ops.reference(first.step.op, p, ins)
    assert census(np.asarray(bad["d"], np.float64), ref, tol=F.llama_ops.tolerance(first.step.op, p, ins, ref)).ok
    text = str(F.PipelineMismatch(results))
    assert "first divergent step: down_proj" in text and "[statistics: magnitude_bias]" in text
    assert "magnitude bias (mean of sign(expected) * error)" in text and "FAILED" in text


def test_odd_block_catches_a_bf16_reciprocal_the_power_of_two_blocks_cannot():
    """Issue 29 item 10: every default block had n = 64 (1/n exact in bf16); the odd block (n = 48)
    is the case that catches RMSNorm's 1/n held in bf16, at the first norm."""
    fault = CF.rmsnorm_bf16_reciprocal
    for cls in F.CLASSES:
        case = F.make_case(F.SMALL, inputs=cls)
        assert _first(case, F.make_inputs(case), fault) is None, cls
    case = F.make_case(F.SMALL_ODD)
    inputs = F.make_inputs(case)
    assert _first(case, inputs) is None
    first = _first(case, inputs, fault)
    assert first is not None and first.step.name == "attn_norm"
