"""The f32-summation error model (families/f32_reduction/golden.py): clean results pass over many seeds in
sequential and tree order, and the allowance is tight enough to catch real precision bugs."""
import numpy as np
import pytest

from accel_regress.golden import census
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.f32_reduction import emu as emu

SEEDS = range(20)
ORDERS = [("v", 256), ("v-reassoc", 128), ("v-reassoc", 512)]   # sequential; 4- and 16-lane trees


def _check(case, outputs):
    inputs = R.make_inputs(case)
    ref = R.reference(case, inputs)
    tol = R.tolerances(case, inputs, ref)
    return [census(outputs[n], ref[n], tol=tol[n], name=n) for n in ref]


@pytest.mark.parametrize("kind", R.KINDS)
def test_emu_passes_over_seeds_and_orders(kind):
    shape = R.SEED_SHAPES[kind]
    for seed in SEEDS:
        for variant, vlen in ORDERS:
            case = R.make_case(kind, shape, variant, vlen, base_seed=seed)
            for c in _check(case, emu.run(case, R.make_inputs(case))):
                assert c.ok, f"seed {seed} {variant}/{vlen}: {c.describe()}"


@pytest.mark.parametrize("n", R.TAIL_LENGTHS)
def test_tail_lengths_pass_in_every_order(n):
    for seed in range(5):
        for variant, vlen in ORDERS:
            case = R.make_case("row_sum", (R.TAIL_ROWS, n), variant, vlen, base_seed=seed)
            assert all(c.ok for c in _check(case, emu.run(case, R.make_inputs(case))))


def _random_tree_sum(x: np.ndarray, gen: np.random.Generator) -> np.float32:
    """Sum in f32 along a random binary tree (random pairing of the remaining partial sums)."""
    parts = [np.float32(v) for v in x]
    while len(parts) > 1:
        i, j = sorted(gen.choice(len(parts), 2, replace=False))
        s = np.float32(parts[i] + parts[j])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)] + [s]
    return parts[0]


def test_bound_holds_for_any_summation_tree():
    """gamma_{n-1} * sum|x| bounds every order, including adversarial cancellation."""
    gen = np.random.default_rng(7)
    for trial in range(200):
        n = int(gen.integers(2, 200))
        x = (gen.standard_normal(n) * 10.0 ** gen.integers(-3, 4, n)).astype(np.float32)
        exact = float(np.sum(x.astype(np.float64)))
        bound = R.gamma(n - 1) * float(np.abs(x.astype(np.float64)).sum())
        assert abs(float(_random_tree_sum(x, gen)) - exact) <= bound, trial


def test_sequential_order_comes_close_to_the_bound():
    """The bound is not loose by orders of magnitude: a sum built to round up at every step
    (1 followed by n-1 values of u) uses a large share of gamma_{n-1} * sum|x|."""
    n = 1000
    x = np.full(n, np.float32(2.0 ** -24 * 1.5), np.float32)
    x[0] = 1.0
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc + v)
    err = abs(float(acc) - float(x.astype(np.float64).sum()))
    assert err > 0.1 * R.gamma(n - 1) * float(np.abs(x.astype(np.float64)).sum())


def _caught(case, outputs) -> bool:
    return not all(c.ok for c in _check(case, outputs))


@pytest.mark.parametrize("kind", R.REDUCTIONS)
def test_bf16_accumulation_is_caught(kind):
    """A device that accumulates in bf16 instead of f32 fails the model."""
    import ml_dtypes
    case = R.make_case(kind, R.SEED_SHAPES[kind])
    inputs = R.make_inputs(case)
    ref = R.reference(case, inputs)
    bad = {n: np.asarray(v, np.float64).astype(ml_dtypes.bfloat16).astype(np.float32) for n, v in ref.items()}
    assert _caught(case, bad)


