"""The statistical check of an output against its error model (accel_regress.golden.tolerance.ErrorModel):
all elements together, the mean signed error (bias), the mean of sign(expected) * error (magnitude
bias) and the rms error (spread) must agree with the model. These catch what no single element
shows: a wrong rounding mode, an accumulator that is too narrow, a gain error. The thresholds and
why they hold are golden/tolerance.py's docstring.

golden/compare.py's census adds each chunk of rows to the sums here (``chunk_sums`` in float64, or
``Float32Sums`` where float32 is exact enough), merges them (``merge_sums``) and judges the whole
output (``judge``); ``describe`` words the result for a failure message.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from accel_regress.golden.dtypes import FORMATS
from accel_regress.golden.tolerance import MEAN_RESOLUTION, P_FALSE_ALARM, ErrorModel, bernstein

NAMES = ("bias", "magnitude_bias", "spread")
# The spread sums each element's z**2 clipped at SPREAD_CLIP**2 times its model variance E (or at
# its allowance, if smaller). E[min(z**2, c**2)] <= E[z**2] <= E and var <= c**2 E, so Bernstein's
# range term is c**2 = 64 E instead of (tol / w)**2, which grows with K or the row length as a
# worst-case bound does: a narrow accumulator's spread stays visible at every size (issue 38).
SPREAD_CLIP = 8.0

_UNIT_WORDS = {"ulp": "the output's ulp at the expected value",
               "sigma": "the model's standard deviation (sigma) of each element's error"}
_STAT_WORDS = {"bias": "bias (mean signed error)",
               "magnitude_bias": "magnitude bias (mean of sign(expected) * error)",
               "spread": f"spread (rms error, each clipped at {SPREAD_CLIP:g} model sigmas)"}
_MEANING = {
    "bias": ("errors lean negative: rounding toward -inf (floor) instead of to nearest, or an offset subtracted",
             "errors lean positive: rounding toward +inf instead of to nearest, or an offset added"),
    "magnitude_bias": ("|got| is too small on average: rounding toward zero (truncation) instead of to "
                       "nearest, or a gain below 1",
                       "|got| is too large on average: rounding away from zero, ties rounded away instead of "
                       "to even, or a gain above 1"),
    "spread": "errors wider than the model's roundings: an accumulator narrower than the model's (bf16 "
              "instead of f32), a lost guard bit or double rounding, or noise on the data path",
}

# The sums a chunk adds (chunk_sums says what each is); ``judge`` reads them.
SUMS = ("n", "z", "zs", "mu", "var", "M", "W", "E", "VB", "B")


def all_ok(stats: Optional[dict]) -> bool:
    """No statistics (none checked) or every one within its allowance."""
    return not stats or all(stats[k]["ok"] for k in (*NAMES, ROW_NAME) if k in stats)


# The row statistic (issue 49): a result computed as x - c or x * c with c rounded once per row
# (log_softmax as x - (max + log sum), pytorch/pytorch#38839; RMSNorm with its inverse RMS in bf16,
# amd/IRON PR #139) errs by one constant per row, which the whole output's bias averages away
# (rows of both signs) and no element shows. Per row, the mean of err / unit must stay within the
# shared part's bound plus what the elements' own roundings (zero mean, each within its bound b)
# can add: MEAN_RESOLUTION * mean(b) + Bernstein's t for their sum with variance sum(b**2) (the
# largest a zero-mean term within +-b can have) and range max(b), at P_FALSE_ALARM / rows for the
# worst of the rows.
ROW_NAME = "row_bias"


def row_bias(model: ErrorModel, got: np.ndarray, expected: np.ndarray) -> Optional[dict]:
    """The row statistic of a 2-D output (None: the model has none, or no row carries an error)."""
    if model.row_offset is None or np.ndim(expected) != 2:
        return None
    g, e = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if model.row_offset.size != e.size:
        return None
    unit = np.asarray(model.row_unit, np.float64).reshape(e.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (g - e) / unit
    use = np.isfinite(z) & np.isfinite(e) & (unit != 0)
    b = np.asarray(model.row_terms, np.float64).reshape(e.shape)
    off = np.asarray(model.row_offset, np.float64).reshape(e.shape)
    use &= np.isfinite(b) & np.isfinite(off)
    b, off = np.where(use, b, 0.0), np.where(use, off, 0.0).max(axis=1)
    n = use.sum(axis=1)
    rows = int((n > 0).sum())
    if rows == 0:
        return None
    p = P_FALSE_ALARM / rows
    worst = (-1.0, 0, 0.0, 0.0)
    for r in np.flatnonzero(n > 0):
        t = bernstein(float((b[r] ** 2).sum()), float(b[r].max()), p)
        allowed = off[r] + (MEAN_RESOLUTION * float(b[r].sum()) + t) / n[r]
        value = float(np.where(use[r], z[r], 0.0).sum() / n[r])
        ratio = abs(value) / max(allowed, 1e-300)
        if ratio > worst[0]:
            worst = (ratio, int(r), value, allowed)
    ratio, row, value, allowed = worst
    return {"row": row, "rows": rows, "value": value, "allowed": allowed, "ratio": ratio, "ok": bool(ratio <= 1.0),
            "unit": "relative" if bool(np.any(unit != 1)) else "absolute"}


def describe(stats: Optional[dict], note: Optional[str]) -> list:
    """The statistics' lines of a census's message; ``note`` says why there are none."""
    if not stats:
        return [f"Statistics: not checked ({note})"] if note else []
    st, unit = stats, stats["unit"]
    out = [f"Statistics over {st['n']} elements, in units of {_UNIT_WORDS.get(unit, unit)}:"]
    for key in ("bias", "magnitude_bias") if "bias" in st else ():
        b = st[key]
        line = f"  {_STAT_WORDS[key]}: {b['value']:+.4g} {unit} (model: 0, allowed +-{b['allowed']:.3g})"
        if not b["ok"]:
            line += (f": FAILED, {abs(b['value']) / max(b['allowed'], 1e-300):.3g}x the allowance; "
                     + _MEANING[key][b["value"] > 0])
        out.append(line)
    sp = st.get("spread")
    line = "" if sp is None else (f"  {_STAT_WORDS['spread']}: {sp['value']:.4g} {unit} (model: at most {sp['predicted']:.3g}, "
            f"allowed {sp['allowed']:.3g})")
    if sp is not None:
        if not sp["ok"]:
            line += f": FAILED, {sp['value'] / max(sp['allowed'], 1e-300):.3g}x the allowance; " + _MEANING["spread"]
        out.append(line)
    rb = st.get(ROW_NAME)
    if rb:
        line = (f"  row bias (a row's mean signed error, {rb['unit']}; worst of {rb['rows']} rows: row {rb['row']}): "
                f"{rb['value']:+.4g} (allowed +-{rb['allowed']:.3g}, {rb['ratio']:.3g}x)")
        if not rb["ok"]:
            line += (": FAILED; one error shared by the row: a per-row constant rounded once (x - (max + log sum) "
                     "instead of (x - max) - log sum), or a per-row scale held in a narrower format")
        out.append(line)
    return out


_BLOCK = 64     # float32 partial sums run over at most this many elements, then float64


def sum32(x: np.ndarray) -> float:
    """Sum of a C-contiguous float32 buffer: float32 partial sums of _BLOCK elements each (one
    vectorized reduction over the first axis of a (_BLOCK, n / _BLOCK) view, a quarter of
    numpy's float64 reduction's cost), added in float64. A float32 sum of 64 terms errs by at
    most 63 roundings: gamma_63 = 3.8e-6 of the sum of |terms| (Higham, Accuracy and Stability
    of Numerical Algorithms, sec. 4.2), typically 64 times less. No BLAS: its threads spin the
    other core on large products."""
    flat = x.reshape(-1)
    m = flat.size // _BLOCK * _BLOCK
    head = float(np.add.reduce(np.add.reduce(flat[:m].reshape(_BLOCK, -1), axis=0), dtype=np.float64)) if m else 0.0
    return head if m == flat.size else head + float(np.add.reduce(flat[m:], dtype=np.float64))


def dot32(x: np.ndarray, y: np.ndarray) -> float:
    """sum(x * y) of two C-contiguous float32 buffers, as sum32 sums (einsum's fused loop: the
    products are rounded to float32 first, as a multiply would round them)."""
    fx, fy = x.reshape(-1), y.reshape(-1)
    m = fx.size // _BLOCK * _BLOCK
    head = float(np.add.reduce(np.einsum("ij,ij->j", fx[:m].reshape(_BLOCK, -1), fy[:m].reshape(_BLOCK, -1)),
                               dtype=np.float64)) if m else 0.0
    return head if m == fx.size else head + float(np.add.reduce(fx[m:].astype(np.float64) * fy[m:]))


_TINY = np.float32(2.0 ** -100)


class Float32Sums:
    """The statistics' sums of a clean float32 chunk (all finite, within a float32 allowance: see
    golden/compare.py's _Clean), in float32 where that is exact enough; None where a chunk needs
    the float64 path (chunk_sums).

    Each per-element quantity (z, sigma / w, tol / w) is within 4 roundings (2.4e-7 relative): the
    units are exact powers of 2 times float32 values, and an allowance of at least 2**-100 keeps
    every intermediate that may underflow below 2**-47 of the unit. Each sum errs by at most
    gamma_63 = 3.8e-6 of its sum of |terms| (sum32). Against the thresholds of golden/tolerance.py:
    the bias sums move by at most 4e-6 sum|z| <= 4e-6 sqrt(n W), the threshold is at least
    sqrt(2 L V) = 6.2 sqrt(V), and W ~ V for a correct device: 6.5e-7 sqrt(n) of the threshold.
    The spread's W and E move by 4e-6 of themselves, its margin t / E is at least
    sqrt(2 L sum B_i E_i) / E >= 6 / sqrt(n) (B_i >~ E_i, Cauchy-Schwarz): again 6.5e-7 sqrt(n)
    of it. That is 0.5% at n = 6.6e7 (2048 x 32064) if every rounding had one sign; they do
    not, and the difference measured against the float64 path is below 1e-6 of each threshold
    (tests/selftest/golden/test_census_fast.py).

    Buffers are reused (``scratch`` is the census's own), so a chunk's temporaries stay in cache."""

    @classmethod
    def for_model(cls, step: int, cols: int, model: Optional[ErrorModel], scratch: np.ndarray):
        """The float32 sums of ``model``'s kind, or None where only the float64 path covers it."""
        if model is None or model.lib is not None or model.rows_correlated or \
                model.kind not in ("rounding", "accumulation"):
            return None
        return cls(step, cols, model, scratch)

    def __init__(self, step: int, cols: int, model: ErrorModel, scratch: np.ndarray):
        buf = lambda: np.empty((step, cols), np.float32)     # noqa: E731
        self.model, self.y = model, scratch
        self.w, self.sg, self.z = buf(), buf(), buf()
        self.zero = np.zeros((step, cols), np.float32)     # np.maximum with a scalar is 4x slower

    def __call__(self, d, e, zeros, ae, tol):
        """The chunk's SUMS from d = g - e, e, |e| and the allowance; ``zeros``: e has a zero."""
        sums = self.rounding if self.model.kind == "rounding" else self.accumulation
        return sums(d, e, zeros, ae, tol)

    def rounding(self, d, e, zeros, ae, tol):
        """In units scaled by powers of 2 (exact): with X = 2**floor(log2|e|) (the exponent bits;
        clamped at 2**emin where that matters), w = max(ulp, tol / 4) = 2**(1-p) W with
        W = max(X, tol 2**(p-3)), and sigma 2**p = S = X + rest 2**p / sqrt(k); so z = 2**(p-1) d / W,
        sd = S / (2 W), tol / w = 2**(p-1) tol / W."""
        m = self.model
        p, emin, u = FORMATS[m.dtype]
        tmin = tol.min()
        if not tmin >= _TINY:
            return None
        k = d.shape[0]
        W, S, z, t = self.w[:k], self.sg[:k], self.z[:k], self.y[:k]
        np.bitwise_and(e.view(np.int32), np.int32(0x7F800000), out=S.view(np.int32))
        if tmin * 2.0 ** (p - 3) < 2.0 ** (emin + 30):      # else the clamp moves S / W by < 2**-30
            np.maximum(S, np.float32(2.0 ** emin), out=S)
        np.multiply(tol, np.float32(2.0 ** (p - 3)), out=W)
        np.maximum(W, S, out=W)
        np.multiply(ae, np.float32(u), out=t)
        np.subtract(tol, t, out=t)
        np.maximum(t, self.zero[:k], out=t)
        np.multiply(t, np.float32(2.0 ** p / ((1.0 + u) * math.sqrt(m.k))), out=t)
        np.add(S, t, out=S)
        np.divide(S, W, out=S)                                 # 2 sd
        np.divide(d, W, out=z)                                 # 2**(1-p) z
        np.divide(tol, W, out=t)                               # 2**(1-p) tol / w
        zs = self._signed_sum(z, e, zeros, W)
        sd1, sd2 = sum32(S) / 2, dot32(S, S) / 4
        np.multiply(S, np.float32(MEAN_RESOLUTION * 2.0 ** -p), out=W)
        np.add(W, t, out=W)
        M = 2.0 ** (p - 1) * float(W.max())                    # (tol + mu) / w
        # the spread's clip: c = min(tol / w, SPREAD_CLIP sqrt(E)), in 2**(1-p) units (S / 2 = sd)
        np.multiply(S, np.float32(SPREAD_CLIP * math.sqrt(1.0 + MEAN_RESOLUTION ** 2) * 2.0 ** -p), out=W)
        np.minimum(t, W, out=t)
        np.abs(z, out=W)
        np.minimum(W, t, out=W)                                # |z| clipped at c
        Wc = dot32(W, W)
        np.multiply(t, S, out=W)
        BE = (1.0 + MEAN_RESOLUTION ** 2) * 2.0 ** (2 * p - 4) * dot32(W, W)
        zscale = 2.0 ** (p - 1)
        acc = np.array([d.size, zscale * sum32(z), zscale * zs, MEAN_RESOLUTION * sd1, sd2, M,
                        zscale * zscale * Wc, (1.0 + MEAN_RESOLUTION ** 2) * sd2, BE,
                        (zscale * float(t.max())) ** 2])
        return acc if np.isfinite(acc).all() else None

    @staticmethod
    def _signed_sum(z, e, zeros, buf) -> float:
        """sum(z * sign(e)): e's sign bit put on z (an xor), or, where e has a zero, np.sign."""
        if not zeros:
            np.bitwise_and(e.view(np.int32), np.int32(-2 ** 31), out=buf.view(np.int32))
            np.bitwise_xor(buf.view(np.int32), z.view(np.int32), out=buf.view(np.int32))
        else:
            np.multiply(z, np.sign(e, out=buf), out=buf)
        return sum32(buf)

    def accumulation(self, d, e, zeros, ae, tol):
        """w = sigma = tol / sqrt(k): z = sqrt(k) d / tol, sd = 1, mu / w = MEAN_RESOLUTION,
        (tol + mu) / w = sqrt(k) + MEAN_RESOLUTION, B = k."""
        m = self.model
        if not (tol.min() >= _TINY and np.isfinite(tol.max())):
            return None
        k = d.shape[0]
        z = self.z[:k]
        np.divide(d, tol, out=z)
        n, root = d.size, math.sqrt(m.k)
        e2 = 1.0 + MEAN_RESOLUTION ** 2
        c = min(root, SPREAD_CLIP * math.sqrt(e2))            # the spread's clip, in units of sigma
        bias, signed = root * sum32(z), root * self._signed_sum(z, e, zeros, self.w[:k])
        np.abs(z, out=z)
        np.minimum(z, np.float32(c / root), out=z)
        acc = np.empty(len(SUMS))
        acc[:] = (n, bias, signed, MEAN_RESOLUTION * n, n, root + MEAN_RESOLUTION, m.k * dot32(z, z),
                  e2 * n, e2 * n * c * c, c * c)
        return acc if np.isfinite(acc).all() else None


def chunk_sums(acc: np.ndarray, model: ErrorModel, g, e, tol, lib) -> None:
    """Add a chunk of rows (float64) to the sums the statistics need (names in SUMS; see judge)."""
    tol = np.asarray(tol, np.float64)
    err = g - e
    w, sigma, mu = model.moments(tol, e, lib)
    use = np.isfinite(err) & np.isfinite(e) & (w > 0) & (sigma > 0)
    w = np.where(use, w, 1.0)
    z = np.where(use, err / w, 0.0)
    zs = np.where(use, z * np.sign(e), 0.0)          # sign(NaN) is NaN: a NaN reference adds nothing
    mu_w = np.where(use, mu / w, 0.0)
    sd = np.where(use, sigma / w, 0.0)
    M = np.where(use, (tol + mu) / w, 0.0)
    E = sd * sd + mu_w * mu_w
    B = np.where(use, np.minimum((tol / w) ** 2, SPREAD_CLIP ** 2 * E), 0.0)
    W = np.minimum(z * z, B)
    if model.rows_correlated:      # a row is one term: its elements may share an error
        z, zs, mu_w, sd, M, E, B, W = (x.sum(axis=1) for x in (z, zs, mu_w, sd, M, E, B, W))
    acc[0] += use.sum()
    acc[1:4] += (z.sum(), zs.sum(), mu_w.sum())
    acc[4] += (sd * sd).sum()
    acc[5] = max(acc[5], float(M.max(initial=0.0)))
    acc[6:9] += (W.sum(), E.sum(), (B * E).sum())
    acc[9] = max(acc[9], float(B.max(initial=0.0)))


def merge_sums(acc: np.ndarray, chunk: np.ndarray) -> None:
    acc[[0, 1, 2, 3, 4, 6, 7, 8]] += chunk[[0, 1, 2, 3, 4, 6, 7, 8]]
    acc[5], acc[9] = max(acc[5], chunk[5]), max(acc[9], chunk[9])


def judge(model: ErrorModel, acc: np.ndarray) -> tuple[Optional[dict], Optional[str]]:
    """Bias, magnitude bias and spread against the thresholds of golden/tolerance.py:
    ({unit, n, bias, magnitude_bias, spread}, None), or (None, why there is nothing to check)."""
    n, z, zs, mu, var, M, W, E, VB, B = acc
    if n == 0:
        return None, "no element carries a rounding error (every expected value is exact)"
    t_bias = bernstein(var, M)
    allowed = (mu + t_bias) / n
    t_spread = bernstein(VB, B, two_sided=False)
    stats = {
        "unit": model.unit_name, "n": int(n),
        "bias": {"value": z / n, "allowed": allowed, "ok": bool(abs(z) <= mu + t_bias)},
        "magnitude_bias": {"value": zs / n, "allowed": allowed, "ok": bool(abs(zs) <= mu + t_bias)},
        "spread": {"value": float(np.sqrt(W / n)), "predicted": float(np.sqrt(E / n)),
                   "allowed": float(np.sqrt((E + t_spread) / n)), "ok": bool(W <= E + t_spread)},
    }
    for k in NAMES:
        stats[k] = {f: (float(v) if f != "ok" else v) for f, v in stats[k].items()}
    return stats, None
