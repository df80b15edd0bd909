"""Error models: how far a correct device result may lie from the reference, per element and
over a whole output.

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

With the device's quantization applied to the reference's inputs too (``quantize=True``: the
reference is a_q @ b_q) term 1 is gone and only 2 and 3 remain: about one output ulp.

The statistical check (``ErrorModel``, used by golden/compare.py) looks at all elements of an
output at once. The model splits each element's error e into a zero-mean part (roundings to
nearest: each one independent, mean 0, |d| <= its bound) with standard deviation <= sigma, and a
part with no promised mean (library functions held only to an ulp bound), |mean| <= mu. In units
w (the output ulp where output rounding is the model, else sigma), with z = e/w, N elements,
L = ln(2/p), p = P_FALSE_ALARM:

bias: Bernstein, P(|sum z - E sum z| >= t) <= 2exp(-t**2 / (2(V + Mt/3))), V = sum var z, M = max |z - Ez|;
    so |sum z| <= sum mu/w + t with t = LM/3 + sqrt((LM/3)**2 + 2LV) fails a correct device with p at most.
spread: W = sum min(z**2, B), B = min((tol/w)**2, 64 E z**2) (golden/statistics.py SPREAD_CLIP), has
    E W <= sum (sigma**2 + mu**2)/w**2 and, as 0 <= each term <= B, var W <= B E W;
    one-sided Bernstein with L = ln(1/p): W <= E W + LB/3 + sqrt((LB/3)**2 + 2L B E W) fails with p at most.
    The clip keeps B at the model's variance, not the worst-case allowance, which grows with K.

Both are checked on the signed error (``bias``) and on sign(reference) * error (``magnitude
bias``, what truncation and a gain error move). Where errors of a row share a term (LayerNorm's
mean and rsqrt), a row is one unit of the sum: V = sum_rows (sum sigma/w)**2, M and B per row.
"""
from __future__ import annotations

import numpy as np

import math
from dataclasses import dataclass, replace
from typing import Optional

from accel_regress.golden import bulk
from accel_regress.golden.dtypes import (
    BF16_UNIT_ROUNDOFF,
    BFP16_BLOCK,
    F32_UNIT_ROUNDOFF,
    FORMATS,
    axis_last_blocks,
    block_step,
    block_view,
    ulp,
)

Z_SIGMA = 8.0

# Each statistic fails a correct device with probability at most 1e-8 (Bernstein). A compared
# output has three (bias, magnitude bias, spread): at most 3e-8; the largest default case (GEMM
# forward and 4 partitions, or mean_var's 2 outputs) at most 1.5e-7, below 1e-6 per case.
P_FALSE_ALARM = 1e-8
# What the model does not promise about a rounding's mean: rounding to nearest is unbiased only
# for values spread evenly within one ulp; a density that changes by a factor rho across one ulp
# moves the mean by rho/12 ulp. rho <= 1/4 for every input class here (values >> 4 ulp apart from
# their own density's scale), so 1/48 ulp, rounded up to 1/32 of the zero-mean part's sigma.
MEAN_RESOLUTION = 1.0 / 32


