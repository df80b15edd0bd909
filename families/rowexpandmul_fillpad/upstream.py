"""The seed 002 tile in an upstream bundle (accel-regress upstream, hardware/results/upstream): the
test's expected tile and rule, and one product alone in a 1x1 tile."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.case import Case
from accel_regress.results.upstream.bundle import Expected


def expected(case: Case, inputs) -> dict[str, Expected]:
    cfg = tiles.config_of(case)
    ref = tiles.tile_reference(inputs, cfg)
    exact = tiles.bit_exact(cfg)
    how = (f"float64 product gated x scale of the {cfg.dtype} inputs with the valid shape and pad applied "
           "(accel-regress, families/rowexpandmul_fillpad/golden.py)"
           + (f", rounded once to {cfg.dtype} (to nearest, ties to even): the exact IEEE 754 result, compared bit "
              "for bit" if exact else "; allowance: one rounding of the product"))
    tol = tiles.tolerances(case, inputs, {"out": ref})["out"].tol
    return {"out": Expected(np.asarray(ref, np.float64), tol, exact, how)}


def shrink(case: Case, inputs, output: str, index: tuple) -> Optional[tuple[Case, dict]]:
    """The product behind tile element ``index`` alone: a 1x1 tile, valid 1x1."""
    cfg = tiles.config_of(case)
    r, c = (int(i) for i in index)
    if not (r < cfg.valid_row and c < cfg.valid_col) or cfg.variant == "loaded":
        return None
    small = replace(cfg, rows=1, cols=1, valid_row=1, valid_col=1, valid_rows=None)
    scale = np.asarray(inputs["scale"])
    s = scale[r, c] if cfg.variant == "mul" else scale[r, 0]
    return tiles.make_case(small), {"gated": np.array([[inputs["gated"][r, c]]], np.float32),
                                    "scale": np.array([[s]], np.float32)}
