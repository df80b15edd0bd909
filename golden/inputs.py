"""Seeded input generators that give identical bytes on every machine.

Only integer arithmetic and exactly rounded IEEE operations are used: PCG64 integers, scaled by
powers of two, summed (Irwin-Hall, a near-normal shape) and rounded to the target dtype. No libm
call (log, cos) takes part, so no platform's libm can change a bit.
"""
from __future__ import annotations

import hashlib
from typing import Mapping

import numpy as np


def rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def uniform(gen: np.random.Generator, shape, low=-1.0, high=1.0) -> np.ndarray:
    """Uniform in [low, high) on a 2**-24 grid, as float64."""
    ints = gen.integers(0, 1 << 24, size=shape, dtype=np.int64)
    return low + (high - low) * (ints.astype(np.float64) * 2.0 ** -24)


def near_normal(gen: np.random.Generator, shape, scale=1.0) -> np.ndarray:
    """Sum of four uniforms scaled to unit variance (Irwin-Hall n=4), times ``scale``, as float64."""
    total = sum(uniform(gen, shape, -1.0, 1.0) for _ in range(4))
    return total * (np.sqrt(3.0) / 2.0) * scale   # var(U(-1,1)) = 1/3; 4 of them: 4/3


def small_integers(gen: np.random.Generator, shape, low=-4, high=4) -> np.ndarray:
    """Integers in [low, high] as float64: products and sums stay exact in f32 for modest K."""
    return gen.integers(low, high + 1, size=shape, dtype=np.int64).astype(np.float64)


def sha256_of(inputs: Mapping[str, np.ndarray]) -> str:
    """Digest of named arrays: name, dtype, shape and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.name}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
