"""A model of the AIE matmul of seed 003 (iree-amd-aie): bf16/f32 operands, f32 accumulator.

Numbers: the operands are used as given (bf16 values are exact in f32); the accumulator starts
at zero (the linalg.fill) and K is consumed in tiles of ``K_TILE``, each tile's partial product
added to the f32 accumulator in turn, as the cores do with their L1 tiles.

Faults (seed 003), acting on the outcome only, so they apply to any backend:

``aie-matmul-remainder-compile``: the two compile errors of the 2024 pad-pack/AIR pipeline.
    A dimension d leaves remainder tiles when it is larger than a tile and not a multiple of it.
    * d > L2_TILE and d % L2_TILE != 0 (2432 = 9*256 + 128): AMDAIEPackToDma leaves the padded
      packs unconverted and air-label-scf-for-to-ping-pong fails with "block with no terminator"
      (seed error 2). This pass runs first, so this diagnostic wins when both apply.
    * d % L2_TILE == 0 but d is wider than one DMA wrap (AIE2_WRAP_UPPER_BOUND = 1024) and not a
      multiple of half of it (2304 = 4*512 + 256): airrt-to-ipu's tileIllegalWrapDim asserts
      "Currently do not support remainder tiles" (seed error 1).
``aie-matmul-4x2-herd-hang``: the run-time hang of air-split-l2-memref with 4x2 herds. The seed's
    two sweeps (bf16: hang iff N is 2432/640 and M is not) and its f32 notes (the same cubes pass;
    M=K=256, N=320 hangs) all fit one condition stated in bytes: with b the operand element size,
    the run hangs iff N*b is an odd multiple of 256 B and M*b is not. That is the condition the
    seed's data pins down, not the compiler's own herd choice, which the seed does not give.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.families.matmul.golden import ELEMENT_BYTES
from accel_regress.core.errors import CompileError, Hang

K_TILE = 64                       # the L1 K tile of the pad-pack pipeline's bf16 matmul
L2_TILE = 256                     # per-dimension L2 tile of the same pipeline
AIE2_WRAP_UPPER_BOUND = 1024      # a DMA wrap dimension holds at most 10 bits
HERD_BYTES = 256                  # the N extent unit (bytes) of the hang condition


def run(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    import torch    # here, not at the top: the pytest process loads this module but never runs it
    a = torch.from_numpy(np.ascontiguousarray(inputs["lhs"], dtype=np.float32))
    b = torch.from_numpy(np.ascontiguousarray(inputs["rhs"], dtype=np.float32))
    K = a.shape[1]
    acc = torch.zeros((a.shape[0], b.shape[1]), dtype=torch.float32)
    for k0 in range(0, K, K_TILE):
        acc += a[:, k0:k0 + K_TILE] @ b[k0:k0 + K_TILE, :]
    return {"out": acc.numpy()}


def timeout(case: Case) -> float:
    p = case.params
    return 60.0 + p["M"] * p["K"] * p["N"] / 1e9     # ~1 GMAC/s in tiles on two slow cores, headroom


# --- seed 003's compile errors ---------------------------------------------------------------------

DIAG_REMAINDER_WRAP = (
    "iree-compile: iree-amd-aie/third_party/mlir-air/mlir/lib/Conversion/AIRRtToIpuPass.cpp:551: void "
    "(anonymous namespace)::tileIllegalWrapDim(airrt::DmaMemcpyNdOp): Assertion "
    "`!(const_wrap % (AIE2_WRAP_UPPER_BOUND / 2)) && \"Currently do not support remainder tiles\"' failed.")
DIAG_PING_PONG = (
    'error: block with no terminator, has %40 = "air.wait_all"(%arg8) : (!air.async.token) -> !air.async.token\n'
    'note: see current operation: %40 = "air.wait_all"(%arg8) : (!air.async.token) -> !air.async.token')


def remainder_compile_error(M: int, K: int, N: int) -> Optional[CompileError]:
    """The compile error of the pipeline for these sizes (see module docstring), or None."""
    dims = {"M": M, "K": K, "N": N}
    padded = [d for d, v in dims.items() if v > L2_TILE and v % L2_TILE]
    if padded:
        return CompileError(
            "air-label-scf-for-to-ping-pong failed: block with no terminator "
            f"({', '.join(f'{d}={dims[d]}' for d in padded)} not a multiple of the L2 tile {L2_TILE}: "
            "AMDAIEPackToDma left the padded packs unconverted)",
            stage="compile", detail={"pass": "air-label-scf-for-to-ping-pong", "diagnostic": DIAG_PING_PONG,
                                     "dims": padded})
    half = AIE2_WRAP_UPPER_BOUND // 2
    wide = [d for d, v in dims.items() if v >= AIE2_WRAP_UPPER_BOUND and v % half]
    if wide:
        return CompileError(
            "airrt-to-ipu failed: Currently do not support remainder tiles "
            f"({', '.join(f'{d}={dims[d]}' for d in wide)} exceed the DMA wrap bound {AIE2_WRAP_UPPER_BOUND} "
            f"and are not multiples of {half})",
            stage="compile", detail={"pass": "airrt-to-ipu", "diagnostic": DIAG_REMAINDER_WRAP, "dims": wide})
    return None


def remainder_compile(case: Case, outputs: dict) -> dict:
    if case.op != "matmul":
        return outputs
    p = case.params
    err = remainder_compile_error(p["M"], p["K"], p["N"])
    if err is not None:
        raise err
    return outputs


# --- seed 003's hang ---------------------------------------------------------------------------

def _odd_herd_extent(extent: int, element_bytes: int) -> bool:
    nbytes = extent * element_bytes
    return nbytes % HERD_BYTES == 0 and (nbytes // HERD_BYTES) % 2 == 1


def herd_hangs(M: int, N: int, lhs: str = "bf16") -> bool:
    b = ELEMENT_BYTES[lhs]
    return _odd_herd_extent(N, b) and not _odd_herd_extent(M, b)


def herd_hang(case: Case, outputs: dict) -> dict:
    if case.op != "matmul":
        return outputs
    p = case.params
    if herd_hangs(p["M"], p["N"], p["lhs"]):
        raise Hang(f"matmul {p['M']}x{p['K']}x{p['N']} {p['lhs']} did not complete: a 4x2 herd whose L2 "
                   "memref air-split-l2-memref split wrongly (seed 003)", stage="run",
                   detail={"herd": "4x2", "pass": "air-split-l2-memref"})
    return outputs


FAULTS = {"aie-matmul-remainder-compile": remainder_compile, "aie-matmul-4x2-herd-hang": herd_hang}
