#!/usr/bin/env python3
"""Compile and run times of the IREE backends (iree-cpu, qemu-rvv) on the f32 reduction family.

    python benchmarks/bench_iree.py [--kinds layernorm,softmax,matmul] [--repeat 5]

For each kind at the seed's shape: cold compile (an empty cache; for qemu-rvv the riscv64 static
library plus the clang-16 harness build), cached compile (the same call again: a cache lookup),
and the run time (median of --repeat runs: iree.runtime call on the host; qemu-riscv64 process
for qemu-rvv). Prints the times and the ratios cold/cached and qemu/host. Uses a private cache
folder, so the suite's own cache is neither used nor touched.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _median(f, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="row_sum,layernorm,softmax,matmul,i8_matmul")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-iree-"))
    os.environ["ACCEL_IREE_CACHE"] = str(tmp / "iree")

    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.backends.iree_cpu import IreeCpuBackend
    from accel_regress.backends.qemu_rvv import QemuRvvBackend, build, qemu_cpu

    cpu, qemu = IreeCpuBackend(), QemuRvvBackend()
    have_cpu, have_qemu = cpu.availability() is None, qemu.availability() is None
    if not have_cpu:
        print(f"iree-cpu unavailable: {cpu.availability()}")
        return 2
    print(f"cache: {tmp}   iree-compile {cpu.versions()['iree-compiler']}   repeat {args.repeat}")
    head = (f"{'kind':10s} {'backend':8s} {'cold s':>8s} {'cached s':>9s} {'cold/cached':>12s} "
            f"{'run s':>8s} {'run vs host':>12s}")
    print(head)
    print("-" * len(head))
    for kind in args.kinds.split(","):
        case = R.make_case(kind, R.SEED_SHAPES[kind])
        inputs = R.make_inputs(case)
        t = time.perf_counter()
        cpu.compile(case)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        hit = cpu.compile(case)
        cached = time.perf_counter() - t
        assert hit.cached
        cpu.run(case, inputs)   # load the module once
        host_run = _median(lambda: cpu.run(case, inputs), args.repeat)
        print(f"{kind:10s} {'iree-cpu':8s} {cold:8.3f} {cached:9.4f} {cold / cached:12.0f} {host_run:8.4f} {1.0:12.1f}")
        if not have_qemu:
            continue
        t = time.perf_counter()
        exe, _ = build.cached_harness(case, "v", inputs)
        qcold = time.perf_counter() - t
        t = time.perf_counter()
        build.cached_harness(case, "v", inputs)
        qcached = time.perf_counter() - t
        argv = ["qemu-riscv64-static", "-cpu", qemu_cpu("v", 256), str(exe)]
        qrun = _median(lambda: subprocess.run(argv, capture_output=True, check=True, timeout=300), args.repeat)
        print(f"{kind:10s} {'qemu-rvv':8s} {qcold:8.3f} {qcached:9.4f} {qcold / qcached:12.0f} {qrun:8.4f} "
              f"{qrun / host_run:12.1f}")
    if not have_qemu:
        print(f"qemu-rvv unavailable: {qemu.availability()}")
    print(f"\n(cold: empty cache; cached: the same compile again; run: median of {args.repeat}; "
          "qemu-rvv 'cold' includes the clang-16 harness build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
