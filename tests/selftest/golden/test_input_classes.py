"""Input classes (golden/inputs.py): what each class's inputs are, and a fault per class that only
that class catches (tests/selftest/fixtures/input_class_faults.py), on emu, over the cases the
default run carries for every family."""
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from accel_regress.golden import assert_close, census, inputs as G
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.matmul import golden as mm
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.case import case_seed
from accel_regress.core import runner
from accel_regress.core.backend import Backend

FAULTS = Path(__file__).parents[1] / "fixtures" / "input_class_faults.py"
CAUGHT_BY = {"onepass_variance": "shifted", "acc_23_bit": "exact", "bf16_round_half_away": "ties",
             "inf_times_zero_skip": "specials", "ftz_subnormal": "subnormal"}


# --- one small case of every class per family (the default run's) ---------------------------------

def _gemm_cases():
    base = gemm.CI_CONFIGS[1]
    return [gemm.make_case(base.with_inputs(c, emulate_bfp16=False if c not in gemm.BFP16_CLASSES else None))
            for c in G.CLASSES]


def _tile_cases():
    cfgs = [tiles.TileConfig(8, 64, 3, 48, d, pad, "fused", True)
            for d, pad in (("f32", "zero"), ("f16", "max"), ("bf16", "min"))]
    return [tiles.make_case(c.with_inputs(cls)) for c in cfgs for cls in G.CLASSES]


def _reduction_cases():
    kinds = {"normal": ("mean_var", "row_sum", "matmul", "softmax", "sqrt"),
             "shifted": ("mean_var", "softmax"), "exact": ("row_sum", "matmul"), "ties": ("row_sum", "matmul"),
             "specials": ("row_sum", "softmax", "divide", "matmul"), "subnormal": ("row_sum", "sqrt", "matmul")}
    return [R.make_case(k, R.SEED_SHAPES[k], inputs=cls) for cls, ks in kinds.items() for k in ks]


def _matmul_cases():
    return [mm.make_case(mm.MatmulConfig(*s, inputs=cls)) for s in ((17, 17, 17), (127, 129, 131))
            for cls in G.CLASSES]


def _failures(case, inputs, out) -> list[str]:
    """The family's checks (as tests/test_*.py make them), as a list of what failed."""
    bad = []

    def check(fn, *a, **kw):
        try:
            fn(*a, **kw)
        except AssertionError as exc:
            bad.append(str(exc).splitlines()[0])

    if case.op == gemm.OP:
        cfg = gemm.config_of(case)
        ref, tol = gemm.expected(inputs, cfg)
        check(assert_close, out["forward"], ref[None], tol=tol[None], min_corr=gemm.MIN_CORR)
        for i in range(cfg.partition_N):
            check(assert_close, out[f"C_{i}"][:cfg.M, :cfg.n_part], gemm.partition(ref, cfg, i),
                  tol=gemm.partition(tol, cfg, i), min_corr=gemm.MIN_CORR)
    elif case.op == tiles.OP:
        cfg = tiles.config_of(case)
        check(tiles.assert_tile_close, out["out"], tiles.tile_reference(inputs, cfg), cfg)
    elif case.op == R.OP:
        ref = R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        for n in R.output_names(case.params["kind"]):
            check(assert_close, out[n], ref[n], tol=tol[n], zero_sign=R.zero_sign(case))
    else:
        ref, tol = mm.expected(case, inputs)
        check(assert_close, out["out"], ref, tol=tol)
    return bad


ALL_CASES = _gemm_cases() + _tile_cases() + _reduction_cases() + _matmul_cases()


@pytest.fixture(scope="module")
def inputs_of():
    made = {}

    def get(case):
        if case.key not in made:
            made[case.key] = {gemm.OP: gemm.make_inputs, tiles.OP: tiles.make_inputs, R.OP: R.make_inputs,
                              mm.OP: mm.make_inputs}[case.op](case)
        return made[case.key]
    return get


