"""The statistical check (golden/statistics.py, through golden/compare.py's census): bias, magnitude bias and spread against an error model.

Clean roundings to nearest pass (and, over many draws, never raise a false alarm); a wrong
rounding mode, an offset, a gain error and a narrow accumulator fail the statistic that names
them, while every element stays within its per-element allowance.
"""
import json

import numpy as np
import pytest
from ml_dtypes import bfloat16

from accel_regress.golden.compare import Census, Mismatch, assert_close, census
from accel_regress.golden.dtypes import ulp
from accel_regress.golden.tolerance import P_FALSE_ALARM, ErrorModel, bernstein, exact_model


def _rounded(n=4096, seed=0, mode="nearest"):
    """Exact values and the same values rounded to bf16 by ``mode``."""
    rng = np.random.default_rng(seed)
    exact = rng.standard_normal(n) * 8.0
    step = ulp(exact, "bf16")
    if mode == "nearest":
        got = np.asarray(exact, np.float32).astype(bfloat16).astype(np.float64)
    elif mode == "zero":
        got = np.trunc(exact / step) * step
    elif mode == "floor":
        got = np.floor(exact / step) * step
    return exact, got


def _model(exact):
    # one rounding to bf16 (u*|x|, u = 2**-8, covers half an ulp) after a 64-term f32 sum whose
    # bound is as large again, as GEMM's model at large K: a truncated element stays inside it
    return ErrorModel(2.0 ** -7 * np.abs(exact), "rounding", dtype="bf16", k=64)


def test_rounding_to_nearest_fits_the_model():
    exact, got = _rounded()
    c = census(got, exact, tol=_model(exact))
    assert c.ok and c.stats and c.stats["unit"] == "ulp"
    assert abs(c.stats["bias"]["value"]) < c.stats["bias"]["allowed"]
    assert 0.25 < c.stats["spread"]["value"] < 0.33      # uniform over +-1/2 ulp: rms 1/sqrt(12)


def test_truncation_fails_the_magnitude_bias_and_says_what_it_means():
    exact, got = _rounded(mode="zero")
    model = _model(exact)
    c = census(got, exact, tol=model)
    assert c.over_tolerance == 0, "every element is within its own allowance"
    assert not c.ok and not c.stats["magnitude_bias"]["ok"]
    assert c.stats["magnitude_bias"]["value"] == pytest.approx(-0.5, abs=0.05)
    text = c.describe()
    assert "every element is within its allowance" in text
    assert "magnitude bias" in text and "FAILED" in text and "toward zero" in text
    with pytest.raises(Mismatch):
        assert_close(got, exact, tol=model)


def test_floor_fails_the_signed_bias():
    exact, got = _rounded(mode="floor")
    c = census(got, exact, tol=_model(exact))
    assert c.over_tolerance == 0 and not c.stats["bias"]["ok"]
    assert "toward -inf" in c.describe()


def test_a_gain_error_within_every_allowance_is_caught():
    exact, got = _rounded()
    c = census(got * (1 + 2.0 ** -11), exact, tol=_model(exact))
    assert c.over_tolerance == 0 and not c.stats["magnitude_bias"]["ok"]
    assert "gain above 1" in c.describe()


def test_a_narrow_accumulator_fails_the_spread():
    """Sums of 64 terms: f32 accumulation passes the model, bf16 accumulation fails its spread."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2048, 64)).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=1)
    n = x.shape[1]
    u = 2.0 ** -24
    tol = n * u / (1 - n * u) * np.abs(x.astype(np.float64)).sum(axis=1)
    model = ErrorModel(tol, "accumulation", k=n - 1)

    def summed(rnd):
        acc = np.zeros(x.shape[0])
        for j in range(n):
            acc = rnd(acc + x[:, j])
        return acc
    f32 = summed(lambda v: np.asarray(v, np.float32).astype(np.float64))
    assert census(f32, exact, tol=model).ok
    bf16 = summed(lambda v: np.asarray(v, np.float32).astype(bfloat16).astype(np.float64))
    c = census(bf16, exact, tol=model)
    assert not c.stats["spread"]["ok"] and "accumulator" in c.describe()


def test_no_false_alarm_over_many_clean_draws():
    """3000 small outputs (64 elements, where the thresholds are widest relative to the noise)."""
    flagged = 0
    for seed in range(3000):
        exact, got = _rounded(n=64, seed=seed)
        flagged += not census(got, exact, tol=_model(exact)).ok
    assert flagged == 0


def test_correlated_rows_count_as_one_term():
    """A per-row common error (a shared rsqrt) is not averaged away as if elements were independent."""
    rng = np.random.default_rng(2)
    exact = rng.standard_normal((8, 512))
    tol = np.full(exact.shape, 1e-3)
    got = exact + rng.choice([-1, 1], size=(8, 1)) * 5e-4           # each row off by half its allowance
    independent = census(got, exact, tol=ErrorModel(tol, "accumulation", k=4))
    rows = census(got, exact, tol=ErrorModel(tol, "accumulation", k=4, rows_correlated=True))
    assert rows.stats["bias"]["allowed"] > 10 * independent.stats["bias"]["allowed"]
    assert rows.ok


def test_library_share_of_the_allowance_may_be_a_bias():
    exact = np.linspace(1.0, 2.0, 1000)
    tol = np.full(exact.shape, 4e-7)
    got = exact + 1e-7                                    # a systematic library error, within its share
    assert not census(got, exact, tol=ErrorModel(tol, "accumulation", k=10)).stats_ok
    assert census(got, exact, tol=ErrorModel(tol, "accumulation", k=10, lib=np.full(exact.shape, 2e-7))).ok


def test_exact_models_say_why_there_is_no_statistic():
    x = np.arange(6.0)
    c = census(x, x.copy(), tol=exact_model(x.shape))
    assert c.ok and c.stats is None and "bit for bit" in c.describe()
    c = census(x + 1, x, tol=exact_model(x.shape))
    assert not c.ok and c.over_tolerance == 6


def test_model_slices_like_its_allowance():
    m = ErrorModel(np.arange(12.0).reshape(3, 4), "accumulation", k=3, lib=np.ones((3, 4)))
    part = m[None][..., 1:3]
    assert part.shape == (1, 3, 2) and part.lib.shape == (1, 3, 2) and part.k == 3
    assert np.array_equal(np.asarray(part), np.arange(12.0).reshape(1, 3, 4)[..., 1:3])


def test_bernstein_threshold_meets_its_probability():
    """t solves p = 2 exp(-t**2 / (2 (V + M t / 3)))."""
    for V, M in ((100.0, 1.0), (1e6, 30.0), (0.0, 5.0)):
        t = bernstein(V, M)
        assert 2 * np.exp(-t * t / (2 * (V + M * t / 3))) == pytest.approx(P_FALSE_ALARM, rel=1e-6)


def test_statistics_survive_the_results_json():
    exact, got = _rounded(mode="zero")
    c = census(got, exact, tol=_model(exact), name="C")
    d = json.loads(json.dumps(c.to_json()))
    fields = {k: v for k, v in d.items() if k in Census.__dataclass_fields__}
    for k in ("shape", "max_abs_index", "max_rel_index"):
        fields[k] = tuple(fields[k])
    again = Census(**fields)
    assert not again.ok and again.describe() == c.describe()
