"""A model of PTO vector tiles on a2a3 for seed 002 (pypto -> ptoas -> pto-isa).

A tile has a static shape (rows, cols: the buffer, a row padded up to whole 32-byte UB blocks),
a valid shape (valid_row, valid_col: what ops compute over) and a pad value. The ops:

- ``load``: TLOAD fills the whole buffer with the tile's pad value, then copies the valid part;
- ``mul`` / ``trowexpandmul``: compute over the DESTINATION's valid shape (as pto-isa's
  TROWEXPANDMUL_IMPL does: ``validRow = dst.GetValidRow()``), rounding each product once to the
  tile dtype; elements outside it are left as they were;
- ``set_validshape``: metadata only;
- ``fillpad``: dst = src inside src's valid shape, dst's pad value elsewhere;
- ``store``: writes the logical [R, C] part of the whole tile to global memory.

Unified buffer (UB) memory is a dict of named buffers; with memory reuse the product tile
aliases the input tile's buffer (pypto's MemoryReuse pass), without it it has its own.

Faults (seed 002):
- ``pto-bare-tile-validshape``: ptoas declares the fused variant's trowexpandmul output tile
  bare (``Tile<...> vN;``), so trowexpandmul runs over an uninitialized valid shape. What the
  board shows for the [16, 256] f32 valid_row=1 case: in the valid rows, row 0 col 0 is right,
  row 0 cols 1-15 are garbage (the vbrcb scratch spilling into the tile), every other valid
  element is about 0 (never written); the padded rows are right (fillpad writes them); 255 of
  4096 elements are wrong. The model does exactly that to the fused outputs.
- ``pto-bare-tile-validshape-sim``: the same fused cases crash a2a3sim (SIGSEGV during
  [RUN] runtime): ``accel_regress.Crash``.
Controls (split, loaded, mul) are unaffected by both.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.case import Case
from accel_regress.golden.inputs import rng
from accel_regress.core.errors import Crash


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


@dataclass
class Tile:
    """A view of a UB buffer with PTO tile metadata."""
    buf: np.ndarray          # (rows, padded cols) float32 holding dtype values
    rows: int
    cols: int                # logical columns (the tensor's); buf may be wider
    valid_row: int
    valid_col: int
    pad: str                 # "null" (load targets, product tiles), "zero", "max", "min"
    dtype: str

    def pad_value(self) -> float:
        return 0.0 if self.pad == "null" else tiles.pad_value(self.pad, self.dtype)


class UB:
    """The unified buffer: named allocations; an alias shares its target's storage."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.block = tiles.block_elements(dtype)
        self.buffers: dict[str, np.ndarray] = {}

    def alloc(self, name: str, rows: int, cols: int, *, alias: str | None = None) -> np.ndarray:
        if alias is not None:
            self.buffers[name] = self.buffers[alias]
        else:
            # Fresh UB is zero here; on the board it holds whatever ran before.
            self.buffers[name] = np.zeros((rows, _round_up(cols, self.block)), np.float32)
        return self.buffers[name]

    def tile(self, name: str, rows: int, cols: int, valid_row: int, valid_col: int, pad: str = "null",
             alias: str | None = None) -> Tile:
        return Tile(self.alloc(name, rows, cols, alias=alias), rows, cols, valid_row, valid_col, pad, self.dtype)


def load(dst: Tile, gm: np.ndarray) -> Tile:
    dst.buf[...] = dst.pad_value()
    dst.buf[:dst.valid_row, :dst.valid_col] = gm[:dst.valid_row, :dst.valid_col]
    return dst


def trowexpandmul(dst: Tile, src: Tile, scale: Tile) -> Tile:
    vr, vc = dst.valid_row, dst.valid_col          # read from dst, as TROWEXPANDMUL_IMPL does
    prod = src.buf[:vr, :vc] * scale.buf[:vr, :1]  # float32 product of dtype values: exact for
    dst.buf[:vr, :vc] = tiles.round_to(prod, dst.dtype)   # f16/bf16, one rounding for f32
    return dst


def mul(dst: Tile, a: Tile, b: Tile) -> Tile:
    vr, vc = dst.valid_row, dst.valid_col
    dst.buf[:vr, :vc] = tiles.round_to(a.buf[:vr, :vc] * b.buf[:vr, :vc], dst.dtype)
    return dst


