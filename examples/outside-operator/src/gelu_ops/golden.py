"""What is right for GELU: inputs, the float64 reference and the tolerance. Knows no device.

gelu(x) = x/2 * (1 + erf(x / sqrt(2))), the exact (erf) form, as torch.nn.functional.gelu with
approximate='none'.

Error model (an f32 device evaluating the formula in that order): erf is held to 16 ulp (OpenCL C
single-precision table), at most 32u since |erf| <= 1; the two roundings of its argument move it by
at most 2u * max|t erf'(t)| < u; 1 + erf and the final product round twice more (2u relative,
x/2 is exact). Hence |y' - y| <= |x|/2 * (32u + u + u) + 2u|y|, u = 2**-24.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case

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


def reference(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = inputs["x"].astype(np.float64)
    erf = np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0))
    return {"y": 0.5 * x * (1.0 + erf)}


def tolerance(inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    x = np.abs(inputs["x"].astype(np.float64))
    return {"y": 0.5 * x * 34.0 * U + 2.0 * U * np.abs(ref["y"])}
