"""The one tolerance entry point (issue 28 item 5): every built-in family declares
``tolerances(case, inputs, ref) -> {output: ErrorModel}`` (hardware/core/contracts.py), a family
without it is refused at registration (tests/selftest/core/test_contracts.py), and each built-in's
entry point gives the same allowance as the model its own tests and repros use."""
from dataclasses import replace

import numpy as np
import pytest

from accel_regress.core import contracts, registry
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.fused_decode import golden as F
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.matmul import golden as mm
from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.tolerance import ErrorModel


def test_every_builtin_family_declares_tolerances():
    for name, reg in registry.registrations("family").items():
        module = reg.load()                  # checked against GoldenModule, tolerances included
        assert callable(module.tolerances), name
        assert contracts.problems("family", module) == [], name
    assert "tolerances" in contracts._members(contracts.GoldenModule)[1]


def _models(out: dict) -> dict:
    assert out and all(isinstance(m, ErrorModel) for m in out.values()), out
    return out


@pytest.mark.parametrize("cfg", [gemm.BF16_CONFIGS[-1], gemm.CI_CONFIGS[7], replace(gemm.CI_CONFIGS[7], inputs="ties"),
                                 replace(gemm.BF16_CONFIGS[-1], inputs="exact"), *gemm.K_TAIL_CONFIGS], ids=lambda c: c.id)
def test_gemm_tolerances_are_the_expected_model(cfg):
    case = gemm.make_case(cfg)
    inputs = gemm.make_inputs(case)
    ref, tol = gemm.expected(inputs, cfg)
    model = _models(gemm.tolerances(case, inputs, {"C": ref}))["C"]
    np.testing.assert_array_equal(model.tol, np.asarray(tol))
    assert model.kind == getattr(tol, "kind", None)


def test_matmul_tolerances_name_the_output():
    case = mm.make_case(mm.MatmulConfig(9, 33, 17, inputs="normal"))
    inputs = mm.make_inputs(case)
    ref, tol = mm.expected(case, inputs)
    models = _models(mm.tolerances(case, inputs, {"out": ref}))
    assert set(models) == set(mm.output_contract(case)) and models["out"].kind == "accumulation"
    np.testing.assert_array_equal(models["out"].tol, tol.tol)


@pytest.mark.parametrize("kind", ["row_sum", "mean_var", "softmax", "cvt"])
def test_f32_reduction_tolerances_cover_every_output(kind):
    case = R.make_case(kind, (4, 64))
    inputs = R.make_inputs(case)
    ref = R.reference(case, inputs)
    assert set(_models(R.tolerances(case, inputs, ref))) == set(R.output_names(kind))


@pytest.mark.parametrize("cfg", [tiles.seed_config(3), replace(tiles.seed_config(3), inputs="exact")],
                         ids=lambda c: c.id)
def test_rowexpandmul_tolerances_are_the_tile_allowance(cfg):
    case = tiles.make_case(cfg)
    inputs = tiles.make_inputs(case)
    ref = tiles.tile_reference(inputs, cfg)
    model = _models(tiles.tolerances(case, inputs, {"out": ref}))["out"]
    np.testing.assert_array_equal(model.tol, tiles.tolerance_for(ref, cfg))
    assert model.kind == (None if tiles.bit_exact(cfg) else "rounding")


@pytest.mark.parametrize("cfg", [F.SMALL, F.SMALL_MASKED], ids=lambda c: c.id)
def test_fused_decode_tolerances_of_both_programs(cfg):
    fused = F.make_case(cfg, program="fused")
    inputs = F.make_inputs(fused)
    bufs = F.run_pipeline(fused, inputs)
    exact, tol = F.end_to_end_expected(fused, inputs)
    model = _models(F.tolerances(fused, inputs, bufs))[F.FUSED_OUTPUT]
    np.testing.assert_array_equal(model.tol, tol)

    steps = F.as_program(fused, "steps")
    models = _models(F.tolerances(steps, inputs, bufs))
    assert set(models) == set(F.output_contract(steps))
    for name, m in models.items():
        assert m.shape == bufs[name].shape, name
    for step in F.block(steps):        # the case's own runlist: a masked block's softmax takes the mask
        want = F.step_model(step, F.step_params(steps, step), [bufs[n] for n in step.ins], bufs[step.out])
        np.testing.assert_array_equal(models[step.out].tol, want.tol)
    # The bf16 chain's first step (its inputs are the reference's own) is within its model.
    chain = F.run_pipeline(steps, inputs, bf16=True)
    first = F.block(steps)[0].out
    assert np.all(np.abs(chain[first] - bufs[first]) <= models[first].tol)


# One small case per built-in family: reference(case, inputs) is the ``ref`` tolerances() takes,
# and together they cover every output the family's backends return.
REFERENCE_CASES = {
    "gemm_partition_n": lambda: gemm.make_case(gemm.CI_CONFIGS[7]),
    "matmul": lambda: mm.make_case(mm.MatmulConfig(9, 33, 17, inputs="normal")),
    "f32_reduction": lambda: R.make_case("layernorm", (4, 64)),
    "rowexpandmul_fillpad": lambda: tiles.make_case(tiles.seed_config(3)),
    "fused_decode": lambda: F.make_case(F.SMALL),
}


def test_reference_is_a_checked_member_of_the_golden_contract():
    assert "reference" in contracts._members(contracts.GoldenModule)[1]
    # onnx_node's references are the corpus's own outputs or ReferenceEvaluator's, checked by its
    # selftests (tests/selftest/families/onnx_node/) on generated cases.
    assert set(REFERENCE_CASES) == set(registry.registrations("family")) - {"onnx_node"}


@pytest.mark.parametrize("op", sorted(REFERENCE_CASES))
def test_reference_is_what_tolerances_models(op):
    module = registry.registrations("family")[op].load()
    case = REFERENCE_CASES[op]()
    inputs = module.make_inputs(case)
    ref = module.reference(case, inputs)
    assert isinstance(ref, dict) and all(isinstance(v, np.ndarray) for v in ref.values()), type(ref)
    models = _models(module.tolerances(case, inputs, ref))
    for name, model in models.items():
        assert np.shape(model.tol) in ((), np.shape(ref[name])), name
    contract = getattr(module, "output_contract", None)
    if contract is not None:      # named outputs; a pattern ("*": gemm's partitions C_0..) is the backend's split of C
        named = {k for k in contract(case) if "*" not in k}
        assert named <= set(ref), (named, set(ref))
