"""IRON's partition_N GEMM as a torch program: one bf16 x bf16 -> bf16 ``torch.matmul`` per column
block of B (torch accumulates a bf16 GEMM in f32 and rounds the result once to bf16, unless the
device's reduced-precision reduction rounds partial sums: numerics.py), joined into ``forward``.
bf16 torch does not emulate bfp16, so only the configurations without that emulation run.
"""
from __future__ import annotations

from typing import Optional

from accel_regress.core.errors import NotApplicable
from accel_regress.families.gemm_partition_n.golden import config_of


def unsupported(case) -> Optional[str]:
    if case.params.get("emulate_bfp16", True):
        return NotApplicable("torch computes bf16 GEMMs and does not emulate bfp16 (IRON's "
                             "emulate_bf16_mmul_with_bfp16); the configurations without it (ids ending -bf16) run here")
    return None


def run(case, inputs, device):
    import torch
    c = config_of(case)
    n = c.N // c.partition_N
    a = inputs["A"].to(torch.bfloat16)
    b = inputs["B"].to(torch.bfloat16)
    parts = [torch.matmul(a, b[:, i * n:(i + 1) * n]).to(torch.float32) for i in range(c.partition_N)]
    out = {"forward": torch.cat(parts, dim=1).reshape(1, c.M, c.N)}
    out.update({f"C_{i}": p for i, p in enumerate(parts)})
    return out
