"""The f32 reductions as a torch user writes them, in f32 on the device: ``sum``, ``var_mean``,
``layer_norm``, ``rms_norm``, ``softmax``, ``log_softmax``, ``matmul`` / ``bmm``; the controls elementwise
(``rsqrt``, ``sqrt``, ``erf``, division, the f32 <-> i32 conversions) and an i8 x i8 -> i32 product
summed in i32 (torch has no integer matmul on most devices). Torch's own reduction orders and
kernels are what is tested; the error model of golden.py bounds any order.
"""
from __future__ import annotations

from typing import Optional

from accel_regress.core.errors import NotApplicable
from accel_regress.families.f32_reduction.golden import EPS, make_case

# The RISC-V build and the simulated VLEN change nothing on a torch device: one case of each kind
# and shape runs, the baseline's (make_case's defaults).
_BASELINE = make_case("row_sum", (1, 1))


def unsupported(case) -> Optional[str]:
    p = case.params
    for key in ("variant", "vlen"):
        if p.get(key) not in (None, _BASELINE.params[key]):
            return NotApplicable(f"{key} {p.get(key)!r} is a RISC-V build setting; torch runs the "
                                 f"{_BASELINE.params[key]!r} case of the same kind and shape")
    return None


def run(case, inputs, device):
    import torch
    import torch.nn.functional as F
    kind = case.params["kind"]
    if kind == "row_sum":
        return {"sum": inputs["x"].sum(dim=1)}
    if kind == "mean_var":
        var, mean = torch.var_mean(inputs["x"], dim=1, correction=0)
        return {"mean": mean, "var": var}
    if kind == "layernorm":
        x = inputs["x"]
        return {"y": F.layer_norm(x, (x.shape[1],), inputs["gamma"], inputs["beta"], eps=EPS)}
    if kind == "rmsnorm":
        x = inputs["x"]
        return {"y": F.rms_norm(x, (x.shape[1],), inputs["gamma"], eps=EPS)}
    if kind == "softmax":
        return {"y": torch.softmax(inputs["x"], dim=1)}
    if kind == "log_softmax":
        return {"y": torch.log_softmax(inputs["x"], dim=1)}
    if kind in ("matmul", "bmm"):
        return {"c": torch.matmul(inputs["a"], inputs["b"])}
    if kind == "i8_matmul":
        a, b = inputs["a"].to(torch.int32), inputs["b"].to(torch.int32)
        return {"c": (a.unsqueeze(2) * b.unsqueeze(0)).sum(dim=1, dtype=torch.int32)}
    if kind in ("rsqrt", "sqrt", "erf"):
        return {"y": getattr(torch, kind)(inputs["x"])}
    if kind == "divide":
        return {"y": inputs["a"] / inputs["b"]}
    if kind == "cvt":
        return {"to_int": inputs["x"].to(torch.int32), "to_float": inputs["k"].to(torch.float32)}
    raise ValueError(f"no torch program for kind {kind!r}")
