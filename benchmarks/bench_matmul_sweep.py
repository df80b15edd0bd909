#!/usr/bin/env python3
"""Where a matmul sweep's time goes, per backend: golden (inputs, reference, error model) and the
backend run (cold: compiling; warm: the compile cache hit), with ratios.

    python benchmarks/bench_matmul_sweep.py [--dims 512,640] [--hw emu,iree-cpu] [--inputs exact|normal|...]

Uses a private IREE cache folder, so the suite's own cache is neither used nor touched.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    from accel_regress.golden.inputs import CLASSES
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--dims", default="512,640")
    p.add_argument("--hw", default="emu,iree-cpu")
    p.add_argument("--inputs", default="exact", choices=CLASSES)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-matmul-") as cache:
        os.environ["ACCEL_IREE_CACHE"] = cache
        os.environ["ACCEL_IREE_AMD_AIE_CACHE"] = cache
        from accel_regress.families.matmul import golden as mm
        from accel_regress.core import registry
        from accel_regress.core.runner import run_case

        shapes = mm.cube(int(x) for x in args.dims.split(","))
        golden_s, cases = 0.0, []
        for s in shapes:
            t = time.perf_counter()
            case = mm.make_case(mm.MatmulConfig(*s, inputs=args.inputs))
            inputs = mm.make_inputs(case)
            mm.expected(case, inputs)
            golden_s += time.perf_counter() - t
            cases.append((case, inputs))
        print(f"{len(shapes)} shapes over {{{args.dims}}}^3, {args.inputs} inputs")
        print(f"golden (inputs + reference + tolerance): {golden_s:.2f} s")
        times = {}
        for hw in args.hw.split(","):
            reason = registry.availability(hw)
            if reason:
                print(f"{hw}: not available ({reason})")
                continue
            for label in ("cold", "warm"):
                t = time.perf_counter()
                verdicts = [run_case(hw, c, i).verdict for c, i in cases]
                times[(hw, label)] = time.perf_counter() - t
                bad = [v for v in verdicts if v]
                print(f"{hw:10s} {label}: {times[(hw, label)]:.2f} s" + (f"  ({len(bad)} not run: {set(bad)})" if bad else ""))
        for hw in args.hw.split(","):
            if (hw, "cold") in times:
                print(f"{hw}: cold/warm {times[(hw, 'cold')] / times[(hw, 'warm')]:.2f}, "
                      f"warm/golden {times[(hw, 'warm')] / golden_s:.2f}")
        if ("emu", "warm") in times and ("iree-cpu", "warm") in times:
            print(f"iree-cpu/emu warm {times[('iree-cpu', 'warm')] / times[('emu', 'warm')]:.2f}, "
                  f"cold {times[('iree-cpu', 'cold')] / times[('emu', 'cold')]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
