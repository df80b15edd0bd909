#!/usr/bin/env python3
"""The Llama vocab projection's golden (2048 x 2048 @ 2048 x 128256, bfp16, normal inputs) against
one float32 GEMM of the same size on this machine, from one run: each stage's wall and CPU time and
its ratio to the GEMM's. Target (issue 17): golden total <= 1.5x one f32 GEMM.

    python benchmarks/bench_vocab_golden.py            # the real size (peak about 5 GiB)
    python benchmarks/bench_vocab_golden.py --n 32064  # a quarter of N, for quick iteration

The GEMM is timed before and after the golden (random float32 operands, default threads), with
numpy's BLAS (what the golden's reference uses) and with torch's; the ratios use the faster
library's mean, the machine's GEMM rate. CPU time is the process's, all threads together.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


# The stages are gemm.expected's own calls for a bfp16 configuration, one at a time.
def _timed(fn):
    """fn's result, wall seconds, CPU seconds (user + system, all threads), system seconds."""
    wall, use = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    out = fn()
    end = resource.getrusage(resource.RUSAGE_SELF)
    system = end.ru_stime - use.ru_stime
    return out, time.perf_counter() - wall, end.ru_utime - use.ru_utime + system, system


def _f32_gemm(M: int, K: int, N: int) -> dict[str, tuple[float, float, float]]:
    import numpy as np
    import torch
    g = np.random.default_rng(0)
    a = g.standard_normal((M, K), dtype=np.float32)
    b = g.standard_normal((K, N), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    _ = a[:64] @ b[:, :64], ta[:64] @ tb[:, :64]               # load the BLAS libraries before timing
    return {"numpy": _timed(lambda: a @ b)[1:], "torch": _timed(lambda: ta @ tb)[1:]}


def main(argv=None) -> int:
    from accel_regress.families.gemm_partition_n import golden as gemm
    from accel_regress.golden.bulk import count
    import torch

    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--n", type=int, default=gemm.LLAMA_VOCAB.N,
                   help=f"N (default {gemm.LLAMA_VOCAB.N}); a multiple of partition_N={gemm.LLAMA_VOCAB.partition_N}")
    args = p.parse_args(argv)
    cfg = replace(gemm.LLAMA_VOCAB, N=args.n)
    case = gemm.make_case(cfg)
    print(f"vocab golden {cfg.id}, torch threads {torch.get_num_threads()}, golden threads {count()}, "
          f"load average at start {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores", flush=True)

    before = _f32_gemm(cfg.M, cfg.K, cfg.N)
    stages = {}
    inputs, *stages["inputs"] = _timed(lambda: gemm.make_inputs(case))
    (qa, qb), *stages["quantization"] = _timed(lambda: gemm.quantized_operands(inputs, gemm.BLOCK_ROUNDING))
    ref, *stages["reference"] = _timed(lambda: gemm.matmul(qa.values, qb.values))
    _, *stages["error model"] = _timed(lambda: gemm.quantized_tolerance(qa, qb, ref))
    del inputs, qa, qb, ref
    after = _f32_gemm(cfg.M, cfg.K, cfg.N)

    mean = {lib: [(before[lib][i] + after[lib][i]) / 2 for i in range(2)] for lib in before}
    fastest = min(mean, key=lambda lib: mean[lib][0])
    gemm_wall, gemm_cpu = mean[fastest]
    stages["golden total"] = [sum(s[i] for s in stages.values()) for i in range(3)]
    print(f"{'':18s}{'wall s':>9s}{'cpu s':>9s}{'(sys s)':>9s}{'wall/GEMM':>11s}{'cpu/GEMM':>10s}")
    for when, times in (("before", before), ("after", after)):
        for lib, (wall, cpu, system) in times.items():
            print(f"{f'GEMM {lib} {when}':18s}{wall:9.2f}{cpu:9.2f}{system:9.2f}")
    print(f"(one f32 GEMM = {fastest}'s mean, the faster library)")
    for name, (wall, cpu, system) in stages.items():
        print(f"{name:18s}{wall:9.2f}{cpu:9.2f}{system:9.2f}{wall / gemm_wall:10.2f}x{cpu / gemm_cpu:9.2f}x")
    ratio = stages["golden total"][0] / gemm_wall
    print(f"golden total / f32 GEMM: {ratio:.2f}x wall, {stages['golden total'][1] / gemm_cpu:.2f}x cpu "
          f"(target <= 1.5x); peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20:.2f} GiB; "
          f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
