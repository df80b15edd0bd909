"""Error models: how far a correct device result may lie from the reference, per element.

GEMM on an AIE with bf16 inputs, optional bfp16 emulation, f32 accumulation, bf16 output
(``gemm_bfp16``). Let a, b be the bf16 inputs the reference also uses, and s_a, s_b the bfp16
step 2**(E-6) of each element's block of 8 along K (0 without bfp16 emulation).

1. Input quantization: rounding to nearest moves each element by at most s/2, so one product
   moves by at most s_a/2*|b| + |a|*s_b/2 + s_a*s_b/4. Summed over K that is the worst case W.
   Modelled instead as independent uniform errors (variance s**2/12), the sum has variance
   V = sum_k (s_a**2/12 * b**2 + a**2 * s_b**2/12); a sum of >= 8 bounded independent terms has
   tails lighter than a normal's, so |error| <= z*sqrt(V) with z = 8 (normal tail 1e-15 per
   element). The quantization allowance is min(z*sqrt(V), W): never looser than the worst case.
2. Accumulation: f32 summation of K terms in any order is within gamma_K * sum|a*b|,
   gamma_K = K*u/(1 - K*u), u = 2**-24 (Higham, Thm 3.1); counted twice, device and reference.
3. Output rounding to bf16 adds at most 2**-8 of the value.

So tol = e + 2**-8 * (|ref| + e), e = min(z*sqrt(V), W) + 2*gamma_K*sum|a||b|. Since s is constant
over a block, every sum over K is a matmul over K/8 blocks of block maxima and block sums, which
keeps the model an eighth of the cost of the GEMM itself. The block maximum bounds |a| and |b|.
"""
from __future__ import annotations

import numpy as np

from golden.dtypes import BF16_UNIT_ROUNDOFF, BFP16_BLOCK, F32_UNIT_ROUNDOFF, _block_view, bfp16_step

Z_SIGMA = 8.0


def gamma(n: int, u: float = F32_UNIT_ROUNDOFF) -> float:
    return n * u / (1.0 - n * u)


def _block_stats(x: np.ndarray, axis: int):
    """Per block of 8 along ``axis`` (moved last): max |x|, sum x**2, and the bfp16 step."""
    blocks, _ = _block_view(x, axis)
    return np.max(np.abs(blocks), axis=-1), np.sum(blocks * blocks, axis=-1), bfp16_step(x, axis)


def gemm_bfp16(a: np.ndarray, b: np.ndarray, ref: np.ndarray, *, bfp16: bool,
               out_unit_roundoff: float = BF16_UNIT_ROUNDOFF, z: float = Z_SIGMA) -> np.ndarray:
    """Per-element allowance for C = a @ b computed as the module docstring describes.

    a: (M, K), b: (K, N), ref: (M, N) reference; returns float32 (M, N).
    """
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    K = a.shape[1]
    amax, asq, sa = _block_stats(a, axis=1)            # (M, Kb)
    bmax, bsq, sb = _block_stats(b, axis=0)            # (N, Kb)
    if not bfp16:
        sa = np.zeros_like(sa)
        sb = np.zeros_like(sb)
    ha, hb = sa / 2, sb / 2
    absprod = BFP16_BLOCK * ((amax + ha) @ (bmax + hb).T)          # bounds sum |a_q||b_q| over K
    e = 2 * gamma(K) * absprod
    if bfp16:
        worst = BFP16_BLOCK * (ha @ bmax.T + amax @ hb.T + ha @ hb.T)
        var = (sa * sa / 12) @ bsq.T + asq @ (sb * sb / 12).T
        e = e + np.minimum(z * np.sqrt(var), worst)
    return (e + out_unit_roundoff * (np.abs(ref) + e)).astype(np.float32)
