#!/usr/bin/env python3
"""The census against a plain numpy tolerance pass, CPU time, best of 3, from one run.

    python benchmarks/bench_census.py [rows cols]      (default 2048 x 32064, float32)

Prints two ratios over the numpy pass ``count_nonzero(abs(got - expected) > tol)``:
- census with a plain float32 allowance (the per-element check only);
- census with the error model a GEMM golden gives (accel_regress.golden.tolerance.gemm_bfp16 without bfp16
  emulation: kind "rounding" to bf16, k = 2K, K = 4096), which adds the statistical check. The
  output is the reference rounded to bf16, as a correct device returns it; the allowance is
  gemm_bfp16's 2 gamma_K sum|a||b| + 2**-8 (|ref| + that), with sum|a||b| ~ K * 2/pi for unit
  normal inputs.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def measure(rows: int = 2048, cols: int = 32064, repeat: int = 3) -> dict:
    """CPU seconds of the numpy pass, the plain census and the census with a GEMM error model."""
    import numpy as np
    from accel_regress.golden import census
    from accel_regress.golden.dtypes import to_bf16
    from accel_regress.golden.tolerance import ErrorModel, gamma

    rng = np.random.default_rng(0)
    K = 4096
    expected = rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(np.sqrt(K))
    got = to_bf16(expected).astype(np.float32)
    absprod = K * (2 / np.pi) * rng.uniform(0.9, 1.1, size=(rows, cols)).astype(np.float32)
    acc = (2 * gamma(K) * absprod).astype(np.float32)
    tol = (acc + np.float32(2.0 ** -8) * (np.abs(expected) + acc)).astype(np.float32)
    model = ErrorModel(tol, "rounding", dtype="bf16", k=2 * K)
    c = census(got, expected, tol=model)
    assert c.ok, c.describe()           # a correct device's output: the benchmark times the clean path

    out = {"numpy": _best(lambda: int(np.count_nonzero(np.abs(got - expected) > tol)), repeat)}
    out["plain"] = _best(lambda: census(got, expected, tol=tol), repeat)
    out["model"] = _best(lambda: census(got, expected, tol=model), repeat)
    return out


def report(t: dict, rows: int = 2048, cols: int = 32064) -> str:
    size = f"{rows} x {cols} float32, CPU time, best of 3"
    return (f"  census / numpy pass:            {t['plain'] / t['numpy']:.2f} "
            f"({t['plain']:.3f} s / {t['numpy']:.3f} s, {size})\n"
            f"  census + GEMM error model / numpy pass: {t['model'] / t['numpy']:.2f} "
            f"({t['model']:.3f} s / {t['numpy']:.3f} s)")


def main(argv: list[str]) -> int:
    rows, cols = (int(argv[0]), int(argv[1])) if len(argv) == 2 else (2048, 32064)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    t = measure(rows, cols)
    print(report(t, rows, cols))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
