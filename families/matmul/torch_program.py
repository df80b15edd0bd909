"""Seed 003's matmul as a torch program: bf16 (or f32) operands, f32 accumulator.

The operands are widened to f32 (exact for bf16) and multiplied with ``torch.matmul`` in f32, as a
torch user gets a bf16 x bf16 -> f32 product; on CUDA that matmul is IEEE f32 unless TF32 is
allowed (backends/torch_device/numerics.py), and TF32 holds a bf16 operand exactly.
"""
from __future__ import annotations


def run(case, inputs, device):
    import torch
    out = torch.matmul(inputs["lhs"].to(torch.float32), inputs["rhs"].to(torch.float32))
    return {"out": out}
