"""The census's float32 path for clean chunks (its statistics included) reports what the float64
path reports."""
import numpy as np
import pytest
from ml_dtypes import bfloat16

from accel_regress.golden import compare, census, statistics
from accel_regress.golden.dtypes import FORMATS, ulp
from accel_regress.golden.tolerance import ErrorModel


def _pair(kind, shape=(40, 9000)):
    rng = np.random.default_rng(7)
    e = rng.standard_normal(shape, dtype=np.float32)
    g = (e + rng.standard_normal(shape, dtype=np.float32) * 1e-3).astype(np.float32)
    t = np.full(shape, 1e-2, np.float32)
    if kind == "over-by-a-rounding":          # g - e = 1 + 2**-30 rounds to 1.0 = tol in float32
        g[3, 5], e[3, 5], t[3, 5] = 1.0, -(2.0 ** -30), 1.0
    elif kind == "at-tolerance":
        g[7, 11] = e[7, 11] + t[7, 11]
    elif kind == "nan":
        g[9, 1] = np.nan
    elif kind == "zero-reference":
        e[0, :4] = 0
        g[0, :2] = 0
    elif kind == "wrong-rows":
        g[20:23, 100:200] += 1
    return g, e, t


@pytest.mark.parametrize("kind", ["clean", "over-by-a-rounding", "at-tolerance", "nan", "zero-reference",
                                  "wrong-rows"])
def test_float32_path_reports_as_float64(kind):
    g, e, t = _pair(kind)
    fast = census(g, e, tol=t, min_corr=0.99)
    exact = census(g.astype(np.float64), e.astype(np.float64), tol=t.astype(np.float64), min_corr=0.99)
    assert fast.describe() == exact.describe()
    assert fast.over_tolerance == exact.over_tolerance
    assert fast.differ == exact.differ
    if kind == "over-by-a-rounding":
        assert fast.over_tolerance == 1 and fast.max_abs_index == (3, 5)


def test_clean_chunks_take_the_float32_path(monkeypatch):
    used = []
    real = compare._Clean.__call__
    monkeypatch.setattr(compare._Clean, "__call__", lambda self, *a: used.append(real(self, *a)) or used[-1])
    g, e, t = _pair("wrong-rows")
    census(g, e, tol=t)
    assert used and any(u is None for u in used) and any(u is not None for u in used)


# --- the statistics' float32 path against the float64 path -------------------------------------