@pytest.mark.parametrize("n", [7, 33, 127, 1000])
def test_dropped_tail_is_caught(n):
    """A reduction that skips the elements past the last full vector (VLEN 512: 16 lanes)."""
    case = R.make_case("row_sum", (R.TAIL_ROWS, n))
    x = R.make_inputs(case)["x"]
    full = (n // 16) * 16
    bad = {"sum": x[:, :full].astype(np.float64).sum(axis=1).astype(np.float32)}
    assert _caught(case, bad)


def test_one_wrong_row_is_named():
    case = R.make_case("layernorm", R.SEED_SHAPES["layernorm"])
    out = emu.run(case, R.make_inputs(case))
    out["y"] = out["y"].copy()
    out["y"][5, 10:20] += 1e-3
    (c,) = _check(case, out)
    assert not c.ok and "row 5" in c.where() and "10-19" in c.where()


def test_controls_are_exact_where_they_must_be():
    case = R.make_case("i8_matmul", R.SEED_SHAPES["i8_matmul"])
    out = emu.run(case, R.make_inputs(case))
    out["c"] = out["c"].copy()
    out["c"][0, 0] += 1
    assert _caught(case, out)
    case = R.make_case("cvt", R.SEED_SHAPES["cvt"])
    out = emu.run(case, R.make_inputs(case))
    out["to_int"] = np.round(R.make_inputs(case)["x"]).astype(np.int32)   # round, not truncate
    assert _caught(case, out)


def test_inputs_do_not_depend_on_variant_or_vlen():
    a = R.make_inputs(R.make_case("softmax", (64, 64), "v", 256))
    b = R.make_inputs(R.make_case("softmax", (64, 64), "novec", 128))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    c = R.make_inputs(R.make_case("softmax", (64, 64), "v", 256, base_seed=1))
    assert not np.array_equal(a["x"], c["x"])


def test_case_params_carry_the_contract():
    case = R.make_case("cvt", (64,), "novec", 128)
    assert case.op == "f32_reduction"
    assert set(case.params) >= {"kind", "shape", "dtype", "variant", "vlen", "has_f32_reduction"}
    assert case.params["has_f32_reduction"] is False
    assert R.make_case("softmax", (64, 64)).params["has_f32_reduction"] is True
    with pytest.raises(ValueError):
        R.make_case("nope", (1,))


def test_round_toward_zero_accumulation_is_caught_only_by_the_statistics():
    """A dot product whose f32 additions truncate: every element is within its allowance, but the
    errors together lean toward zero (magnitude bias) and are wider than the model's roundings."""
    from accel_regress.golden.dtypes import ulp
    case = R.make_case("matmul", R.SEED_SHAPES["matmul"])
    inputs = R.make_inputs(case)
    a, b = (inputs[k].astype(np.float64) for k in "ab")
    acc = np.zeros((a.shape[0], b.shape[1]))
    for k in range(a.shape[1]):
        s = acc + a[:, k:k + 1] * b[k:k + 1, :]
        acc = np.trunc(s / ulp(s, "f32")) * ulp(s, "f32")
    (c,) = _check(case, {"c": acc.astype(np.float32)})
    assert c.over_tolerance == 0 and not c.ok
    assert not (c.stats["magnitude_bias"]["ok"] and c.stats["spread"]["ok"])


@pytest.mark.parametrize("kind", ["rsqrt", "erf", "cvt", "i8_matmul"])
def test_library_and_exact_kinds_say_why_they_have_no_statistics(kind):
    case = R.make_case(kind, R.SEED_SHAPES[kind])
    for c in _check(case, emu.run(case, R.make_inputs(case))):
        assert c.ok and c.stats is None and c.stats_note


def test_sums_carry_statistics_and_rows_share_them_where_they_must():
    for kind, correlated in (("row_sum", False), ("matmul", False), ("layernorm", True), ("softmax", True),
                             ("log_softmax", True)):
        case = R.make_case(kind, R.SEED_SHAPES[kind])
        inputs = R.make_inputs(case)
        models = R.tolerances(case, inputs, R.reference(case, inputs))
        assert all(m.kind == "accumulation" and m.rows_correlated == correlated for m in models.values()), kind
