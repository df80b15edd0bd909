"""Seed 003's program: linalg.fill of a zero accumulator, then linalg.matmul, on tensors.

Generated from M, K, N and the operand/accumulator dtypes of the case, exactly in the seed's form
(the same ops iree-amd-aie's own matmul tests lower), so every IREE backend compiles the program
the bug was reported against.
"""
from __future__ import annotations

from accel_regress.golden.case import Case
from accel_regress.families.matmul.golden import config_of
from accel_regress.toolchains.iree.program import Program

ENTRY = "matmul"
MLIR_TYPES = {"bf16": "bf16", "f32": "f32"}


def mlir(M: int, K: int, N: int, lhs: str = "bf16", rhs: str = "bf16", acc: str = "f32") -> str:
    lt, rt, at = MLIR_TYPES[lhs], MLIR_TYPES[rhs], MLIR_TYPES[acc]
    return (
        f"!lhs = tensor<{M}x{K}x{lt}>\n"
        f"!rhs = tensor<{K}x{N}x{rt}>\n"
        f"!out = tensor<{M}x{N}x{at}>\n"
        f"func.func @{ENTRY}(%lhs : !lhs, %rhs : !rhs) -> !out {{\n"
        f"  %init_acc = tensor.empty() : !out\n"
        f"  %c0_acc_type = arith.constant 0.0 : {at}\n"
        f"  %acc = linalg.fill ins(%c0_acc_type : {at}) outs(%init_acc : !out) -> !out\n"
        f"  %result = linalg.matmul ins(%lhs, %rhs: !lhs, !rhs) outs(%acc: !out) -> !out\n"
        f"  return %result: !out\n"
        f"}}\n")


def program(case: Case) -> Program:
    cfg = config_of(case)
    return Program(mlir=mlir(cfg.M, cfg.K, cfg.N, cfg.lhs, cfg.rhs, cfg.acc), entry=ENTRY,
                   inputs=("lhs", "rhs"), outputs=("out",))
