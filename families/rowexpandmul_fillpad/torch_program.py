"""Seed 002's tile op as a torch program: the row-broadcast multiply in the tile dtype (f32, f16 or
bf16: one rounding of the exact product), then the valid-shape mask and the pad fill over the whole
[R, C] tile, returned as the float32 that holds it."""
from __future__ import annotations

from accel_regress.families.rowexpandmul_fillpad import golden as tiles

DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def run(case, inputs, device):
    import torch
    cfg = tiles.config_of(case)
    dt = getattr(torch, DTYPES[cfg.dtype])
    g = inputs["gated"].to(dt)
    product = g if cfg.variant == "loaded" else g * inputs["scale"].to(dt)   # (R, 1) broadcasts along the row
    rows = torch.arange(cfg.rows, device=device).reshape(-1, 1)
    cols = torch.arange(cfg.cols, device=device).reshape(1, -1)
    valid = (rows < cfg.valid_row) & (cols < cfg.valid_col)
    pad = torch.tensor(float(tiles.pad_value(cfg.pad, cfg.dtype)), dtype=torch.float32, device=device)
    return {"out": torch.where(valid, product.to(torch.float32), pad)}
