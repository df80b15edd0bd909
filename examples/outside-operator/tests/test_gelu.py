"""GELU on every selected backend (``--hw``), against the float64 reference within the error model."""
import pytest

from gelu_ops import golden as gelu
from accel_regress.golden import assert_close

pytestmark = pytest.mark.family(gelu.OP)


@pytest.mark.parametrize("shape", gelu.SHAPES, ids=gelu.shape_id)
def test_gelu(hw, golden_seed, shape):
    case = gelu.make_case(shape, golden_seed)
    inputs = gelu.make_inputs(case)
    out = hw.run(case, inputs)
    ref = gelu.reference(inputs)
    assert out["y"].shape == ref["y"].shape
    assert_close(out["y"], ref["y"], tol=gelu.tolerance(inputs, ref)["y"], name="y")
