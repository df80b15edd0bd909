"""Number formats the devices use: bf16 (via ml_dtypes) and AIE block floating point bfp16."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from ml_dtypes import bfloat16

from accel_regress.golden import bulk

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


def block_view(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` as (pre, blocks, 8, post) float32 blocks of 8 along ``axis``, padded with zeros (a
    view where x's strides allow: a panel of columns is not copied)."""
    x = np.asarray(x, dtype=np.float32)
    axis = axis % x.ndim
    pre, n, post = int(np.prod(x.shape[:axis], dtype=np.int64)), x.shape[axis], int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    v = x.reshape(pre, n, post)
    pad = (-n) % BFP16_BLOCK
    if pad:
        v = np.concatenate([v, np.zeros((pre, pad, post), np.float32)], axis=1)
    return v.reshape(pre, -1, BFP16_BLOCK, post)


def axis_last_blocks(x: np.ndarray, axis: int) -> np.ndarray:
    """Blocks of 8 along ``axis`` with ``axis`` moved last: shape (..., n_blocks, 8), padded with
    zeros; a view of ``x`` where the blocks need no padding (its strides set numpy's order of sums)."""
    moved = np.moveaxis(np.asarray(x, dtype=np.float32), axis, -1)
    pad = (-moved.shape[-1]) % BFP16_BLOCK
    if pad:
        moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (pad,), np.float32)], axis=-1)
    return moved.reshape(moved.shape[:-1] + (-1, BFP16_BLOCK))


def _blocks_shape(shape, axis: int) -> tuple:
    axis = axis % len(shape)
    return tuple(shape[:axis]) + (-(-shape[axis] // BFP16_BLOCK),) + tuple(shape[axis + 1:])


# Block maxima whose exponent field is 0 (zero, subnormal), 1-6 (2**(E-6) subnormal or below
# f32) or 255, or whose mantissa lies above bf16's largest (0x7F0000: float32 log2 rounds up near
# the next power of two) take the log2 formula; every other maximum, and every bf16 one, reads E
# from its exponent field, which equals floor(log2) there (an exhaustive selftest).
_EXP_FIELD_SAFE = (7, 254)
_MANTISSA_LOG2_SAFE = 0x7F0000


def _step_by_log2(bmax: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = np.floor(np.log2(np.where(bmax > 0, bmax, 1.0)))
        return np.where(bmax > 0, np.exp2(exp - (BFP16_MANTISSA_BITS - 2)), 0.0).astype(np.float32)


def block_step(bmax: np.ndarray) -> np.ndarray:
    """The bfp16 step 2**(E-6), E = floor(log2(bmax)), of blocks whose largest magnitude is
    ``bmax`` (float32); 0 for a zero block and where 2**(E-6) is below float32's range."""
    bmax = np.asarray(bmax, np.float32)
    bits = bmax.view(np.int32)
    field = (bits >> 23) & 0xFF
    step = ((field - (BFP16_MANTISSA_BITS - 2)) << 23).view(np.float32)
    odd = (field < _EXP_FIELD_SAFE[0]) | (field > _EXP_FIELD_SAFE[1]) | ((bits & 0x7FFFFF) > _MANTISSA_LOG2_SAFE)
    if odd.any():
        step[odd] = _step_by_log2(bmax[odd])
    return step


def bfp16_step(x: np.ndarray, axis: int) -> np.ndarray:
    """Quantization step 2**(E-6) of each block along ``axis``, shape (..., n_blocks) with axis last."""
    return block_step(np.max(np.abs(axis_last_blocks(x, axis)), axis=-1))


# How a block's mantissas are rounded: the AIE conversion follows the core's rounding mode, which
# IRON's GEMM kernel sets to conv_even (ties to even) unless built with round_conv_even=False,
# which leaves floor.
BLOCK_ROUNDINGS = {"nearest-even": np.rint, "floor": np.floor}
_MANTISSA_RANGE = (-(2 ** (BFP16_MANTISSA_BITS - 1)), 2 ** (BFP16_MANTISSA_BITS - 1) - 1)
_CACHE_ELEMENTS = 1 << 18           # elements per block-row group: one group's temporaries stay in cache


@dataclass(frozen=True)
class Bfp16:
    """An array quantized to bfp16 along one axis: ``values`` (float32, the input's shape) and, per
    block (the input's shape with that axis counted in blocks of 8), ``absmax``, the largest
    |value| after quantization (what the error model needs: no pass over the values)."""
    values: np.ndarray
    absmax: np.ndarray


def to_bfp16(x: np.ndarray, axis: int, rounding: str = "nearest-even", out: Optional[np.ndarray] = None) -> Bfp16:
    """Quantize to bfp16 along ``axis``: each block of 8 shares E = floor(log2(max |x|)) and keeps
    round(x / 2**(E-6)) in [-128, 127] (``rounding``: BLOCK_ROUNDINGS). Block rows are quantized in
    cache-sized groups on every core; the ops and their order are the elementwise formula's. The
    values go to ``out`` (C-contiguous float32, x's shape) when given."""
    rnd = BLOCK_ROUNDINGS[rounding]
    x = np.asarray(x, dtype=np.float32)
    blocks = block_view(x, axis)
    pre, nb, _, post = blocks.shape
    rows = blocks.reshape(pre * nb, BFP16_BLOCK, post)
    if out is not None and (out.shape != x.shape or out.dtype != np.float32 or not out.flags.c_contiguous):
        raise ValueError(f"out must be C-contiguous float32 of shape {x.shape}, not {out.dtype} {out.shape}")
    padded = nb * BFP16_BLOCK != x.shape[axis]
    q = out.reshape(rows.shape) if out is not None and not padded else np.empty_like(rows)
    absmax = np.empty((pre * nb, post), np.float32)
    lo, hi = _MANTISSA_RANGE

    def quantized(v, safe, st, out):
        np.divide(v, safe, out=out)
        rnd(out, out=out)
        np.clip(out, lo, hi, out=out)
        out *= st
        return out

    def group(r0: int, r1: int) -> None:
        b = rows[r0:r1]
        top, bottom = b.max(axis=1), b.min(axis=1)
        st = block_step(np.maximum(top, -bottom))
        safe = np.where(st > 0, st, 1.0)
        quantized(b, safe[:, None, :], st[:, None, :], q[r0:r1])
        # rounding and clipping are monotone: the largest |q| is that of the largest or the smallest x
        np.maximum(np.abs(quantized(top, safe, st, top)), np.abs(quantized(bottom, safe, st, bottom)),
                   out=absmax[r0:r1])

    bulk.run(group, pre * nb, max(1, _CACHE_ELEMENTS // (BFP16_BLOCK * post)))
    values = q.reshape(pre, nb * BFP16_BLOCK, post)
    values = (np.ascontiguousarray(values[:, :x.shape[axis]]) if padded else values).reshape(x.shape)
    if out is not None and padded:
        out[...] = values
    shape = _blocks_shape(x.shape, axis)
    return Bfp16(out if out is not None else values, absmax.reshape(shape))


def quantize_bfp16(x: np.ndarray, axis: int, rounding: str = "nearest-even") -> np.ndarray:
    """Quantize to bfp16 along ``axis`` (blocks of 8 sharing the largest exponent), back as float32."""
    return to_bfp16(x, axis, rounding).values