@dataclass
class ErrorModel:
    """A per-element allowance ``tol`` and what the model predicts for the error's distribution.

    kind ``rounding``: the error is the output's one rounding to nearest in ``dtype`` (sigma =
    half an ulp, which holds for ties too) plus ``tol``'s remainder over u_out*|ref|, a sum of
    ``k`` roundings (sigma = remainder/sqrt(k)); reported in output ulps, or in tol/4 where that
    is larger (near 0 the accumulation term dominates: z stays within 4, so M <= 4, B <= 16).
    kind ``accumulation``: ``tol`` bounds a sum of ``k`` independent zero-mean roundings, each
    within tol/k, so sigma = tol/sqrt(k); ``lib`` is the part of ``tol`` from library functions
    (no promised mean). Reported in units of sigma.
    kind None: no statistical check; ``why_not`` says why.
    """
    tol: np.ndarray
    kind: Optional[str] = None
    dtype: str = "f32"
    k: float = 1.0
    lib: Optional[np.ndarray] = None
    rows_correlated: bool = False
    why_not: str = ""
    # The row statistic (golden/statistics.py ``row_bias``), where a correct device's error has a
    # part shared by a whole row: per element, its unit (1: absolute; the reference: relative),
    # the bound of the shared part and the bound of the element's own zero-mean roundings, both
    # in that unit. None: no row statistic.
    row_unit: Optional[np.ndarray] = None
    row_offset: Optional[np.ndarray] = None
    row_terms: Optional[np.ndarray] = None

    def __post_init__(self):
        self.tol = np.asarray(self.tol)
        if self.lib is not None:
            self.lib = np.broadcast_to(np.asarray(self.lib), self.tol.shape)
        for name in ("row_unit", "row_offset", "row_terms"):
            if getattr(self, name) is not None:
                setattr(self, name, np.broadcast_to(np.asarray(getattr(self, name), np.float64), self.tol.shape))

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.tol, dtype)

    @property
    def shape(self) -> tuple:
        return self.tol.shape

    def __getitem__(self, index) -> "ErrorModel":
        def part(x):
            return None if x is None else x[index]
        return replace(self, tol=self.tol[index], lib=part(self.lib), row_unit=part(self.row_unit),
                       row_offset=part(self.row_offset), row_terms=part(self.row_terms))

    def moments(self, tol: np.ndarray, ref: np.ndarray, lib: Optional[np.ndarray] = None):
        """(unit w, sigma, mu) per element for a chunk of ``tol`` and the reference (float64)."""
        tol = np.asarray(tol, np.float64)
        if self.kind == "rounding":
            u_out = FORMATS[self.dtype][2]
            spacing = ulp(ref, self.dtype)
            w = np.maximum(spacing, tol / 4)
            rest = np.maximum(tol - u_out * np.abs(ref), 0.0) / (1.0 + u_out)
            sigma = spacing / 2 + rest / math.sqrt(self.k)
        else:
            lib = np.zeros_like(tol) if lib is None else np.asarray(lib, np.float64)
            sigma = np.maximum(tol - lib, 0.0) / math.sqrt(self.k)
            w = sigma
        mu = MEAN_RESOLUTION * sigma + (0.0 if lib is None or self.kind == "rounding" else lib)
        return w, sigma, mu

    @property
    def unit_name(self) -> str:
        return "ulp" if self.kind == "rounding" else "sigma"


def exact_model(shape, why: str = "exact: compared bit for bit") -> ErrorModel:
    return ErrorModel(np.zeros(shape), None, why_not=why)


def bernstein(variance: float, bound: float, p: float = P_FALSE_ALARM, two_sided: bool = True) -> float:
    """The t with P(S - ES >= t) <= p for a sum S of independent terms (see the docstring)."""
    L = math.log((2.0 if two_sided else 1.0) / p)
    a = L * bound / 3.0
    return a + math.sqrt(a * a + 2.0 * L * max(variance, 0.0))


def gamma(n: int, u: float = F32_UNIT_ROUNDOFF) -> float:
    return n * u / (1.0 - n * u)


def _block_stats(x: np.ndarray, axis: int):
    """Per block of 8 along ``axis`` (moved last): max |x|, sum x**2, and the bfp16 step."""
    blocks = axis_last_blocks(x, axis)
    amax = np.max(np.abs(blocks), axis=-1)
    return amax, np.sum(blocks * blocks, axis=-1), block_step(amax)


def _block_absmax(x: np.ndarray, axis: int) -> np.ndarray:
    """max |x| per block of 8 along ``axis``, blocks counted in place of that axis."""
    blocks = block_view(x, axis)
    shape = list(np.shape(x))
    shape[axis] = blocks.shape[1]
    return np.max(np.abs(blocks), axis=2).reshape(shape)


_PIECE_ELEMENTS = 1 << 18           # elements per piece of an elementwise pass: stays in cache


