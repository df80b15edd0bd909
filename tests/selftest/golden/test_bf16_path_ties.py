"""The GEMM's bf16 path meets exact ties in the default run (issue 49 item 2): its default ties case
is collected, a device that rounds bf16 ties away from zero (tests/selftest/fixtures/
input_class_faults.py ``bf16_round_half_away``) is caught by it, and its normal case (near-normal
products, where an exact tie almost never occurs) does not see that fault.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np

from accel_regress.core import runner
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden import census

ROOT = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("input_class_faults", ROOT / "tests/selftest/fixtures/input_class_faults.py")
ICF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ICF)
BF16_SMALL = gemm.BF16_CONFIGS[3]


def _ok(cfg, seed, fault=None) -> bool:
    case = gemm.make_case(cfg, seed)
    inputs = gemm.make_inputs(case)
    out = runner.execute(runner.Job("emu", case, inputs))
    if fault is not None:
        out = fault(case, dict(out))
    ref = gemm.reference(case, inputs)
    tol = gemm.tolerances(case, inputs, ref)
    got = np.asarray(out["forward"], np.float64).reshape(ref["C"].shape)
    return census(got, ref["C"], tol=tol["C"]).ok


def test_the_default_run_holds_a_bf16_ties_case():
    out = subprocess.run([sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", "emu", "--collect-only",
                          "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True).stdout
    assert f"test_forward_values[emu-{BF16_SMALL.with_inputs('ties').test_id}]" in out


def test_round_half_away_is_caught_on_the_bf16_path_by_ties_only():
    for seed in range(3):
        assert _ok(BF16_SMALL, seed) and _ok(BF16_SMALL.with_inputs("ties"), seed)
        assert _ok(BF16_SMALL, seed, ICF.bf16_round_half_away), seed
        assert not _ok(BF16_SMALL.with_inputs("ties"), seed, ICF.bf16_round_half_away), seed
