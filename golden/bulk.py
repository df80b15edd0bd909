"""Large golden arrays: computed in pieces on every core (numpy releases the GIL), and allocated
the way torch allocates a GEMM's output."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np


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
    """An uninitialised array in torch's memory, as the reference GEMM's output is: numpy asks for
    transparent huge pages, whose first touch costs several times more system time where memory
    is fragmented (measured here: 0.2-0.3 s per 256 MiB against 0.13-0.17 s), and the GEMM writes
    into them more slowly (benchmarks/bench_vocab_golden.py)."""
    import torch                    # not at import: golden.dtypes is imported where torch is not needed
    return torch.empty(tuple(np.atleast_1d(shape)), dtype=getattr(torch, np.dtype(dtype).name)).numpy()
