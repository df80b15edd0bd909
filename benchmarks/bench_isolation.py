"""Per-case cost of isolation: the same emu GEMM jobs run in this process and in the warm worker.

    python benchmarks/bench_isolation.py [--reps N] [--big-mb MB]

Prints, per case, the median time in-process and isolated, the overhead in ms and the ratio;
then what the isolated path avoids and what it costs when a worker must be replaced:
- a fresh interpreter importing numpy+torch (what a subprocess per case would pay),
- the fork server's cold start (once per pytest process),
- replacing a worker after a crash (a fork of the warm server),
- moving a big output (--big-mb, default 512: the Llama `large` case returns ~0.5 GB).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.families.gemm_partition_n import golden as gemm  # noqa: E402
from accel_regress.core import runner  # noqa: E402
from accel_regress.core.isolation import Bounds, Isolation  # noqa: E402

SMALL = ["M64-K512-N256-m16-k64-n64-c4-bT-cF-P4", "M192-K384-N64-m48-k96-n16-c4-bF-cF-P1",
         "M192-K384-N64-m48-k96-n16-c4-bT-cT-P1", "M384-K1536-N1792-m32-k48-n64-c4-bT-cF-P1"]

FAULTS = textwrap.dedent('''
    import os
    import numpy as np
    def big(case, outputs):
        outputs["big"] = np.full(int(os.environ["BENCH_BIG_MB"]) << 18, 1.0, np.float32)
        return outputs
    def crash(case, outputs):
        os._exit(3)
''')


def _median(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--big-mb", type=int, default=512)
    args = ap.parse_args(argv)
    configs = {c.id: c for c in gemm.CI_CONFIGS}

    iso = Isolation(Bounds(), preload=["accel_regress.backends.emu", "accel_regress.families.gemm_partition_n.emu"])
    t = time.perf_counter()
    iso.start()
    jobs = {}
    for cid in SMALL:
        case = gemm.make_case(configs[cid])
        jobs[cid] = runner.Job("emu", case, gemm.make_inputs(case), None, 60.0)
    iso.run(jobs[SMALL[0]])
    cold = time.perf_counter() - t

    print(f"{'case':44} {'in-process ms':>13} {'isolated ms':>12} {'overhead ms':>12} {'ratio':>6}")
    ratios, overheads = [], []
    for cid, job in jobs.items():
        runner.execute(job)                     # warm this process's caches too
        iso.run(job)
        inproc = _median(lambda: runner.execute(job), args.reps)
        isolated = _median(lambda: iso.run(job), args.reps)
        ratios.append(isolated / inproc)
        overheads.append(isolated - inproc)
        print(f"{cid:44} {inproc * 1e3:13.2f} {isolated * 1e3:12.2f} {(isolated - inproc) * 1e3:12.2f} "
              f"{isolated / inproc:6.2f}")
    total_in = sum(_median(lambda: runner.execute(j), 3) for j in jobs.values())
    total_iso = sum(_median(lambda: iso.run(j), 3) for j in jobs.values())
    print(f"all {len(jobs)} small cases: in-process {total_in * 1e3:.1f} ms, isolated {total_iso * 1e3:.1f} ms, "
          f"ratio {total_iso / total_in:.2f}; median per-case overhead {statistics.median(overheads) * 1e3:.2f} ms")

    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy, torch"], check=True)
    fresh = time.perf_counter() - t
    print(f"fresh interpreter + numpy/torch import (a subprocess per case would pay this): {fresh * 1e3:.0f} ms "
          f"= {fresh / statistics.median(overheads):.0f}x the isolation overhead")
    print(f"fork server cold start + first case (once per pytest process): {cold * 1e3:.0f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        faults = Path(tmp) / "bench_faults.py"
        faults.write_text(FAULTS)
        small = jobs[SMALL[1]]
        crash = runner.Job("emu", small.case, small.inputs, f"{faults}:crash", 60.0)
        ok = lambda: iso.run(small)  # noqa: E731

        def crash_then_ok():
            try:
                iso.run(crash)
            except Exception:
                pass
            ok()
        replace = _median(crash_then_ok, 5) - _median(ok, 5)
        print(f"replacing a dead worker (fork of the warm server): {replace * 1e3:.1f} ms")

        big = runner.Job("emu", small.case, small.inputs, f"{faults}:big", 60.0, {"BENCH_BIG_MB": str(args.big_mb)})
        os.environ.update(big.env)      # the in-process run reads it here
        runner.execute(big)
        iso.run(big)
        big_in = _median(lambda: runner.execute(big), 3)
        big_iso = _median(lambda: iso.run(big), 3)
        print(f"case with a {args.big_mb} MB output: in-process {big_in * 1e3:.0f} ms, isolated {big_iso * 1e3:.0f} ms "
              f"(transfer {(big_iso - big_in) * 1e3:.0f} ms, {args.big_mb / max(big_iso - big_in, 1e-9) / 1024:.1f} GB/s)"
              f", ratio {big_iso / big_in:.2f}")
    print(f"transfer folder: {iso.dir.parent}")
    iso.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
