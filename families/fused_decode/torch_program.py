"""The fused Llama decode block (seed 001) as a torch program on bf16 buffers.

Every step reads and writes bf16, as IRON's host buffers: the matrix products (gemv, gemm) are
torch's bf16 ``matmul`` (f32 accumulation, one rounding to bf16, unless the device rounds split-K
partial sums: backends/torch_device/numerics.py), SiLU, softmax and the elementwise products and sums
are torch's bf16 kernels (f32 inside, one rounding); RMSNorm, RoPE and the scaled score products are
computed in f32 and rounded once, the order families/fused_decode/llama_ops.py's error model assumes.
A ``fused`` case runs the same chain and returns only ``fused_out``.
"""
from __future__ import annotations

from accel_regress.families.f32_reduction.golden import EPS
from accel_regress.families.fused_decode import golden as F


def _ops(torch):
    bf16, f32 = torch.bfloat16, torch.float32

    def rmsnorm(p, x, w):
        n = x.shape[-1]
        y = torch.nn.functional.rms_norm(x.to(f32).reshape(-1, n), (n,), w.to(f32), eps=EPS)
        return y.reshape(x.shape).to(bf16)

    def gemv(p, w, x):
        return torch.matmul(w, x.reshape(-1))

    def gemv_batched(p, a, x):
        y = torch.bmm(a.to(f32), x.to(f32).reshape(a.shape[0], -1, 1)).squeeze(-1)
        return (y * float(p.get("scale", 1.0))).to(bf16)

    def gemm(p, a, b):
        bk = b.T if p.get("b_col_maj") else b
        c = torch.matmul(a.reshape(-1, bk.shape[0]), bk)
        return c.T.contiguous() if p.get("c_col_maj") else c

    def rope(p, x):
        d = int(p["head_dim"])
        xh = x.to(f32).reshape(-1, d)
        i = torch.arange(d // 2, dtype=f32, device=x.device)
        inv = torch.pow(torch.tensor(float(p["rope_theta"]), dtype=f32, device=x.device), -(2 * i) / d)
        ang = torch.tensor(float(p["pos"]), dtype=f32, device=x.device) * inv
        c, s = torch.cos(ang), torch.sin(ang)
        h = d // 2
        x1, x2 = xh[:, :h], xh[:, h:]
        return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=1).to(bf16)     # (heads, head_dim)

    def softmax(p, x):
        return torch.softmax(x, dim=-1)

    def masked_softmax(p, x, mask):
        # torch's safe-softmax contract (golden.py MASKED_BLOCK): a row with no valid position is 0
        z = x.to(f32) + mask.to(f32)
        live = z.amax(dim=-1, keepdim=True) > float("-inf")
        y = torch.softmax(torch.where(live, z, torch.zeros_like(z)), dim=-1)
        return torch.where(live, y, torch.zeros_like(y)).to(bf16)

    def silu(p, x):
        return torch.nn.functional.silu(x)

    def mul(p, a, b):
        return a * b.reshape(a.shape)

    def add(p, a, b):
        return a + b.reshape(a.shape)

    def transpose(p, x):
        return x.transpose(-1, -2).contiguous()

    def repeat(p, x):
        return torch.repeat_interleave(x, int(p["n_heads"]) // int(p["n_kv_heads"]), dim=0)

    def kv_append(p, cache, new):
        return torch.cat([cache, new.reshape(cache.shape[0], 1, cache.shape[2])], dim=1)

    return locals()


def timeout(case) -> float:
    return 60.0 if case.params["hidden"] <= 256 else 600.0


def run(case, inputs, device):
    import torch
    ops = _ops(torch)
    bufs = dict(inputs)
    out = {}
    for step in F.block(case):
        y = ops[step.op](F.step_params(case, step), *(bufs[n] for n in step.ins))
        bufs[step.out] = out[step.out] = y
    if case.params["program"] == "fused":
        return {F.FUSED_OUTPUT: out[F.OUTPUT]}
    return out
