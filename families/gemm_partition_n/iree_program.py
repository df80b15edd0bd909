"""IRON's partition_N GEMM (families/gemm_partition_n/golden.py) as a linalg program: one matmul per column block of B.

Like IRON's runlist, partition i is its own ``linalg.matmul`` (its own dispatch) of A with columns
[i*N/P, (i+1)*N/P) of B, accumulated in f32 and rounded once to bf16 (``C_i``); ``forward`` joins
the parts. bf16 x bf16 products are exact in f32, so only the accumulation and the bf16 output
rounding remain: IREE does not emulate bfp16 (IRON's emulate_bf16_mmul_with_bfp16), so only the
configurations without that emulation run here, and their tolerance has no bfp16 term.
"""
from __future__ import annotations

from typing import Optional

from accel_regress.core.errors import NotApplicable
from accel_regress.golden.case import Case
from accel_regress.families.gemm_partition_n.golden import config_of
from accel_regress.toolchains.iree.program import Program

ENTRY = "gemm_partition_n"


def unsupported(case: Case) -> Optional[str]:
    if case.params.get("emulate_bfp16", True):
        return NotApplicable("IREE computes bf16 x bf16 exactly in f32 and does not emulate bfp16 (IRON's "
                             "emulate_bf16_mmul_with_bfp16); the configurations without it (ids ending -bf16) run here")
    return None


def _t(*dims) -> str:
    return "tensor<" + "x".join(map(str, dims)) + "xf32>"


def program(case: Case) -> Program:
    c = config_of(case)
    M, K, N, P = c.M, c.K, c.N, c.partition_N
    n = N // P
    rets = [_t(1, M, N)] + [_t(M, n)] * P
    lines = [f"func.func @{ENTRY}(%A: {_t(M, K)}, %B: {_t(K, N)}) -> ({', '.join(rets)}) {{",
             "  %zero = arith.constant 0.0 : f32",
             f"  %joined0 = tensor.empty() : {_t(M, N)}"]
    parts = []
    for i in range(P):
        lines += [
            f"  %B{i} = tensor.extract_slice %B[0, {i * n}] [{K}, {n}] [1, 1] : {_t(K, N)} to {_t(K, n)}",
            f"  %e{i} = tensor.empty() : {_t(M, n)}",
            f"  %acc{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {_t(M, n)}) -> {_t(M, n)}",
            f"  %mm{i} = linalg.matmul ins(%A, %B{i} : {_t(M, K)}, {_t(K, n)}) outs(%acc{i} : {_t(M, n)}) -> {_t(M, n)}",
            f"  %C{i} = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], "
            f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%mm{i} : {_t(M, n)}) outs(%e{i} : {_t(M, n)}) {{",
            "  ^bb0(%a: f32, %o: f32):",
            "    %b = arith.truncf %a : f32 to bf16",
            "    %r = arith.extf %b : bf16 to f32",
            "    linalg.yield %r : f32",
            f"  }} -> {_t(M, n)}",
            f"  %joined{i + 1} = tensor.insert_slice %C{i} into %joined{i}[0, {i * n}] [{M}, {n}] [1, 1] : "
            f"{_t(M, n)} into {_t(M, N)}"]
        parts.append(f"%C{i}")
    lines += [f"  %forward = tensor.expand_shape %joined{P} [[0, 1], [2]] output_shape [1, {M}, {N}] : "
              f"{_t(M, N)} into {_t(1, M, N)}",
              f"  return %forward, {', '.join(parts)} : {', '.join(rets)}", "}", ""]
    return Program("\n".join(lines), ENTRY, ("A", "B"), ("forward",) + tuple(f"C_{i}" for i in range(P)))
