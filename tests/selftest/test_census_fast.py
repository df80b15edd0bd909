"""The census's float32 path for clean chunks reports what the float64 path reports."""
import numpy as np
import pytest

from golden import compare, census


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