def _reference_and_output(variant, shape=(100, 3000), seed=3):
    """A float32 reference, an output within a float32 allowance, and the allowance."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal(shape, dtype=np.float32) * np.float32(8)
    if variant == "shifted":                 # mean 10**4, spread 10**-2: float32 sums about 0 lose it all
        e = (np.float32(1e4) + rng.standard_normal(shape, dtype=np.float32) * np.float32(1e-2)).astype(np.float32)
    tol = (np.float32(2.0 ** -7) * np.abs(e) + np.float32(0.05)).astype(np.float32)
    if variant == "shifted":
        tol = np.full(shape, 4e-3, np.float32)
    if variant == "normal":                  # below the output rounding's share u |e|: no accumulation part
        tol[:, ::5] = np.float32(2.0 ** -12) * np.abs(e[:, ::5])
    if variant == "tiny":                    # subnormal and zero references, many below f16's normal range
        e[:, ::3] *= np.float32(2.0 ** -130)
        e[:, 1::7] = 0
        e[10:20] *= np.float32(2.0 ** -20)
        tol = (np.float32(2.0 ** -7) * np.abs(e) + np.float32(1e-29)).astype(np.float32)
        tol[40:45] = np.float32(2.0 ** -7) * np.abs(e[40:45]) + np.float32(1e-40)   # too small for float32
        tol[40:45] = np.maximum(tol[40:45], np.float32(1e-44))
        tol[10:20] = np.float32(2.0 ** -7) * np.abs(e[10:20]) + np.float32(1e-3)    # f16's clamp matters here
    noise = rng.uniform(-0.6, 0.6, shape).astype(np.float32)
    g = (e + noise * tol).astype(np.float32)
    if variant == "nonfinite":
        g[7, 3] = np.nan
        e[30, 9] = g[30, 9] = np.inf
        g[61, 100] = np.inf
    return g, e, tol


MODELS = {
    "rounding-bf16": dict(kind="rounding", dtype="bf16", k=8192),
    "rounding-f32": dict(kind="rounding", dtype="f32", k=64),
    "rounding-f16": dict(kind="rounding", dtype="f16", k=16),
    "accumulation": dict(kind="accumulation", k=100),
    "accumulation-lib": dict(kind="accumulation", k=100, lib=0.25),
    "rows-correlated": dict(kind="accumulation", k=100, rows_correlated=True),
}


def _model(tol, spec):
    spec = dict(spec)
    if "lib" in spec:
        spec["lib"] = spec["lib"] * tol
    return ErrorModel(tol, **spec)


def _assert_same_census(fast, exact):
    for f in ("elements", "differ", "over_tolerance", "max_abs", "max_abs_index", "max_abs_allowed",
              "max_rel", "max_rel_index", "worst", "regions", "regions_truncated", "spread", "shape_error",
              "stats_note"):
        assert repr(getattr(fast, f)) == repr(getattr(exact, f)), f      # repr: a NaN equals itself
    assert fast.mean_abs == pytest.approx(exact.mean_abs, rel=1e-6)
    if np.isnan(exact.pearson):
        assert np.isnan(fast.pearson)
    else:          # near 1 the distance from 1 is what the report shows
        assert fast.pearson == pytest.approx(exact.pearson, rel=1e-9, abs=1e-6 * (1 - exact.pearson) + 1e-12)
    assert (fast.stats is None) == (exact.stats is None)
    if exact.stats:
        assert fast.stats["unit"] == exact.stats["unit"] and fast.stats["n"] == exact.stats["n"]
        for k in ("bias", "magnitude_bias"):
            f, x = fast.stats[k], exact.stats[k]
            assert f["ok"] == x["ok"]
            assert f["allowed"] == pytest.approx(x["allowed"], rel=1e-6), k
            assert f["value"] == pytest.approx(x["value"], abs=1e-6 * x["allowed"]), k
        for f in ("value", "predicted", "allowed", "ok"):
            assert fast.stats["spread"][f] == pytest.approx(exact.stats["spread"][f], rel=1e-6), f
    assert fast.ok == exact.ok and fast.describe() == exact.describe()


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 5 rows, so an output of 100 rows has clean chunks and chunks that are not."""
    monkeypatch.setattr(compare, "_CHUNK_ELEMENTS", 1 << 14)


def _spy(monkeypatch, name, owner=statistics.Float32Sums):
    taken = []
    real = getattr(owner, name)
    monkeypatch.setattr(owner, name, lambda self, *a: taken.append(real(self, *a)) or taken[-1])
    return taken


@pytest.mark.parametrize("variant", ["normal", "tiny", "nonfinite", "shifted"])
@pytest.mark.parametrize("model", MODELS)
def test_float32_statistics_report_as_float64(model, variant, small_chunks, monkeypatch):
    g, e, tol = _reference_and_output(variant)
    fast_stats = _spy(monkeypatch, "rounding" if "rounding" in model else "accumulation")
    clean = _spy(monkeypatch, "__call__", compare._Clean)
    fast = census(g, e, tol=_model(tol, MODELS[model]), min_corr=0.9)
    exact = census(g.astype(np.float64), e.astype(np.float64), tol=_model(tol.astype(np.float64), MODELS[model]),
                   min_corr=0.9)
    _assert_same_census(fast, exact)
    assert any(clean), "no chunk took the float32 path"
    if "lib" in MODELS[model] or "rows_correlated" in MODELS[model]:
        assert not fast_stats, "a model the float32 statistics do not cover must take the float64 path"
    else:
        assert any(s is not None for s in fast_stats), "no chunk's statistics took the float32 path"
    if variant in ("tiny", "nonfinite") and fast_stats:
        assert any(x is None for x in clean + fast_stats), "every chunk took the float32 path"