def _output_tolerance(absprod: np.ndarray, ref: np.ndarray, K: int, out_unit_roundoff: float) -> np.ndarray:
    """tol = e + u_out * (|ref| + e), e = 2 gamma_K * absprod, in place of ``absprod`` (float32,
    each op rounded as the formula's float32 ops are), in cache-sized row pieces on every core."""
    coef = np.float32(2 * gamma(K))
    rows = max(1, _PIECE_ELEMENTS // max(1, ref.shape[1]))

    def piece(r0: int, r1: int) -> None:
        e = absprod[r0:r1]
        e *= coef
        t = np.abs(ref[r0:r1])
        t += e
        t *= np.float32(out_unit_roundoff)
        e += t
    bulk.run(piece, ref.shape[0], rows)
    return absprod


def gemm_bfp16(a: np.ndarray, b: np.ndarray, ref: np.ndarray, *, bfp16: bool, quantized: bool = False,
               out_unit_roundoff: float = BF16_UNIT_ROUNDOFF, z: float = Z_SIGMA) -> ErrorModel:
    """Error model of C = a @ b as the module docstring describes.

    a: (M, K), b: (K, N) the reference's inputs, ref: (M, N) reference; ``quantized``: a and b
    are already the device's bfp16 values, so term 1 does not apply. The statistical check
    needs independent elements: without ``quantized`` one input's quantization error reaches a
    whole row or column of C, so only the per-element bound applies then.
    """
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    if bfp16 and not quantized:
        return _gemm_bfp16_unquantized(a, b, ref, out_unit_roundoff, z)
    return gemm_bfp16_quantized(_block_absmax(a, 1), _block_absmax(b, 0), ref, a.shape[1], bfp16=bfp16,
                                out_unit_roundoff=out_unit_roundoff)


def _plus_half_step(m: np.ndarray) -> np.ndarray:
    """m + (the bfp16 step of blocks with maximum m) / 2, in pieces of columns: few fresh pages."""
    out = np.empty_like(m)
    cols = max(1, _PIECE_ELEMENTS // m.shape[0])

    def piece(c0: int, c1: int) -> None:
        half = block_step(m[:, c0:c1])
        half /= 2
        np.add(m[:, c0:c1], half, out=out[:, c0:c1])
    bulk.run(piece, m.shape[1], cols)
    return out


def gemm_bfp16_quantized(amax: np.ndarray, bmax: np.ndarray, ref: np.ndarray, K: int, *, bfp16: bool = True,
                         out_unit_roundoff: float = BF16_UNIT_ROUNDOFF, out: Optional[np.ndarray] = None) -> ErrorModel:
    """``gemm_bfp16`` of the device's own operands (terms 2 and 3) from their block maxima: amax
    (M, K/8) of a, bmax (K/8, N) of b, max |value| per block of 8 along K. The allowance is
    written to ``out`` (C-contiguous float32, ref's shape) when given."""
    if bfp16:
        amax, bmax = _plus_half_step(amax), _plus_half_step(bmax)
    absprod = np.matmul(amax, bmax, out=bulk.empty(ref.shape) if out is None else out)   # sum |a_q||b_q| / 8
    absprod *= BFP16_BLOCK
    return ErrorModel(_output_tolerance(absprod, ref, K, out_unit_roundoff), "rounding", dtype="bf16", k=2 * K)


def _gemm_bfp16_unquantized(a, b, ref, out_unit_roundoff: float, z: float) -> ErrorModel:
    K = a.shape[1]
    amax, asq, sa = _block_stats(a, axis=1)            # (M, Kb)
    bmax, bsq, sb = _block_stats(b, axis=0)            # (N, Kb)
    ha, hb = sa / 2, sb / 2
    absprod = BFP16_BLOCK * ((amax + ha) @ (bmax + hb).T)          # bounds sum |a_q||b_q| over K
    worst = BFP16_BLOCK * (ha @ bmax.T + amax @ hb.T + ha @ hb.T)
    var = (sa * sa / 12) @ bsq.T + asq @ (sb * sb / 12).T
    e = 2 * gamma(K) * absprod + np.minimum(z * np.sqrt(var), worst)
    tol = (e + out_unit_roundoff * (np.abs(ref) + e)).astype(np.float32)
    return ErrorModel(tol, None, why_not="bfp16 quantization not applied to the reference: one input's "
                      "quantization error is shared by a whole row of C, so elements are not independent")
