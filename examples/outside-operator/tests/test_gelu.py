"""GELU on every selected backend (``--hw``), against the float64 reference within the error model."""
import pytest

from accel_regress.golden import assert_close, store
from gelu_ops import golden as gelu

pytestmark = pytest.mark.family(gelu.OP)


@pytest.fixture
def case(request, golden_seed):
    return gelu.make_case(request.param, golden_seed)


@pytest.fixture
def inputs(case):
    return store.cached("inputs", case, lambda: gelu.make_inputs(case))


@pytest.fixture
def expected(case, inputs):
    def compute():
        ref = gelu.reference(case, inputs)
        return ref, gelu.tolerances(case, inputs, ref)
    return store.cached("expected", case, compute)


@pytest.mark.parametrize("case", gelu.SHAPES, ids=gelu.shape_id, indirect=True)
def test_gelu(hw, case, inputs, expected):
    out = hw.run(case, inputs)          # dtype and shape already checked against output_contract
    ref, tol = expected
    assert_close(out["y"], ref["y"], tol=tol["y"], name="y")
