"""Number formats the devices use: bf16 (via ml_dtypes) and AIE block floating point bfp16."""
from __future__ import annotations

import numpy as np
from ml_dtypes import bfloat16

BF16_UNIT_ROUNDOFF = 2.0 ** -8      # bf16 keeps 8 significant bits (7 stored + implicit)
F32_UNIT_ROUNDOFF = 2.0 ** -24

BFP16_BLOCK = 8                     # elements sharing one exponent
BFP16_MANTISSA_BITS = 8             # signed two's-complement mantissa per element
# An element is stored as m * 2**(E - 6), m in [-128, 127], E = floor(log2(max |x| in block)),
# so the block maximum keeps 7 magnitude bits and rounding to nearest is off by at most 2**(E-7).
BFP16_UNIT_ROUNDOFF = 2.0 ** -(BFP16_MANTISSA_BITS - 1)


# name -> (significant bits, smallest normal exponent, unit roundoff)
FORMATS = {"bf16": (8, -126, 2.0 ** -8), "f16": (11, -14, 2.0 ** -11), "f32": (24, -126, 2.0 ** -24)}


def ulp(x, fmt: str) -> np.ndarray:
    """Spacing of format ``fmt`` at |x| (the subnormal spacing below the normal range), float64.

    Read from the exponent bits (no float64 frexp/ldexp): 2**(max(floor(log2|x|), emin) - (p - 1)).
    Zeros and subnormals get the subnormal spacing; inf counts as exponent -1 and NaN as emin,
    the values this function has always given them."""
    p, emin, _ = FORMATS[fmt]
    x = np.asarray(x)
    if x.dtype != np.float32 and x.dtype != np.float64:
        x = x.astype(np.float32 if x.dtype in (bfloat16, np.float16) else np.float64)   # exact widening
    ibits, mbits, bias = (np.int32, 23, 127) if x.dtype == np.float32 else (np.int64, 52, 1023)
    shape = x.shape
    bits = x.reshape(-1).view(ibits)
    top = (1 << (8 * x.itemsize - 1 - mbits)) - 1            # the biased exponent of inf and NaN
    biased = (bits >> mbits) & top
    e = (biased - bias).astype(np.int64)                      # floor(log2|x|) for a normal x
    special = biased == top
    if special.any():
        e[special] = np.where((bits[special] & ((1 << mbits) - 1)) == 0, -1, emin)
    e = np.maximum(e, emin) - (p - 1) + 1023
    out = (e << 52).view(np.float64).reshape(shape)
    return out[()] if out.ndim == 0 else out


def to_bf16(x) -> np.ndarray:
    """Round to bf16 (round to nearest even), as an ml_dtypes bfloat16 array."""
    return np.asarray(x, dtype=np.float32).astype(bfloat16)


def _block_view(x: np.ndarray, axis: int) -> tuple[np.ndarray, int]:
    """Move ``axis`` last and pad it with zeros to a whole number of bfp16 blocks."""
    moved = np.moveaxis(np.asarray(x, dtype=np.float32), axis, -1)
    n = moved.shape[-1]
    pad = (-n) % BFP16_BLOCK
    if pad:
        moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (pad,), np.float32)], axis=-1)
    return moved.reshape(moved.shape[:-1] + (-1, BFP16_BLOCK)), n


def bfp16_step(x: np.ndarray, axis: int) -> np.ndarray:
    """Quantization step 2**(E-6) of each block along ``axis``, shape (..., n_blocks) with axis last."""
    blocks, _ = _block_view(x, axis)
    bmax = np.max(np.abs(blocks), axis=-1)
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.where(bmax > 0, bmax, 1.0)))
    return np.where(bmax > 0, np.exp2(exp - (BFP16_MANTISSA_BITS - 2)), 0.0).astype(np.float32)


# How a block's mantissas are rounded: the AIE conversion follows the core's rounding mode, which
# IRON's GEMM kernel sets to conv_even (ties to even) unless built with round_conv_even=False,
# which leaves floor.
BLOCK_ROUNDINGS = {"nearest-even": np.rint, "floor": np.floor}


def quantize_bfp16(x: np.ndarray, axis: int, rounding: str = "nearest-even") -> np.ndarray:
    """Quantize to bfp16 along ``axis`` (blocks of 8 sharing the largest exponent), back as float32."""
    blocks, n = _block_view(x, axis)
    step = bfp16_step(x, axis)[..., None]
    safe = np.where(step > 0, step, 1.0)
    lo, hi = -(2 ** (BFP16_MANTISSA_BITS - 1)), 2 ** (BFP16_MANTISSA_BITS - 1) - 1
    q = np.clip(BLOCK_ROUNDINGS[rounding](blocks / safe), lo, hi) * step
    q = q.reshape(q.shape[:-2] + (-1,))[..., :n]
    return np.ascontiguousarray(np.moveaxis(q.astype(np.float32), -1, axis))
