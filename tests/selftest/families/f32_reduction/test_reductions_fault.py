"""The built-in fault saturn-f32-reduction-hang: every f32 reduction hangs, controls untouched.

Runs go through ``runner.execute`` (backend, then the fault, in this process), not through the
session's isolation and its --max-hangs guard, which would rightly stop after three hangs."""
import pytest

from accel_regress.families.f32_reduction import golden as R
from accel_regress import Hang
from accel_regress.core import faults, runner


def test_fault_is_registered():
    assert "saturn-f32-reduction-hang" in faults.builtin()


@pytest.mark.parametrize("kind", R.KINDS)
def test_fault_hangs_reductions_only(kind):
    case = R.make_case(kind, R.SEED_SHAPES[kind])
    inputs = R.make_inputs(case)
    job = runner.Job("emu", case, inputs, "saturn-f32-reduction-hang")
    if R.has_f32_reduction(kind):
        with pytest.raises(Hang) as info:
            runner.execute(job)
        assert "[dn]" in info.value.message and "[dc]" in info.value.message
    else:
        outputs = runner.execute(job)
        ref = R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        from accel_regress.golden import assert_close
        for n in ref:
            assert_close(outputs[n], ref[n], tol=tol[n])


def test_fault_leaves_other_families_alone():
    from accel_regress.golden.case import Case
    fn = faults.builtin()["saturn-f32-reduction-hang"]
    out = {"y": object()}
    assert fn(Case("gemm_partition_n", "x", {"has_f32_reduction": True}), out) is out


def test_clean_emu_run_is_not_a_hang():
    case = R.make_case("softmax", R.SEED_SHAPES["softmax"])
    assert set(runner.execute(runner.Job("emu", case, R.make_inputs(case)))) == {"y"}
    with pytest.raises(Hang):
        faults.builtin()["saturn-f32-reduction-hang"](case, {})


def test_without_the_vector_extension_the_fault_does_not_hang():
    # Seed 004: dropping +v (the _opu_novec build) makes the same reductions pass.
    case = R.make_case("softmax", R.SEED_SHAPES["softmax"], variant="novec")
    out = {"y": object()}
    assert faults.builtin()["saturn-f32-reduction-hang"](case, out) is out