def _caught(case, inputs, fault=None) -> bool:
    out = runner.execute(runner.Job("emu", case, inputs, fault and f"{FAULTS}:{fault}"))
    return bool(_failures(case, inputs, out))


def test_every_class_case_passes_clean(inputs_of):
    caught = [f"{c.op}/{c.id}-{c.params['inputs']}" for c in ALL_CASES if _caught(c, inputs_of(c))]
    assert not caught, f"false alarms on emu: {caught}"


@pytest.mark.parametrize("fault", sorted(CAUGHT_BY))
def test_fault_is_caught_by_its_class_only(fault, inputs_of, record_property):
    table = {cls: [0, 0] for cls in G.CLASSES}          # class -> [caught, cases]
    for case in ALL_CASES:
        cls = case.params["inputs"]
        table[cls][1] += 1
        table[cls][0] += _caught(case, inputs_of(case), fault)
    record_property("catch_table", {c: f"{a}/{n}" for c, (a, n) in table.items()})
    mine = CAUGHT_BY[fault]
    assert table[mine][0] > 0, f"{fault} was not caught by the {mine} class: {table}"
    others = {c: v for c, v in table.items() if c != mine and v[0]}
    assert not others, f"{fault} was caught by other classes than {mine}: {others}"


# --- what each class draws -------------------------------------------------------------------------

def test_normal_class_keeps_todays_seeds():
    cfg = gemm.CI_CONFIGS[7]
    assert gemm.make_case(cfg).seed == case_seed(gemm.OP, cfg.id) == 3812775030
    t = tiles.seed_config(1)
    assert tiles.make_case(t).seed == case_seed(tiles.OP, t.id)
    assert R.make_case("row_sum", (64, 128)).seed == case_seed(R.OP, "row_sum-64x128")
    assert gemm.make_case(cfg.with_inputs("exact")).seed != gemm.make_case(cfg).seed


def test_exact_class_is_exact_and_needs_24_bits():
    x = mm.make_inputs(mm.make_case(mm.MatmulConfig(64, 200, 48, inputs="exact")))
    a, b = (np.asarray(x[n], np.float64) for n in ("lhs", "rhs"))
    partial = np.cumsum(a[:, None, :] * b.T[None, :, :], axis=-1)       # sequential partial sums
    assert np.abs(partial).max() < 2 ** 24 and (partial == np.round(partial)).all()
    assert np.abs(partial).max() >= 2 ** 23, "no partial sum needs the 24th bit"
    assert (np.abs(partial) >= 2 ** 23).any(axis=-1).all(), "some dot product never holds the pivot"


def test_ties_class_results_are_halfway():
    x = mm.make_inputs(mm.make_case(mm.MatmulConfig(32, 40, 24, inputs="ties")))
    exact = x["lhs"].astype(np.float64) @ x["rhs"].astype(np.float64)
    assert G.is_tie(exact, np.dtype(np.float32)).all()
    case = gemm.make_case(gemm.CI_CONFIGS[1].with_inputs("ties"))
    gx = gemm.make_inputs(case)
    share = G.is_tie(gx["A"].astype(np.float64) @ gx["B"].astype(np.float64), np.dtype(bfloat16)).mean()
    assert share > 0.3, f"only {share:.0%} of the GEMM's results are bf16 ties"
    for d in tiles.DTYPES:
        cfg = tiles.TileConfig(8, 64, 8, 64, d, inputs="ties")
        t = tiles.make_inputs(tiles.make_case(cfg))
        assert G.is_tie(t["gated"].astype(np.float64) * t["scale"].astype(np.float64), tiles.DTYPES[d][0]).all(), d
    r = R.make_inputs(R.make_case("row_sum", (64, 128), inputs="ties"))["x"].astype(np.float64)
    assert G.is_tie(r.sum(axis=1), np.dtype(np.float32)).all()


