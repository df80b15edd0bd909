#!/usr/bin/env python3
"""Many programs in one iree-compile against one iree-compile each (issue 39).

    python benchmarks/bench_compile_batch.py [--rounds N]

The programs: the f32_reduction family's kinds at their seed shapes (one ``@main`` each, renamed
in the batch), for the host (iree-cpu's flags, a .vmfb) and for riscv64 (qemu-rvv's flags: a
static library, the host program as text, the dumped executables). Each round compiles them one
by one and then as one batch, each into a fresh cache root (nothing cached), in alternating
order; prints the wall of each and separate / batched per round, with the load average.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    from accel_regress.backends.qemu_rvv import build
    from accel_regress.families.f32_reduction import golden as R, iree_program as P
    from accel_regress.toolchains.iree import compiler, riscv
    texts = [P.program(R.make_case(k, R.SEED_SHAPES[k], "v", 256)).mlir for k in R.KINDS]
    targets = {"host": (HOST_FLAGS, compiler.VMFB),
               "riscv64": (riscv.compile_flags("v") + build.STATIC_FLAGS, "host.mlir")}
    print(f"{len(texts)} programs (f32_reduction kinds); {os.cpu_count()} cores")
    for name, (flags, output) in targets.items():
        for r in range(args.rounds):
            walls = {}
            for how in (("separate", "batched") if r % 2 == 0 else ("batched", "separate")):
                with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
                    os.environ["ACCEL_IREE_CACHE"] = tmp
                    start = time.perf_counter()
                    if how == "separate":
                        for t in texts:
                            compiler.compile_cached(t, flags, output=output)
                    else:
                        compiler.compile_batch(texts, flags, output=output, shared_files=True)
                    walls[how] = time.perf_counter() - start
            load = "/".join(f"{x:.2f}" for x in os.getloadavg()[:2])
            print(f"  {name} round {r + 1} (load {load}): separate {walls['separate']:.2f} s, batched "
                  f"{walls['batched']:.2f} s, separate / batched {walls['separate'] / walls['batched']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
