"""emu model of GELU: the f32 evaluation of the erf form, in the device's order, and the bug the
team documented as a fault.

Fault ``gelu-tanh-approx``: the kernel computes the tanh approximation
x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3))) where the contract is the erf form (the
difference torch documents between approximate='tanh' and 'none'); it is up to ~5e-4 off near
|x| = 2, far outside the tolerance, so every test must catch it.
"""
from __future__ import annotations

import math

import numpy as np

from gelu_ops import golden

F32 = np.float32


def run(case, inputs):
    x = inputs["x"].astype(F32)
    t = x * F32(1.0 / math.sqrt(2.0))
    erf = np.array([math.erf(float(v)) for v in t.ravel()], np.float64).astype(F32).reshape(x.shape)
    return {"y": (F32(0.5) * x) * (F32(1.0) + erf)}


def tanh_approx(case, outputs):
    x = golden.make_inputs(case)["x"].astype(np.float64)   # inputs are a function of the case
    y = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    return {**outputs, "y": y.astype(F32)}


FAULTS = {"gelu-tanh-approx": tanh_approx}
