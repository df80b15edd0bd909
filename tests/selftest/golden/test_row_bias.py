"""The row statistic (golden/statistics.py ``row_bias``, issue 49 item 4): an error shared by a whole
row, which no element and no whole-output statistic shows with a margin, is caught by it with at
least 3x its allowance, and clean emu stays well under it. Mutants: tests/selftest/fixtures/
reduction_mutants.py ``lsm_max_plus_log`` (x - (max + log sum), pytorch/pytorch#38839) on the
default run's shifted log_softmax rows, ``rms_inv_bf16`` (inverse RMS in bf16, amd/IRON PR #139)
on its RMSNorm rows.
"""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from accel_regress.core import runner
from accel_regress.families.f32_reduction import golden as R
from accel_regress.golden import census

_spec = importlib.util.spec_from_file_location("reduction_mutants", Path(__file__).parents[1] / "fixtures" / "reduction_mutants.py")
RM = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(RM)
SEEDS = range(10)


def _row_bias(case, fault=None):
    ins = R.make_inputs(case)
    ref = R.reference(case, ins)
    tol = R.tolerances(case, ins, ref)
    got = runner.execute(runner.Job("emu", case, ins))
    if fault is not None:
        got = fault(case, dict(got))
    c = census(np.asarray(got["y"], np.float64), ref["y"], tol=tol["y"])
    return c, c.stats["row_bias"]


@pytest.mark.parametrize("kind, shape, cls, mutant", [
    ("log_softmax", (64, 64), "shifted", "lsm_max_plus_log"),
    ("rmsnorm", (64, 128), "normal", "rms_inv_bf16"),
    ("rmsnorm", (4, 33), "shifted", "rms_inv_bf16")])
def test_a_per_row_constant_is_caught_with_a_margin_and_clean_rows_are_not(kind, shape, cls, mutant):
    for seed in SEEDS:
        case = R.make_case(kind, shape, base_seed=seed, inputs=cls)
        clean, rb = _row_bias(case)
        assert clean.ok and rb["ratio"] < 0.5, (seed, rb)
        bad, rb = _row_bias(case, getattr(RM, mutant))
        assert not bad.ok and rb["ratio"] >= 3.0, (seed, rb)
        assert "row bias" in bad.describe() and "FAILED; one error shared by the row" in bad.describe()
