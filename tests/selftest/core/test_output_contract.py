"""Issue 19 item 1: the right values in the wrong dtype (float64, complex128) or the wrong shape
are a FAIL naming expected and got, declared per family in its golden module (output_contract)
and checked by the runner before any comparison."""
import pytest

from accel_regress.families.matmul import golden as golden_matmul
from accel_regress.families.f32_reduction import golden as R
from accel_regress.core import runner

HERE = runner.Context()      # in this process: no isolated worker, no hang guard, no devices


@pytest.fixture
def in_process(monkeypatch, tmp_path):
    faults = tmp_path / "contract_faults.py"
    faults.write_text(
        "import numpy as np\n"
        "def f64(case, outputs):\n    return {k: v.astype(np.float64) for k, v in outputs.items()}\n"
        "def c128(case, outputs):\n    return {k: v.astype(np.complex128) for k, v in outputs.items()}\n"
        "def transposed(case, outputs):\n    return {k: np.ascontiguousarray(v.T) for k, v in outputs.items()}\n"
        "def flat(case, outputs):\n    return {k: v.reshape(-1) for k, v in outputs.items()}\n")
    return faults


@pytest.mark.parametrize("fault, words", [("f64", "expected float32 (16, 24), got float64 (16, 24)"),
                                          ("c128", "expected float32 (16, 24), got complex128 (16, 24)"),
                                          ("transposed", "expected float32 (16, 24), got float32 (24, 16)")])
def test_matmul_right_values_wrong_dtype_or_shape_fail(in_process, fault, words):
    case = golden_matmul.make_case(golden_matmul.MatmulConfig(16, 32, 24))
    inputs = golden_matmul.make_inputs(case)
    clean = runner.run_case("emu", case, inputs, context=HERE)
    assert clean.verdict is None, clean.error
    run = runner.run_case("emu", case, inputs, fault=f"{in_process}:{fault}", context=HERE)
    assert run.verdict == "FAIL" and run.error.stage == "compare", run.error
    assert f"out: {words}" in run.error.message, run.error.message
    with pytest.raises(Exception, match="output contract"):
        run["out"]


@pytest.mark.parametrize("kind, fault, words", [("i8_matmul", "f64", "c: expected int32"),
                                                ("row_sum", "c128", "sum: expected float32"),
                                                ("cvt", "flat", None)])
def test_reductions_contract(in_process, kind, fault, words):
    case = R.make_case(kind, R.SEED_SHAPES[kind], "v", 256)
    inputs = R.make_inputs(case)
    assert runner.run_case("emu", case, inputs, context=HERE).verdict is None
    run = runner.run_case("emu", case, inputs, fault=f"{in_process}:{fault}", context=HERE)
    if words is None:        # cvt's outputs are 1-D already: reshape(-1) keeps the contract
        assert run.verdict is None
    else:
        assert run.verdict == "FAIL" and words in run.error.message, run.error
