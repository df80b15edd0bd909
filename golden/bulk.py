"""Large golden arrays: computed in pieces on every core (numpy releases the GIL), and allocated
the way torch allocates a GEMM's output."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

TORCH_MIN_BYTES = 64 << 20     # above every default-run golden (2048 x 2048 float32 is 16 MiB)


def count() -> int:
    """Cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run(fn, n: int, grain: int) -> None:
    """fn(lo, hi) over [0, n) in pieces of ``grain`` (the last may be shorter), on every core."""
    pieces = [(lo, min(lo + grain, n)) for lo in range(0, n, grain)]
    if len(pieces) <= 1 or count() == 1:
        for lo, hi in pieces:
            fn(lo, hi)
        return
    with ThreadPoolExecutor(count()) as pool:
        for _ in pool.map(lambda p: fn(*p), pieces):
            pass


def empty(shape, dtype=np.float32) -> np.ndarray:
    """An uninitialised array; a big one (vocab-sized) in torch's memory, as the reference GEMM's output is:
    for such sizes numpy asks for transparent huge pages, whose first touch costs several times more
    system time where memory is fragmented (measured here: 0.2-0.3 s per 256 MiB against
    0.13-0.17 s; benchmarks/bench_vocab_golden.py). Smaller ones (every default-run golden) stay
    numpy's, so that the pytest process does not import torch for them."""
    shape = tuple(np.atleast_1d(shape))
    if int(np.prod(shape)) * np.dtype(dtype).itemsize < TORCH_MIN_BYTES:
        return np.empty(shape, dtype)
    import torch
    return torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name)).numpy()
