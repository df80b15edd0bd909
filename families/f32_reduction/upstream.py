"""The f32 reductions in an upstream bundle (accel-regress upstream, hardware/results/upstream):
the test's expected values and per-element rule, one element of an elementwise control alone, and
the smaller shapes a codegen finding is tried on."""
from __future__ import annotations

from typing import Optional

import numpy as np

from accel_regress.families.f32_reduction import golden as R
from accel_regress.golden.case import Case
from accel_regress.golden.tolerance import ErrorModel
from accel_regress.results.upstream.bundle import Expected


def expected(case: Case, inputs) -> dict[str, Expected]:
    ref = R.reference(case, inputs)
    tol = R.tolerances(case, inputs, ref)
    kind = case.params["kind"]
    how = (f"float64 {kind} of the f32 inputs (accel-regress, families/f32_reduction/golden.py), rounded once "
           f"to f32; allowance: the OpenCL C ulp bound of {kind} where one applies"
           + ("; this input class is compared bit for bit, the sign of zero included" if R.zero_sign(case) else ""))
    out = {}
    for name in R.output_names(kind):
        t = tol[name].tol if isinstance(tol[name], ErrorModel) else tol[name]
        r = np.asarray(ref[name], np.float64)
        out[name] = Expected(r, np.broadcast_to(np.asarray(t, np.float64), r.shape).copy(), bool(R.zero_sign(case)), how)
    return out


def shrink(case: Case, inputs, output: str, index: tuple) -> Optional[tuple[Case, dict]]:
    """An elementwise control on the one input element behind output element ``index``."""
    p = case.params
    if p["kind"] not in R.ELEMENTWISE:
        return None
    shape = np.shape(next(iter(inputs.values())))
    flat = int(np.ravel_multi_index(index, shape))
    small = R.make_case(p["kind"], (1,), p["variant"], p["vlen"], inputs=p.get("inputs", "normal"))
    return small, {n: np.ascontiguousarray(np.asarray(v).reshape(-1)[[flat]]) for n, v in inputs.items()}


def smaller_cases(case: Case) -> list[Case]:
    """The same kind, variant and class at every smaller power-of-two shape, fewest elements first."""
    p = case.params
    shape = tuple(p["shape"])
    halvings = [sorted({n >> k for k in range(n.bit_length()) if n >> k}) for n in shape]
    shapes = {(a, b) for a in halvings[0] for b in halvings[-1]} if len(shape) == 2 else {(a,) for a in halvings[0]}
    shapes.discard(shape)
    return [R.make_case(p["kind"], s, p["variant"], p["vlen"], inputs=p.get("inputs", "normal"))
            for s in sorted(shapes, key=lambda s: (int(np.prod(s)), s))]
