"""|got - expected| / allowed over an output, as a small array and as a PNG.

The allowance is the census's own: atol + rtol*|expected| + tol (golden/compare.py), so a
value above 1 is exactly an element the census counted as over tolerance. Large outputs are
reduced by block *maximum* (not mean), so one bad element in a block still shows.

A PNG is drawn once per content: ``render`` keeps what it drew in a cache keyed by everything the
picture depends on (the map, the texts, this file, matplotlib's version), so the known bugs that
fail the same way every run cost a file copy, not a matplotlib figure (~0.3 s each). The cache is
``$ACCEL_HEATMAP_CACHE``, else ``$XDG_CACHE_HOME/accel-regress/heatmaps`` (hardware/util/derived_cache.py).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np

from accel_regress.golden.compare import as_rows, diff_and_allowed
from accel_regress.util.derived_cache import DerivedCache

MAX_ROWS, MAX_COLS = 256, 512
_CHUNK_ELEMENTS = 1 << 22
# Ratio bins: five shades for "within tolerance", four for "over"; boundaries read at a glance.
BOUNDS = [0.0, 1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0, np.inf]
COLORS = ["#f7fbff", "#c6dbef", "#9ecae1", "#6baed6", "#3182bd",     # within: blues
          "#fed976", "#fd8d3c", "#e31a1c", "#67000d"]                # over: yellow to dark red
_BIG = np.float32(1e30)      # stands for "no allowance at all and a difference" (inf) on disk
CACHE = DerivedCache("heatmaps", "ACCEL_HEATMAP_CACHE", ".png", max_files=512)    # ~50 KB each


def ratio_map(got, expected, *, atol=0.0, rtol=0.0, tol=None,
              max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> Optional[dict]:
    """Block-max of |got - expected| / allowed over the last two axes; None on a shape mismatch."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape or expected.size == 0:
        return None
    g2, e2 = as_rows(got), as_rows(expected)
    t2 = None if tol is None else as_rows(np.broadcast_to(np.asarray(tol, np.float64), expected.shape))
    rows, cols = e2.shape
    br, bc = max(1, math.ceil(rows / max_rows)), max(1, math.ceil(cols / max_cols))
    out_rows, out_cols = math.ceil(rows / br), math.ceil(cols / bc)
    out = np.zeros((out_rows, out_cols), np.float32)
    step = max(br, (_CHUNK_ELEMENTS // max(cols, 1)) // br * br)
    for r0 in range(0, rows, step):
        g = g2[r0:r0 + step].astype(np.float64)
        e = e2[r0:r0 + step].astype(np.float64)
        diff, allowed = diff_and_allowed(g, e, atol, rtol, None if t2 is None else t2[r0:r0 + step])
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            r = np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1.0),
                         np.where(diff > 0, np.inf, 0.0))
        r = np.minimum(r, _BIG)
        n = r.shape[0]
        pad_r, pad_c = (-n) % br, (-cols) % bc
        if pad_r or pad_c:
            r = np.pad(r, ((0, pad_r), (0, pad_c)))
        blocks = r.reshape(r.shape[0] // br, br, r.shape[1] // bc, bc).max(axis=(1, 3))
        out[r0 // br:r0 // br + blocks.shape[0]] = blocks
    return {"ratio": out, "shape": [rows, cols], "block": [br, bc]}


def save(path: Path, ratio: np.ndarray) -> None:
    """np.save, atomically (temp file + rename); read back with allow_pickle=False."""
    from accel_regress.util.atomic import atomic_file
    with atomic_file(path, binary=True) as f:
        np.save(f, np.ascontiguousarray(ratio, np.float32), allow_pickle=False)


def load(path: Path) -> np.ndarray:
    a = np.load(path, allow_pickle=False)
    if a.ndim != 2 or a.dtype != np.float32:
        raise ValueError(f"{path}: expected a 2-D float32 ratio map, found {a.dtype} {a.shape}")
    return a


def can_draw() -> bool:
    """matplotlib is installed (asked without importing it: a warm cache never needs it)."""
    import importlib.util
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=1)
def _drawer_version() -> str:
    from importlib import metadata
    return hashlib.sha256(Path(__file__).read_bytes() + metadata.version("matplotlib").encode()).hexdigest()


def _cache_key(ratio: np.ndarray, **texts) -> str:
    h = hashlib.sha256(_drawer_version().encode())
    h.update(json.dumps(texts, sort_keys=True, default=list).encode())
    r = np.ascontiguousarray(ratio, np.float32)
    h.update(f"{r.shape}".encode())
    h.update(r.reshape(-1).view(np.uint8))
    return h.hexdigest()


def render(ratio: np.ndarray, png: Path, *, title: str, subtitle: str = "", shape=None, block=(1, 1)) -> None:
    """The PNG: rows x cols of the output, colour = ratio bin; tick labels in output indices."""
    key = _cache_key(ratio, title=title, subtitle=subtitle, shape=shape, block=block)
    if CACHE.copy_to(key, png):
        return
    draw(ratio, png, title=title, subtitle=subtitle, shape=shape, block=block)
    CACHE.keep(key, png)


def draw(ratio: np.ndarray, png: Path, *, title: str, subtitle: str = "", shape=None, block=(1, 1)) -> None:
    """``render`` without the cache: always a new matplotlib figure."""
    import matplotlib
    matplotlib.use("Agg", force=False)
    from matplotlib import colors
    from matplotlib.figure import Figure

    rows, cols = shape or [ratio.shape[0] * block[0], ratio.shape[1] * block[1]]
    width = 9.0
    height = min(7.0, max(3.0, width * 0.75 * ratio.shape[0] / max(ratio.shape[1], 1) + 1.6))
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    cmap = colors.ListedColormap(COLORS)
    norm = colors.BoundaryNorm([0.0, 1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0, 1e31], cmap.N)
    im = ax.imshow(ratio, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest",
                   extent=(-0.5, cols - 0.5, rows - 0.5, -0.5))
    ax.set_xlabel("column" + (f" (blocks of {block[1]}, max shown)" if block[1] > 1 else ""))
    ax.set_ylabel("row" + (f" (blocks of {block[0]})" if block[0] > 1 else ""))
    ax.set_title(title, fontsize=9, loc="left")
    fig.text(0.99, 0.01, "colour: |got - expected| / allowed; above 1 (yellow to dark red): over tolerance",
             fontsize=7, ha="right", va="bottom", color="#444444")
    if subtitle:
        fig.text(0.01, 0.045, subtitle[:160], fontsize=8, ha="left", va="bottom")
    ticks = [1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0]
    bar = fig.colorbar(im, ax=ax, ticks=ticks, fraction=0.05)
    bar.ax.set_yticklabels(["0.001", "0.01", "0.1", "0.5", "1", "2", "10", "100"], fontsize=7)
    bar.set_label("|got - expected| / allowed", fontsize=8)
    fig.subplots_adjust(left=0.08, right=0.92, top=0.84, bottom=0.2)
    png.parent.mkdir(parents=True, exist_ok=True)
    tmp = png.with_name(f".{png.name}.tmp.png")
    fig.savefig(tmp, format="png")
    os.replace(tmp, png)
