"""What is right for GELU: inputs, the float64 reference and the tolerance. Knows no device.

gelu(x) = x/2 * (1 + erf(x / sqrt(2))), the exact (erf) form, as torch.nn.functional.gelu with
approximate='none'.

Error model (an f32 device evaluating the formula in that order): erf is held to 16 ulp (OpenCL C
single-precision table), at most 32u since |erf| <= 1; the two roundings of its argument move it by
at most 2u * max|t erf'(t)| < u; 1 + erf and the final product round twice more (2u relative,
x/2 is exact). Hence |y' - y| <= |x|/2 * (32u + u + u) + 2u|y|, u = 2**-24.

Statistics (``ErrorModel``, kind ``accumulation``): erf's 32u share is ``lib``, a library bound
with no promised mean; the rest is k = 4 independent roundings to nearest. Since erf is promised
only to 16 ulp, the bias and spread checks add little here (a one-ulp bias toward zero passes, as
it should under that contract); a family whose every operation is a rounding to nearest gets a
sharp bias check from the same object.

This module is the family's contract with accel-regress (accel_regress.core.contracts.GoldenModule):
``OP``, ``make_inputs(case)``, ``output_contract(case)`` and ``tolerances(case, inputs, ref)``.
It imports numpy and accel_regress.golden only: the pytest process computes goldens, and torch
belongs to the isolated worker that runs backends.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case
from accel_regress.golden.tolerance import ErrorModel

OP = "gelu"
U = 2.0 ** -24
SHAPES = [(64,), (1000,), (4099,)]    # 4099: a length no vector width divides


def shape_id(shape) -> str:
    return "N" + "x".join(str(d) for d in shape)


def make_case(shape, golden_seed: int = 0) -> Case:
    return Case.make(OP, shape_id(shape), {"shape": list(shape)}, golden_seed)


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    x = gen.uniform(gen.rng(case.seed), tuple(case.params["shape"]), -4.0, 4.0)
    return {"x": x.astype(np.float32)}


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))
    return {"y": 0.5 * x * (1.0 + erf)}


def output_contract(case: Case) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every backend returns y in float32, in the case's shape: a float64 or reshaped y is a FAIL
    before any comparison."""
    return {"y": ("float32", tuple(case.params["shape"]))}


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """The error model of the module docstring, per output."""
    half_x = 0.5 * np.abs(inputs["x"].astype(np.float64))
    lib = half_x * 32.0 * U
    tol = lib + half_x * 2.0 * U + 2.0 * U * np.abs(ref["y"])
    return {"y": ErrorModel(tol, "accumulation", dtype="f32", k=4.0, lib=lib)}