@pytest.mark.parametrize("model", ["rounding-bf16", "accumulation"])
def test_an_infinite_allowance_takes_the_float64_path(model, small_chunks, monkeypatch):
    """Within an infinite allowance every output passes; the model's units are inf / inf there,
    so the float64 path's statistics are NaN, and the float32 path leaves that chunk to it."""
    g, e, tol = _reference_and_output("normal")
    tol[80, 80] = np.inf
    fast_stats = _spy(monkeypatch, "rounding" if "rounding" in model else "accumulation")
    fast = census(g, e, tol=_model(tol, MODELS[model]))
    exact = census(g.astype(np.float64), e.astype(np.float64), tol=_model(tol.astype(np.float64), MODELS[model]))
    assert fast_stats[80 // 5] is None and sum(s is None for s in fast_stats) == 1
    assert fast.describe() == exact.describe()
    assert not fast.stats_ok and np.isnan(fast.stats["bias"]["allowed"])


def test_pearson_of_shifted_values_keeps_float64_accuracy(small_chunks):
    g, e, _ = _reference_and_output("shifted")
    fast = census(g, e, tol=np.full(e.shape, 1.0, np.float32))
    exact = np.corrcoef(g.astype(np.float64).ravel(), e.astype(np.float64).ravel())[0, 1]
    assert fast.pearson == pytest.approx(exact, rel=1e-9, abs=1e-6 * (1 - exact))


@pytest.mark.parametrize("offset, pearson", [(0.0, 1.0), (2 ** -20, float("nan"))])
def test_constant_output_correlation_as_float64(offset, pearson, small_chunks):
    """A constant output matching a constant reference is perfectly correlated; one off by a
    constant is undefined (nan), as the float64 sums of the same float32 values find."""
    e = np.full((40, 1000), 0.3, np.float32)
    g = (e + np.float32(offset)).astype(np.float32)
    c = census(g, e, tol=np.full(e.shape, 1e-3, np.float32))
    c64 = census(g.astype(np.float64), e.astype(np.float64), tol=np.full(e.shape, 1e-3))
    assert np.isnan(c.pearson) == np.isnan(c64.pearson) == np.isnan(pearson)
    if not np.isnan(pearson):
        assert c.pearson == c64.pearson == pearson


def _old_ulp(x, fmt):
    """ulp as it was written with float64 frexp/ldexp (the definition the bit version must keep)."""
    p, emin, _ = FORMATS[fmt]
    x = np.abs(np.asarray(x, np.float64))
    _, e = np.frexp(np.where(np.isfinite(x), x, 0.0))
    e = np.where(x > 0, e - 1, emin)
    return np.ldexp(1.0, np.maximum(e, emin) - (p - 1))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_ulp_from_the_exponent_bits_is_frexps(fmt):
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 2.0 ** -126, 2.0 ** -125, 2.0 ** -14,
               2.0 ** -15, 6e-8, 1.0, -1.0, 3.4e38]
    x32 = np.concatenate([rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32).view(np.float32),
                          np.array(special, np.float32)])
    x64 = np.concatenate([rng.integers(0, 2 ** 63, 1 << 16, dtype=np.int64).view(np.float64),
                          np.array(special + [5e-324, 2.2e-308, 1e308]), -rng.random(5)])
    with np.errstate(all="ignore"):
        for x in (x32, x64, x32.astype(bfloat16), x32.astype(np.float16), x32[::3], np.arange(-4, 5)):
            got, want = ulp(x, fmt), _old_ulp(x, fmt)
            assert got.dtype == want.dtype and np.array_equal(got, want)
    assert ulp(np.float32(np.inf), fmt) == _old_ulp(np.inf, fmt) and ulp(2.0, fmt) == _old_ulp(2.0, fmt)


