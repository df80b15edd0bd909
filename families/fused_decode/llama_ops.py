"""The operators of a Llama decode step as IRON runs them (seed 001): references and error models.

Every buffer is bf16 (IRON's host buffers are torch.bfloat16); an operator reads bf16, computes in
f32 and rounds its output once to bf16. ``reference`` is float64 on the (already bf16) inputs;
``tolerance`` is the per-element allowance |device - reference| of a correct device.

Error model, per operator, with u = 2**-24 (f32) and ub = 2**-8 (bf16 unit roundoff):
- the f32 computation is within e of the exact result (each operator's ``_e_*`` below, derived
  from Higham's gamma_n = n*u/(1-n*u) for sums and products and the OpenCL C ulp bounds for exp,
  cos, sin and pow: 3, 4, 4 and 16 ulp, one ulp <= 2u of the value);
- rounding that f32 result to bf16 adds at most ub*(|y| + e), or half the bf16 subnormal spacing
  (2**-134) below 2**-126.
So tol = e + ub*(|y| + e) + 2**-134. Data movement (transpose, repeat, kv_append) is exact: tol = 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from accel_regress.golden.dtypes import BF16_UNIT_ROUNDOFF as UB
from accel_regress.golden.dtypes import F32_UNIT_ROUNDOFF as U
from accel_regress.families.f32_reduction.golden import EPS, tol_rmsnorm, tol_softmax, gamma

ULP_EXP, ULP_TRIG, ULP_POW = 3.0, 4.0, 16.0


@dataclass(frozen=True)
class Op:
    """reference(p, *inputs) -> float64 output; f32_error(p, inputs, ref) -> allowance of the f32
    computation before the bf16 output rounding (None: exact data movement)."""
    reference: Callable
    f32_error: Callable | None


# Rounding to bf16 in its subnormal range (below 2**-126) is off by up to half its spacing 2**-133.
BF16_SUBNORMAL_HALF_SPACING = 2.0 ** -134


def _out_round(e: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return e + UB * (np.abs(ref) + e) + BF16_SUBNORMAL_HALF_SPACING


# --- references (float64) -------------------------------------------------------------------

def rmsnorm(p, x, w):
    x2 = x.reshape(-1, x.shape[-1])
    r = 1.0 / np.sqrt((x2 * x2).mean(axis=1, keepdims=True) + EPS)
    return (x2 * r * w.reshape(1, -1)).reshape(x.shape)


def gemv(p, w, x):
    return w @ x.reshape(-1)


def gemv_batched(p, a, x):
    return np.einsum("bmk,bk->bm", a, x) * p.get("scale", 1.0)


def gemm(p, a, b):
    """C = A @ B with B stored (N, K) when b_col_maj and C returned (N, M) when c_col_maj; A is
    read as (M, K) rows (a decode step's (heads, head_dim) attention output is one row)."""
    bk = b.T if p.get("b_col_maj") else b
    c = a.reshape(-1, bk.shape[0]) @ bk
    return c.T if p.get("c_col_maj") else c


def rope_angles(p, dtype=np.float64) -> np.ndarray:
    """Angle pos * theta**(-2i/D) for i < D/2, in ``dtype`` arithmetic (f32 is what a device does)."""
    d = int(p["head_dim"])
    i = np.arange(d // 2, dtype=dtype)
    inv = np.power(dtype(p["rope_theta"]), -(dtype(2) * i) / dtype(d)).astype(dtype)
    return (dtype(p["pos"]) * inv).astype(dtype)


def rope(p, x):
    """Rotate-half RoPE (IRON method_type 0, as in Llama): the two halves of each head rotate by
    the same angles."""
    xh = x.reshape(-1, int(p["head_dim"]))
    ang = rope_angles(p, x.dtype.type)       # float64 for the reference, f32 on a device model
    c, s = np.cos(ang), np.sin(ang)
    h = xh.shape[1] // 2
    x1, x2 = xh[:, :h], xh[:, h:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)


def softmax(p, x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def masked_softmax(p, x, mask):
    """softmax(x + mask) over the last axis, with torch's safe-softmax contract: a row whose every
    entry is -inf (no valid position) gives 0, not exp(-inf - -inf) = NaN (golden.py MASKED_BLOCK).
    In the operand's own precision (f32 on a device model, float64 for the reference)."""
    z = x + mask
    m = z.max(axis=-1, keepdims=True)
    live = m > -np.inf
    e = np.exp(z - np.where(live, m, 0))
    s = e.sum(axis=-1, keepdims=True)
    return np.where(live, e / np.where(live, s, 1), 0).astype(z.dtype)


def silu(p, x):
    return x / (1.0 + np.exp(-x))


def mul(p, a, b):
    return a * b.reshape(a.shape)


def add(p, a, b):
    return a + b.reshape(a.shape)


def transpose(p, x):
    return np.swapaxes(x, -1, -2)


def repeat(p, x):
    """GQA: each of the kv heads serves n_heads / n_kv_heads query heads (repeat_interleave)."""
    return np.repeat(x, int(p["n_heads"]) // int(p["n_kv_heads"]), axis=0)


def kv_append(p, cache, new):
    return np.concatenate([cache, new.reshape(cache.shape[0], 1, cache.shape[2])], axis=1)


# --- f32 error of a correct device, before the bf16 output rounding ---------------------------

def _e_rmsnorm(p, ins, ref):
    x, _ = ins
    x2 = x.reshape(-1, x.shape[-1])
    return tol_rmsnorm({"x": x2}, ref.reshape(x2.shape)).reshape(ref.shape)


def _e_dot(k: int, absprod: np.ndarray) -> np.ndarray:
    """f32 sum of k exact products (bf16 x bf16 is exact in f32), any order: gamma_k sum|a b|."""
    return gamma(k) * absprod


def _e_gemv(p, ins, ref):
    w, x = ins
    return _e_dot(w.shape[1], np.abs(w) @ np.abs(x.reshape(-1)))


def _e_gemv_batched(p, ins, ref):
    a, x = ins
    return _e_dot(a.shape[2], np.einsum("bmk,bk->bm", np.abs(a), np.abs(x)) * abs(p.get("scale", 1.0)))


def _e_gemm(p, ins, ref):
    a, b = ins
    return _e_dot(b.shape[1] if p.get("b_col_maj") else b.shape[0], gemm(p, np.abs(a), np.abs(b)))


def _e_rope(p, ins, ref):
    """The angle pos*f: f = theta**(-2i/D) by powf (16 ulp) and one multiply, so |da| <=
    (32u + u)|a|/(1-33u); cos and sin add 4 ulp (<= 8u, their values are <= 1), and up to ub
    more where they are held in bf16, as IRON's RoPE reads them (amd/IRON rope/op.py@1a475cbe:
    angle_table returns a torch.bfloat16 [cos, sin, ...] table, the kernel's input); then two
    products and a sum round (gamma_2)."""
    (x,) = ins
    xh = np.abs(x.reshape(-1, int(p["head_dim"])))
    h = xh.shape[1] // 2
    a = np.abs(rope_angles(p))
    dcs = 33 * U * a / (1 - 33 * U) + 2 * ULP_TRIG * U
    dcs = dcs + UB * (1 + dcs)
    both = xh[:, :h] + xh[:, h:]
    e = both * dcs + gamma(2) * both * (1 + dcs)
    return np.concatenate([e, e], axis=1)


# exp results below f32's smallest normal may come back as 0: measured here, IREE 3.13's llvm-cpu
# math.exp returns 0 for exp(-90) and exp(-96) (IEEE: 8.2e-40, 2.0e-42; no gradual underflow).
F32_SMALLEST_NORMAL = 2.0 ** -126


def _e_softmax(p, ins, ref):
    (x,) = ins
    x2 = x.reshape(-1, x.shape[-1])
    return tol_softmax(x2, ref.reshape(x2.shape)).reshape(ref.shape) + F32_SMALLEST_NORMAL


def _e_masked_softmax(p, ins, ref):
    """The softmax's error on the masked scores: a masked entry (-inf) adds none (tol_softmax), and
    a fully masked row's output is exactly 0."""
    x, mask = ins
    with np.errstate(invalid="ignore"):      # -inf - -inf in a fully masked row, taken as 0 there
        return _e_softmax(p, [x + mask], ref)


def _e_silu(p, ins, ref):
    """x / (1 + exp(-x)): exp 3 ulp (6u), the add and the division one rounding each; the add
    passes exp's relative error on scaled by e/(1+e) <= 1: 8u relative, over (1 - 8u)."""
    return 8 * U * np.abs(ref) / (1 - 8 * U)


def _e_elementwise(p, ins, ref):
    return U * np.abs(ref)


OPS: Mapping[str, Op] = {
    "rmsnorm": Op(rmsnorm, _e_rmsnorm),
    "gemv": Op(gemv, _e_gemv),
    "gemv_batched": Op(gemv_batched, _e_gemv_batched),
    "gemm": Op(gemm, _e_gemm),
    "rope": Op(rope, _e_rope),
    "softmax": Op(softmax, _e_softmax),
    "masked_softmax": Op(masked_softmax, _e_masked_softmax),
    "silu": Op(silu, _e_silu),
    "mul": Op(mul, _e_elementwise),
    "add": Op(add, _e_elementwise),
    "transpose": Op(transpose, None),
    "repeat": Op(repeat, None),
    "kv_append": Op(kv_append, None),
}


def reference(op: str, p: Mapping, inputs) -> np.ndarray:
    """float64 result of ``op`` on ``inputs`` (any float dtype; read as float64)."""
    return OPS[op].reference(p, *[np.asarray(x, np.float64) for x in inputs])


def tolerance(op: str, p: Mapping, inputs, ref: np.ndarray) -> np.ndarray:
    """Per-element allowance of a correct bf16 device (module docstring); 0 for data movement."""
    err = OPS[op].f32_error
    if err is None:
        return np.zeros(ref.shape)
    return _out_round(err(p, [np.asarray(x, np.float64) for x in inputs], ref), ref)