def test_specials_golden_follows_ieee():
    case = mm.make_case(mm.MatmulConfig(65, 65, 65, inputs="specials"))
    ref, _ = mm.expected(case, mm.make_inputs(case))
    assert np.isnan(ref).any() and np.isposinf(ref).any() and np.isneginf(ref).any()
    assert (np.abs(ref) == G.SUM_BIG).any(), "no output is the largest value plus small terms"
    inf_zero = np.array([[np.inf, 1.0]], np.float32), np.array([[0.0], [1.0]], np.float32)
    assert np.isnan(mm.product({"lhs": inf_zero[0], "rhs": inf_zero[1]}, "specials")).all()
    r = R.make_case("sqrt", (64,), inputs="specials")
    y = R.reference(r, {"x": np.array([-0.0, np.inf, -1.0], np.float32)})["y"]
    assert np.signbit(y[0]) and y[0] == 0 and np.isposinf(y[1]) and np.isnan(y[2])


def test_subnormal_class_lands_in_the_subnormal_range():
    tiny = np.finfo(np.float32).tiny
    case = mm.make_case(mm.MatmulConfig(64, 64, 64, inputs="subnormal"))
    x = mm.make_inputs(case)
    ref, _ = mm.expected(case, x)
    lhs = x["lhs"].astype(np.float32)
    assert ((lhs != 0) & (np.abs(lhs) < tiny)).mean() > 0.3
    assert ((ref != 0) & (np.abs(ref) < tiny)).mean() > 0.5
    for d, small in (("f32", tiny), ("f16", 2.0 ** -14), ("bf16", tiny)):
        cfg = tiles.TileConfig(8, 64, 8, 64, d, inputs="subnormal")
        out = tiles.tile_reference(tiles.make_inputs(tiles.make_case(cfg)), cfg)
        assert ((out != 0) & (np.abs(out) < small)).any() and (np.abs(out) >= small).any(), d


def test_shifted_rows_have_a_mean_of_a_thousand_spreads():
    x = R.make_inputs(R.make_case("mean_var", (64, 128), inputs="shifted"))["x"].astype(np.float64)
    ratio = np.abs(x.mean(axis=1)) / x.std(axis=1)
    assert (ratio > 500).sum() >= 30


# --- the comparison and the backend hook ------------------------------------------------------------

def test_census_knows_nan_inf_and_the_sign_of_zero():
    e = np.array([np.nan, np.inf, -np.inf, -0.0, 1.0])
    assert census(e.copy(), e, zero_sign=True).ok
    assert not census(np.array([0.0, np.inf, -np.inf, -0.0, 1.0]), e).ok           # NaN is positional
    assert not census(np.array([np.nan, -np.inf, -np.inf, -0.0, 1.0]), e).ok       # the sign of inf
    assert not census(np.array([np.nan, np.inf, -np.inf, 0.0, 1.0]), e, zero_sign=True).ok
    assert census(np.array([np.nan, np.inf, -np.inf, 0.0, 1.0]), e).ok             # a sum's zero sign
    assert not census(np.array([5.0]), np.array([1.0]), tol=np.array([np.nan])).ok  # NaN allows nothing


def test_a_backend_says_which_classes_it_runs():
    class NormalOnly(Backend):
        name = "normal-only"
        input_classes = ("normal",)

    b = NormalOnly()
    assert b.supports_inputs(R.make_case("row_sum", (4, 7))) is None
    why = b.supports_inputs(R.make_case("row_sum", (4, 7), inputs="specials"))
    assert "specials" in why
    bfp16_specials = gemm.make_case(gemm.CI_CONFIGS[1].with_inputs("specials"))
    assert "bfp16" in gemm.format_excludes(bfp16_specials)
    assert gemm.format_excludes(gemm.make_case(gemm.CI_CONFIGS[1].with_inputs("specials", emulate_bfp16=False))) is None
    run = runner.run_case("emu", bfp16_specials, {})
    assert run.skip and "bfp16" in run.skip
