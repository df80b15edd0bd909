"""One comparison for every operator: a census of how output and reference differ.

A mismatch is reported the way ``torch.testing.assert_close`` words it (mismatched elements,
greatest absolute and relative difference with index and allowance), plus what a hardware bug
hunt needs: the Pearson correlation, the worst elements, and where the out-of-tolerance elements
lie (rows and column ranges), so a wrong partition or a garbage tile row is named, not counted.

With an error model (accel_regress.golden.tolerance.ErrorModel as ``tol``) a second check looks at all elements
together (golden/statistics.py): bias, magnitude bias and spread must agree with the model.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional

import numpy as np

from accel_regress.golden import statistics
from accel_regress.golden.statistics import dot32, sum32
from accel_regress.golden.tolerance import ErrorModel

_CHUNK_ELEMENTS = 1 << 18        # a chunk's temporaries stay in cache
_MAX_REGIONS = 8
_BLOCK_DENSITY = 0.9      # a rectangle this full of misses is "a block", not "scattered"


@dataclass
class Census:
    name: str
    shape: tuple
    elements: int = 0
    differ: int = 0                 # got != expected at all
    over_tolerance: int = 0
    max_abs: float = 0.0
    max_abs_index: tuple = ()
    max_abs_allowed: float = 0.0
    mean_abs: float = 0.0
    max_rel: float = 0.0
    max_rel_index: tuple = ()
    pearson: float = float("nan")
    min_corr: Optional[float] = None
    worst: list = field(default_factory=list)     # [{index, got, expected, abs, allowed}]
    origin: tuple = (0, 0)                        # (row, col) of this part in the whole output, for Where
    regions: list = field(default_factory=list)   # [{rows: [a, b], cols: [c, d], count}]
    regions_truncated: bool = False
    spread: Optional[dict] = None                 # {rows: [[a, b]..], cols: [[c, d]..]} when scattered
    shape_error: Optional[str] = None
    stats: Optional[dict] = None                  # {unit, n, bias, magnitude_bias, spread}: statistics.judge
    stats_note: Optional[str] = None              # why there is no statistical check

    @property
    def stats_ok(self) -> bool:
        return statistics.all_ok(self.stats)

    @property
    def ok(self) -> bool:
        if self.shape_error:
            return False
        if self.over_tolerance:
            return False
        if self.min_corr is not None and not (self.pearson >= self.min_corr):
            return False
        return self.stats_ok

    def to_json(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["origin"] = list(self.origin)
        d["ok"] = self.ok
        for k in ("max_abs", "mean_abs", "max_rel", "pearson", "max_abs_allowed"):
            d[k] = _finite_or_str(d[k])
        return d

    def where(self) -> str:
        """Human wording of the out-of-tolerance regions, in the whole output's rows and columns
        (``origin``): 'row 0, cols 1-15: 15 elements'; a rectangle wrong almost everywhere is a block."""
        r0, c0 = self.origin
        if self.spread is not None:
            row_runs = [(a + r0, b + r0) for a, b in self.spread["rows"]]
            col_runs = [(a + c0, b + c0) for a, b in self.spread["cols"]]
            if len(row_runs) == 1 and len(col_runs) == 1:
                (a, b), (c, d) = row_runs[0], col_runs[0]
                area = (b - a + 1) * (d - c + 1)
                if self.over_tolerance >= _BLOCK_DENSITY * area:
                    return (f"block {_span('row', (a, b))}, {_span('col', (c, d))}: {self.over_tolerance} of "
                            f"{area} elements ({100.0 * self.over_tolerance / area:.1f}%)")
            rows = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in row_runs)
            cols = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in col_runs)
            return (f"scattered over rows {rows}; cols {cols} "
                    f"({self.over_tolerance} elements)")
        if not self.regions:
            return "nowhere"
        parts = []
        for r in self.regions:
            rows = _span("row", [x + r0 for x in r["rows"]])
            cols = _span("col", [x + c0 for x in r["cols"]]) if r["cols"] is not None else None
            n = f"{r['count']} element" + ("s" if r["count"] != 1 else "")
            parts.append(f"{rows}, {cols}: {n}")
        return "; ".join(parts)

    def describe(self) -> str:
        if self.shape_error:
            return f"{self.name}: {self.shape_error}"
        pct = 100.0 * self.over_tolerance / max(self.elements, 1)
        corr_ok = self.min_corr is None or self.pearson >= self.min_corr
        if self.ok:
            head = f"{self.name} is close to the reference."
        elif not self.over_tolerance and corr_ok:
            head = (f"{self.name}: every element is within its allowance, but the errors together "
                    "do not fit the error model!")
        else:
            head = f"{self.name} is not close to the reference!"
        lines = [
            head,
            "",
            f"Mismatched elements: {self.over_tolerance} / {self.elements} ({pct:.1f}%) over tolerance; "
            f"{self.differ} / {self.elements} differ at all",
            f"Greatest absolute difference: {self.max_abs:.6g} at index {self.max_abs_index} "
            f"(up to {self.max_abs_allowed:.6g} allowed there)",
            f"Greatest relative difference: {self.max_rel:.6g} at index {self.max_rel_index}",
            f"Mean absolute difference: {self.mean_abs:.6g}",
        ]
        corr = f"Pearson correlation: {self.pearson:.5f}"
        if self.min_corr is not None:
            corr += f" (at least {self.min_corr} required)"
        lines.append(corr)
        if self.over_tolerance:
            lines.append(f"Where: {self.where()}")
            worst = ", ".join(
                f"{tuple(w['index'])} got {w['got']:.6g} expected {w['expected']:.6g}" for w in self.worst)
            lines.append(f"Worst: {worst}")
        lines += self.stats_lines()
        return "\n".join(lines)

    def stats_lines(self) -> list:
        return statistics.describe(self.stats, self.stats_note)


class Mismatch(AssertionError):
    """An output that is not close to its reference; carries the census for the report, and the
    compared arrays with their allowance (got, expected, atol, rtol, tol) for heatmaps."""

    def __init__(self, census: Census, arrays: Optional[dict] = None):
        super().__init__(census.describe())
        self.census = census
        self.arrays = arrays


def _finite_or_str(x):
    x = float(x)
    return x if np.isfinite(x) else str(x)


def _span(word: str, ab) -> str:
    a, b = ab
    return f"{word} {a}" if a == b else f"{word}s {a}-{b}"


def as_rows(a: np.ndarray) -> np.ndarray:
    """The 2-D view every report uses: leading axes folded into rows, the last axis as columns."""
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])


def diff_and_allowed(g: np.ndarray, e: np.ndarray, atol=0.0, rtol=0.0, tol=None, zero_sign=False):
    """|g - e| and the allowed difference atol + rtol*|e| + tol, elementwise in float64.

    Equal NaNs and equal infinities differ by 0; NaN against a number is infinitely far; an
    infinite reference (a +-inf pad value) allows nothing but itself, and neither does a NaN
    allowance (an error model evaluated at inf or NaN inputs). With ``zero_sign`` a zero of the
    other sign (-0 for +0) is infinitely far: IEEE 754 defines the sign of a product's zero."""
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
        if tol is not None:
            allowed = allowed + tol
        allowed = np.where(np.isinf(e) | np.isnan(allowed), 0.0, allowed)
        diff = np.abs(g - e)
        same = (np.isnan(g) & np.isnan(e)) | (np.isinf(g) & np.isinf(e) & (g == e))
        diff = np.where(same, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        if zero_sign:
            diff = np.where((g == 0) & (e == 0) & (np.signbit(g) != np.signbit(e)), np.inf, diff)
    return diff, allowed


def census(got, expected, *, atol=0.0, rtol=0.0, tol=None, min_corr=None, name="output",
           zero_sign=False) -> Census:
    """Compare ``got`` with ``expected``; allowed difference is atol + rtol*|expected| + tol.

    ``tol`` is an optional per-element absolute allowance broadcastable to ``expected``, or a
    accel_regress.golden.tolerance.ErrorModel, which adds the statistical check. Regions are reported over the
    last two axes (leading axes are folded into rows).
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    model = tol if isinstance(tol, ErrorModel) else None
    c = Census(name=name, shape=tuple(expected.shape), min_corr=min_corr)
    if model is not None:
        tol = model.tol
        if model.kind is None:
            c.stats_note, model = model.why_not or None, None
    if got.shape != expected.shape:
        c.shape_error = f"shape mismatch: got {tuple(got.shape)}, expected {tuple(expected.shape)}"
        return c
    c.elements = int(expected.size)
    if c.elements == 0:
        return c
    g2, e2 = as_rows(got), as_rows(expected)
    tol2 = None if tol is None else as_rows(np.broadcast_to(_real(tol), expected.shape))
    lib2 = None
    if model is not None and model.lib is not None:
        lib2 = as_rows(np.broadcast_to(np.asarray(model.lib, np.float64), expected.shape))
    rows, cols = e2.shape
    step = max(1, _CHUNK_ELEMENTS // max(cols, 1))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        return _census_rows(c, g2, e2, tol2, atol, rtol, rows, cols, step, expected.shape, model, lib2,
                            zero_sign)


def _real(tol) -> np.ndarray:
    """``tol`` in its own float dtype (a float32 model stays float32: no full-size float64 copy)."""
    t = np.asarray(tol)
    return t if t.dtype in (np.float32, np.float64) else t.astype(np.float64)


class _Clean:
    """The census of a chunk that is all finite and within tolerance, in float32 where that is exact.

    With float32 output and reference and a float32 allowance (no atol, rtol), |g - e| rounded to
    float32 is monotone in the exact difference, so ``d < tol`` everywhere proves nothing is over
    tolerance (a NaN allowance fails it, as the float64 path fails it) and ``g - e != 0`` counts
    the elements that differ (gradual underflow: x - y == 0 only if x == y), both exactly. The
    mean absolute difference sums float32 differences (off by one rounding, 6e-8 relative) in
    blocks (statistics.sum32); the greatest absolute and relative differences are ranked in float32 (an
    index within one rounding of the largest may be named) and their values recomputed in float64.

    The Pearson sums are taken about the mean of the reference so far (y = e - c, see _moments),
    so a mean far larger than the spread costs no accuracy: each sum is within gamma_63 of its
    sum of |terms| (statistics.sum32), and the chunks are merged in float64 (_Moments). A constant chunk's
    sums are exact (y and d take one value each, of few bits).

    With an error model the statistics' sums are taken here too (statistics.Float32Sums). A
    chunk that fails any condition takes the float64 path. Buffers are reused, so a chunk's
    temporaries stay in cache."""

    def __init__(self, step: int, cols: int, model: Optional[ErrorModel] = None):
        buf = lambda: np.empty((step, cols), np.float32)     # noqa: E731
        self.d, self.ad, self.ae, self.r, self.y = buf(), buf(), buf(), buf(), buf()
        self.b = np.empty((step, cols), bool)
        self.stats = statistics.Float32Sums.for_model(step, cols, model, scratch=self.y)

    @staticmethod
    def applies(g2, e2, tol2, atol, rtol) -> bool:
        return (g2.dtype == np.float32 and e2.dtype == np.float32 and atol == 0 and rtol == 0
                and tol2 is not None and tol2.dtype == np.float32)

    def __call__(self, g, e, tol, shift=None):
        """(differ, sum |d|, flat index of max |d|, of max rel, Pearson moments, statistics' sums
        or None where the statistics need the float64 path), or None."""
        k = g.shape[0]
        d, ad, ae, r, b = self.d[:k], self.ad[:k], self.ae[:k], self.r[:k], self.b[:k]
        n = d.size
        np.subtract(g, e, out=d)
        np.abs(d, out=ad)
        np.less(ad, tol, out=b)           # false at an inf or NaN in g, e or tol
        if not b.all():
            return None
        i = int(np.argmax(ad))
        np.not_equal(d, 0, out=b)
        differ = int(np.count_nonzero(b))
        total = sum32(ad)
        np.abs(e, out=ae)
        np.divide(ad, ae, out=r)
        j = int(np.argmax(r))
        zeros = not np.isfinite(r.flat[j])                    # e == 0 somewhere: x / 0 is inf or NaN
        if np.isnan(r.flat[j]):                               # 0 / 0 where both are 0: no difference
            r[np.isnan(r)] = 0.0
            j = int(np.argmax(r))
        moments = self._moments(e, d, n, shift)
        if moments is None:
            return None
        stats = self.stats(d, e, zeros, ae, tol) if self.stats is not None else None
        return differ, total, i, j, moments, stats

    def _moments(self, e, d, n, shift):
        """(n, mean g, mean e, centred sums of gg, ee, ge) of the chunk, or None (a float32 overflow).

        The sums are taken about ``shift`` (the mean of e so far; None: this chunk's own): a
        chunk whose mean lies far from it is one whose offset counts in the whole output's
        spread too, so the relative accuracy of the merged sums holds. ``d`` is not shifted:
        |d| < tol, and an allowance as wide as the reference's spread makes the correlation
        meaningless anyway."""
        k = e.shape[0]
        y = self.y[:k]
        c = np.float32(np.add.reduce(np.add.reduce(e, axis=1), dtype=np.float64) / n if shift is None else shift)
        if not np.isfinite(c):
            return None
        np.subtract(e, c, out=y)
        sy, sd = sum32(y), sum32(d)
        syy, syd, sdd = dot32(y, y), dot32(y, d), dot32(d, d)
        # x = g - c = y + d
        sx = sy + sd
        vy = syy - sy * sy / n
        vx = syy + 2 * syd + sdd - sx * sx / n
        cxy = syy + syd - sx * sy / n
        if not np.isfinite(vx + vy + cxy):
            return None
        return (n, float(c) + sx / n, float(c) + sy / n, vx, vy, cxy)

class _Moments:
    """Count, means and centred sums of squares and products of (got, expected) over the finite
    elements, merged chunk by chunk (Chan, Golub and LeVeque's pairwise update), in float64."""

    def __init__(self):
        self.n, self.mx, self.my, self.vx, self.vy, self.cxy = 0, 0.0, 0.0, 0.0, 0.0, 0.0

    def add(self, n, mx, my, vx, vy, cxy):
        if n == 0:
            return
        total = self.n + n
        dx, dy, f = mx - self.mx, my - self.my, self.n * n / total
        self.vx += vx + dx * dx * f
        self.vy += vy + dy * dy * f
        self.cxy += cxy + dx * dy * f
        self.mx += dx * n / total
        self.my += dy * n / total
        self.n = total

    def add_values(self, gx: np.ndarray, ex: np.ndarray):
        if gx.size:
            mx, my = float(gx.mean()), float(ex.mean())
            dx, dy = gx - mx, ex - my
            self.add(gx.size, mx, my, float((dx * dx).sum()), float((dy * dy).sum()), float((dx * dy).sum()))

    def pearson(self) -> float:
        if self.n < 2:
            return float("nan")
        vx, vy = self.vx, self.vy
        if vx <= 0 or vy <= 0:
            # A constant output matching a constant reference is perfectly correlated; else undefined.
            return 1.0 if vx <= 0 and vy <= 0 and abs(self.mx - self.my) <= 1e-12 * max(abs(self.mx), 1.0 / self.n) \
                else float("nan")
        return float(self.cxy / np.sqrt(vx * vy))


def _census_rows(c, g2, e2, tol2, atol, rtol, rows, cols, step, shape, model=None, lib2=None,
                 zero_sign=False) -> Census:
    moments = _Moments()
    abs_total = 0.0
    worst_pool: list = []
    bad_rows = {}
    bad_cols = np.zeros(cols, bool)
    best_abs = (-1.0, None, 0.0)
    best_rel = (-1.0, None)
    stat_sums = np.zeros(len(statistics.SUMS))
    clean = _Clean(step, cols, model) if not zero_sign and _Clean.applies(g2, e2, tol2, atol, rtol) else None
    for r0 in range(0, rows, step):
        gc, ec = g2[r0:r0 + step], e2[r0:r0 + step]
        tc = None if tol2 is None else tol2[r0:r0 + step]
        fast = clean and clean(gc, ec, tc, moments.my if moments.n else None)
        if fast:
            differ, total, i, j, chunk_moments, chunk_stats = fast
            c.differ += differ
            abs_total += total
            moments.add(*chunk_moments)
            gi, ei = float(gc.flat[i]), float(ec.flat[i])
            if abs(gi - ei) > best_abs[0]:
                best_abs = (abs(gi - ei), r0 * cols + i, float(tc.flat[i]))
            gj, ej = float(gc.flat[j]), float(ec.flat[j])
            rel = abs(gj - ej) / abs(ej) if ej != 0 else (np.inf if gj != ej else 0.0)
            if rel > best_rel[0]:
                best_rel = (rel, r0 * cols + j)
            if model is not None:
                if chunk_stats is None:
                    statistics.chunk_sums(stat_sums, model, gc.astype(np.float64), ec.astype(np.float64), tc,
                                None if lib2 is None else lib2[r0:r0 + step])
                else:
                    statistics.merge_sums(stat_sums, chunk_stats)
            continue
        g = gc.astype(np.float64)
        e = ec.astype(np.float64)
        if model is not None:
            statistics.chunk_sums(stat_sums, model, g, e, tc, None if lib2 is None else lib2[r0:r0 + step])
        diff, allowed = diff_and_allowed(g, e, atol, rtol, tc, zero_sign)
        c.differ += int(np.count_nonzero(diff))
        bad = diff > allowed
        c.over_tolerance += int(np.count_nonzero(bad))
        finite = np.isfinite(diff)
        abs_total += float(diff[finite].sum())
        i = int(np.argmax(diff))
        if diff.flat[i] > best_abs[0]:
            best_abs = (float(diff.flat[i]), r0 * cols + i, float(allowed.flat[i]))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(e != 0, diff / np.abs(e), np.where(diff > 0, np.inf, 0.0))
        j = int(np.argmax(rel))
        if rel.flat[j] > best_rel[0]:
            best_rel = (float(rel.flat[j]), r0 * cols + j)
        ok = np.isfinite(g) & np.isfinite(e)
        moments.add_values(g[ok], e[ok])
        if bad.any():
            score = np.where(bad, diff / np.maximum(allowed, np.finfo(float).tiny), -1.0).ravel()
            k = min(5, int(bad.sum()))
            top = np.argpartition(-score, k - 1)[:k]
            for t in top:
                worst_pool.append((float(score[t]), r0 * cols + int(t), float(g.flat[t]), float(e.flat[t]),
                                   float(diff.flat[t]), float(allowed.flat[t])))
            bad_cols |= bad.any(axis=0)
            for rr in np.flatnonzero(bad.any(axis=1)):
                bad_rows[r0 + int(rr)] = _runs(bad[rr])
    c.max_abs, c.max_abs_allowed = best_abs[0], best_abs[2]
    c.max_abs_index = _unravel(best_abs[1], shape)
    c.max_rel, c.max_rel_index = best_rel[0], _unravel(best_rel[1], shape)
    c.mean_abs = abs_total / c.elements
    c.pearson = moments.pearson()
    worst_pool.sort(key=lambda w: -w[0])
    c.worst = [{"index": list(_unravel(w[1], shape)), "got": w[2], "expected": w[3],
                "abs": w[4], "allowed": w[5]} for w in worst_pool[:5]]
    if model is not None:
        c.stats, note = statistics.judge(model, stat_sums)
        c.stats_note = note or c.stats_note
        rb = statistics.row_bias(model, g2, e2) if model.row_offset is not None else None
        if rb is not None:
            c.stats = {**(c.stats or {"unit": model.unit_name, "n": 0}), statistics.ROW_NAME: rb}
    c.regions, c.regions_truncated = _regions(bad_rows)
    if c.regions_truncated:
        row_mask = np.zeros(rows, bool)
        row_mask[list(bad_rows)] = True
        row_runs, col_runs = _runs(row_mask), _runs(bad_cols)
        c.spread = {"rows": [list(r) for r in row_runs[:_MAX_REGIONS]],
                    "cols": [list(r) for r in col_runs[:_MAX_REGIONS]]}
        c.regions = []
    return c


def assert_close(got, expected, origin=(0, 0), **kw) -> Census:
    """``census`` that raises ``Mismatch`` unless everything is within tolerance. ``origin``: where
    the compared part starts in the whole output (a partition's first column), so Where names the
    output's own rows and columns."""
    __tracebackhide__ = True    # pytest shows the calling test's line
    c = census(got, expected, **kw)
    c.origin = tuple(int(x) for x in origin)
    if not c.ok:
        raise Mismatch(c, _arrays(got, expected, **kw))
    return c


def _arrays(got, expected, *, atol=0.0, rtol=0.0, tol=None, **_) -> dict:
    if isinstance(tol, ErrorModel):
        tol = tol.tol
    return {"got": got, "expected": expected, "atol": atol, "rtol": rtol, "tol": tol}


def _unravel(flat, shape) -> tuple:
    if flat is None or not shape:
        return ()
    return tuple(int(i) for i in np.unravel_index(int(flat), shape))


def _runs(mask_row: np.ndarray) -> tuple:
    """Column ranges (inclusive) where a boolean row is True."""
    m = np.concatenate([[False], mask_row, [False]]).astype(np.int8)
    d = np.diff(m)
    starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1) - 1
    return tuple(zip(starts.tolist(), ends.tolist()))


def _regions(bad_rows: dict) -> tuple[list, bool]:
    """Merge consecutive rows with identical bad column ranges into rectangles."""
    regions: list = []
    for r in sorted(bad_rows):
        runs = bad_rows[r]
        if regions and regions[-1]["_runs"] == runs and regions[-1]["rows"][1] == r - 1:
            regions[-1]["rows"][1] = r
        else:
            regions.append({"rows": [r, r], "_runs": runs})
    out = []
    for reg in regions:
        nrows = reg["rows"][1] - reg["rows"][0] + 1
        for a, b in reg["_runs"]:
            out.append({"rows": list(reg["rows"]), "cols": [a, b], "count": nrows * (b - a + 1)})
    return out[:_MAX_REGIONS], len(out) > _MAX_REGIONS
