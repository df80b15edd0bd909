"""A numerical model of the f32 reduction family as IREE's RISC-V builds compute it.

Every step is an f32 operation in the program's order (families/f32_reduction/
iree_program.py). Reduction order follows the variant's codegen (hardware/backends/qemu_rvv/scan.py
shows it per dispatch): ``vfredosum`` (ordered) and scalar loops sum sequentially; with
reassociated FP reductions (``v-reassoc``, ``vfredusum``) each row is summed as VLEN/32 strided
lane partial sums joined by a pairwise tree. Library functions: exp and erf rounded once from
float64 (numpy's f32 exp and log are used where cheaper), rsqrt as 1/sqrt (two roundings).

Fault (seed 004): ``saturn-f32-reduction-hang``: every case with an f32 reduction hangs at its
first dispatch (``[dn]`` with no ``[dc]``, as Saturn did); controls are unaffected.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core.errors import Hang

F32 = np.float32


def _sum_rows(x: np.ndarray, variant: str, vlen: int) -> np.ndarray:
    """Row sums of a 2-D f32 array in the order the variant's code adds."""
    x = np.asarray(x, F32)
    rows, n = x.shape
    if variant != "v-reassoc":
        acc = np.zeros(rows, F32)
        for j in range(n):
            acc = acc + x[:, j]
        return acc
    lanes = max(1, vlen // 32)
    padded = np.zeros((rows, -(-n // lanes) * lanes), F32)   # adding 0 is exact
    padded[:, :n] = x
    part = np.zeros((rows, lanes), F32)
    for chunk in padded.reshape(rows, -1, lanes).transpose(1, 0, 2):
        part = part + chunk
    while part.shape[1] > 1:
        h = part.shape[1] // 2
        part = part[:, :h] + part[:, h:]
    return part[:, 0]


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sequential f32 multiply-add over K (matmuls lower to vfmacc / fmadd chains)."""
    out = np.zeros(a.shape[:-1] + b.shape[-1:], F32)
    for k in range(a.shape[-1]):
        out = out + (a[..., :, k:k + 1] * b[..., k:k + 1, :]).astype(F32)
    return out


def _rsqrt(x: np.ndarray) -> np.ndarray:
    return (F32(1) / np.sqrt(x.astype(F32))).astype(F32)


def _mean_var(x, variant, vlen):
    n = F32(x.shape[1])
    mean = (_sum_rows(x, variant, vlen) / n).astype(F32)
    d = (x - mean[:, None]).astype(F32)
    var = (_sum_rows((d * d).astype(F32), variant, vlen) / n).astype(F32)
    return mean, var


def run(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    from accel_regress.families.f32_reduction.golden import EPS
    p = case.params
    kind, variant, vlen = p["kind"], p.get("variant", "v"), int(p.get("vlen", 256))
    eps = F32(EPS)
    if kind == "row_sum":
        return {"sum": _sum_rows(inputs["x"], variant, vlen)}
    if kind == "mean_var":
        mean, var = _mean_var(inputs["x"], variant, vlen)
        return {"mean": mean, "var": var}
    if kind == "layernorm":
        x = inputs["x"]
        mean, var = _mean_var(x, variant, vlen)
        r = _rsqrt((var + eps).astype(F32))
        t = ((x - mean[:, None]).astype(F32) * r[:, None]).astype(F32)
        return {"y": ((t * inputs["gamma"]).astype(F32) + inputs["beta"]).astype(F32)}
    if kind == "rmsnorm":
        x = inputs["x"]
        ss = _sum_rows((x * x).astype(F32), variant, vlen)
        r = _rsqrt(((ss / F32(x.shape[1])).astype(F32) + eps).astype(F32))
        return {"y": ((x * r[:, None]).astype(F32) * inputs["gamma"]).astype(F32)}
    if kind == "softmax":
        x = inputs["x"]
        e = np.exp((x - x.max(axis=1, keepdims=True)).astype(F32)).astype(F32)
        s = _sum_rows(e, variant, vlen)
        return {"y": (e / s[:, None]).astype(F32)}
    if kind == "log_softmax":
        x = inputs["x"]
        a = (x - x.max(axis=1, keepdims=True)).astype(F32)
        s = _sum_rows(np.exp(a).astype(F32), variant, vlen)
        return {"y": (a - np.log(s).astype(F32)[:, None]).astype(F32)}
    if kind in ("matmul", "bmm"):
        return {"c": _matmul(inputs["a"], inputs["b"])}
    if kind == "i8_matmul":
        return {"c": (inputs["a"].astype(np.int32) @ inputs["b"].astype(np.int32)).astype(np.int32)}
    if kind == "rsqrt":
        return {"y": _rsqrt(inputs["x"])}
    if kind == "sqrt":
        return {"y": np.sqrt(inputs["x"]).astype(F32)}
    if kind == "erf":
        import math
        return {"y": np.array([math.erf(float(v)) for v in inputs["x"]], np.float64).astype(F32)}
    if kind == "cvt":
        return {"to_int": np.trunc(inputs["x"]).astype(np.int32), "to_float": inputs["k"].astype(F32)}
    if kind == "divide":
        return {"y": (inputs["a"] / inputs["b"]).astype(F32)}
    raise ValueError(f"emu has no model of kind {kind!r}")


def timeout(case: Case) -> float:
    return 60.0


def saturn_f32_reduction_hang(case: Case, outputs: dict) -> dict:
    """Seed 004: on Saturn (FireSim) every dispatch whose body is an f32 reduction never
    completes: the harness prints ``[dn]`` for workgroup 0 and no ``[dc]`` follows. The
    controls (f32 elementwise, conversions, divide, i8 matmul) run normally, and so does code
    built without the vector extension (variant novec, the seed's -v fix)."""
    if case.op != "f32_reduction" or not case.params.get("has_f32_reduction"):
        return outputs
    if case.params.get("variant") == "novec":
        return outputs
    raise Hang(f"{case.params['kind']} {case.params.get('variant', 'v')}: dispatch d=0 printed [dn] for wg=0 "
               "and never [dc] (Saturn f32-reduction hang, seed 004)", stage="run",
               detail={"fault": "saturn-f32-reduction-hang"})


FAULTS = {"saturn-f32-reduction-hang": saturn_f32_reduction_hang}