def _bf16_rounded(mode, n=1 << 16, seed=0):
    """float32 exact values and the same values rounded to bf16 by ``mode``, in float32."""
    exact = np.random.default_rng(seed).standard_normal(n, dtype=np.float32) * np.float32(8)
    step = ulp(exact, "bf16")
    got = {"nearest": lambda: exact.astype(bfloat16).astype(np.float64),
           "zero": lambda: np.trunc(exact / step) * step,
           "floor": lambda: np.floor(exact / step) * step,
           "gain": lambda: exact.astype(bfloat16).astype(np.float64) * (1 + 2.0 ** -11)}[mode]()
    return got.astype(np.float32), exact


@pytest.mark.parametrize("mode, fails", [("nearest", None), ("zero", "magnitude_bias"), ("floor", "bias"),
                                         ("gain", "magnitude_bias")])
def test_float32_statistics_catch_a_wrong_rounding(mode, fails, small_chunks, monkeypatch):
    """test_statistics' faults, in float32 so that the float32 path judges them."""
    got, exact = _bf16_rounded(mode)
    fast_stats = _spy(monkeypatch, "rounding")
    tol = (np.float32(2.0 ** -7) * np.abs(exact)).astype(np.float32)
    c = census(got.reshape(16, -1), exact.reshape(16, -1), tol=ErrorModel(tol.reshape(16, -1), "rounding",
                                                                           dtype="bf16", k=64))
    assert fast_stats and all(s is not None for s in fast_stats)
    assert c.over_tolerance == 0
    assert [k for k in ("bias", "magnitude_bias", "spread") if not c.stats[k]["ok"]] == ([fails] if fails else [])


def test_float32_statistics_catch_a_narrow_accumulator(small_chunks, monkeypatch):
    """Sums of 64 terms: f32 accumulation fits the accumulation model, bf16 accumulation fails its spread."""
    x = np.random.default_rng(1).standard_normal((4096, 64)).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=1)
    u = 2.0 ** -24
    tol = np.nextafter((64 * u / (1 - 64 * u) * np.abs(x.astype(np.float64)).sum(axis=1)).astype(np.float32),
                       np.float32(np.inf))

    def summed(dtype):
        acc = np.zeros(x.shape[0], np.float32)
        for j in range(x.shape[1]):
            acc = (acc + x[:, j]).astype(dtype).astype(np.float32)
        return acc.reshape(64, 64)
    fast_stats = _spy(monkeypatch, "accumulation")
    model = ErrorModel(tol.reshape(64, 64), "accumulation", k=63)
    ref = exact.astype(np.float32).reshape(64, 64)
    assert census(summed(np.float32), ref, tol=model).ok
    c = census(summed(bfloat16), ref, tol=model)
    assert fast_stats and all(s is not None for s in fast_stats)
    assert not c.stats["spread"]["ok"] and "accumulator" in c.describe()


@pytest.mark.parametrize("model", ["rounding-bf16", "accumulation"])
def test_strided_parts_report_as_their_copies(model, small_chunks, monkeypatch):
    """A partition (a column slice of the whole output) and a broadcast allowance take the float32
    path as views; they report what contiguous copies report."""
    g, e, tol = _reference_and_output("normal")
    fast_stats = _spy(monkeypatch, "rounding" if "rounding" in model else "accumulation")
    part = np.s_[:, 1000:2500]
    view = census(g[part], e[part], tol=_model(tol, MODELS[model])[part])
    copy = census(g[part].copy(), e[part].copy(), tol=_model(tol[part].copy(), MODELS[model]))
    assert fast_stats and all(s is not None for s in fast_stats)
    assert repr(view) == repr(copy)
    scalar = np.float32(0.3)
    broadcast = census(g[part], e[part], tol=_model(np.broadcast_to(scalar, e.shape)[part], MODELS[model]))
    full = census(g[part].copy(), e[part].copy(), tol=_model(np.full((100, 1500), scalar), MODELS[model]))
    assert repr(broadcast) == repr(full)