def set_validshape(t: Tile, valid_row: int, valid_col: int) -> Tile:
    t.valid_row, t.valid_col = valid_row, valid_col
    return t


def fillpad(dst: Tile, src: Tile) -> Tile:
    inside = src.buf[:src.valid_row, :src.valid_col].copy()    # src may alias dst
    dst.buf[...] = dst.pad_value()
    dst.buf[:src.valid_row, :src.valid_col] = inside
    dst.valid_row, dst.valid_col = dst.rows, dst.cols
    return dst


def store(gm: np.ndarray, t: Tile) -> np.ndarray:
    gm[...] = t.buf[:t.rows, :t.cols]
    return gm


def run(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    with np.errstate(over="ignore", invalid="ignore"):     # IEEE 754 products (specials class)
        return _run(case, inputs)


def _run(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    cfg = tiles.config_of(case)
    R, C, dt = cfg.rows, cfg.cols, cfg.dtype
    gated = tiles.round_to(inputs["gated"], dt)
    scale = tiles.round_to(inputs["scale"], dt)
    out = np.zeros((R, C), np.float32)
    ub = UB(dt)
    g = load(ub.tile("gated", R, C, R, C), gated)
    if cfg.variant == "loaded":
        h_raw = g
    else:
        if cfg.variant == "mul":
            s = load(ub.tile("scale", R, C, R, C), scale)
        else:
            s = load(ub.tile("scale", R, 1, R, 1), scale)
        h_raw = ub.tile("h_raw", R, C, R, C, alias="gated" if cfg.memory_reuse else None)
        (mul if cfg.variant == "mul" else trowexpandmul)(h_raw, g, s)
        if cfg.variant == "split":
            # End of the first block: the product goes to GM and comes back in a fresh block.
            gm_tmp = store(np.zeros((R, C), np.float32), h_raw)
            ub = UB(dt)
            h_raw = load(ub.tile("h_tmp", R, C, R, C), gm_tmp)
    set_validshape(h_raw, cfg.valid_row, cfg.valid_col)
    h = fillpad(ub.tile("h", R, C, R, C, pad=cfg.pad), h_raw)
    store(out, h)
    return {"out": out}


def timeout(case: Case) -> float:
    return 30.0


# --- faults -------------------------------------------------------------------------------------

GARBAGE_COLS = 16     # cols 0-15 of row 0: the vbrcb scratch that lands in the tile (col 0 right)


def _is_fused(case: Case) -> bool:
    return case.op == tiles.OP and case.params.get("variant") == "fused"


def bare_tile_validshape(case: Case, outputs: dict) -> dict:
    """The board's symptom of the bare trowexpandmul output tile (see the module docstring)."""
    if not _is_fused(case):
        return outputs
    p = case.params
    vr, vc = p["valid_row"], p["valid_col"]
    out = np.array(outputs["out"], np.float32, copy=True)
    if vr == 0 or vc == 0:
        return outputs
    keep = out[0, 0]
    out[:vr, :vc] = 0.0                                  # never written: fresh UB
    out[0, 0] = keep                                     # the one element computed right
    n = min(GARBAGE_COLS, vc) - 1
    if n > 0:
        gen = rng(case.seed ^ 0x5EED_0002)
        top = 14 if p["dtype"] == "f16" else 60          # garbage: large, both signs, finite
        exps = gen.integers(8, top + 1, size=n).astype(np.float64)
        signs = np.where(gen.integers(0, 2, size=n) > 0, 1.0, -1.0)
        out[0, 1:1 + n] = tiles.round_to(signs * np.exp2(exps), p["dtype"])
    outputs["out"] = out
    return outputs


def bare_tile_validshape_sim(case: Case, outputs: dict) -> dict:
    """a2a3sim's symptom: the runtime dies with SIGSEGV."""
    if not _is_fused(case):
        return outputs
    raise Crash("a2a3sim: SIGSEGV (core dump) during [RUN] runtime "
                "(trowexpandmul over an uninitialized valid shape)", stage="run",
                detail={"signal": "SIGSEGV", "fault": "pto-bare-tile-validshape-sim"})


FAULTS = {"pto-bare-tile-validshape": bare_tile_validshape,
          "pto-bare-tile-validshape-sim": bare_tile_validshape_sim}
