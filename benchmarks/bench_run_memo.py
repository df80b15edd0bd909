#!/usr/bin/env python3
"""Device runs and wall time of one family with and without the session's run memo.

    python benchmarks/bench_run_memo.py [--pairs N] [--hw emu] [pytest args...]
    (default pytest args: tests/test_gemm_partition_n.py; run from the repository root)

Each pair is one pytest run with the memo off (``-p no:accel_regress.plugin.run_memo``: every
module fixture set-up and test body runs the backend, as before the memo) and one with it on, in
alternating order, after one untimed warm-up run (golden store and IREE cache warm). Backend runs
are counted by tests/selftest/fixtures/run_counter.py (every call of the runner's ``invoke``):
runs in all, distinct cases (backend, case identity, inputs, fault), and the most any case ran.
Prints each run, then off/on ratios per pair: device runs, seconds in the backend (isolated
worker round trips included), wall. The machine is shared: the load average is printed with each run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COUNTER = ROOT / "tests" / "selftest" / "fixtures"
OFF = ["-p", "no:accel_regress.plugin.run_memo"]


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def run(memo: bool, args: list[str], hw: str, tmp: Path) -> dict:
    counts = tmp / "counts"
    counts.mkdir(parents=True)
    env = dict(os.environ, ACCEL_RUN_COUNT_DIR=str(counts),
               PYTHONPATH=os.pathsep.join([str(COUNTER), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "pytest", *args, "--hw", hw, "-q", "-p", "no:cacheprovider", "-p", "run_counter",
            f"--report-dir={tmp / 'reports'}", *([] if memo else OFF)]
    load = _load()
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    runs = [r for p in counts.glob("*.json") for r in json.loads(p.read_text())]
    results = tmp / "reports" / "results.json"
    tests = len(json.loads(results.read_text())["cases"]) if results.exists() else 0
    memo_stats = [json.loads(p.read_text()) for p in counts.glob("memo-*.stats")]
    peak = max((m["peak_bytes"] for m in memo_stats), default=0)
    return {"memo": memo, "peak_mib": peak / (1 << 20), "wall": wall, "rc": proc.returncode, "load": f"{load} -> {_load()}",
            "tests": tests, "runs": sum(r["count"] for r in runs), "distinct": len(runs),
            "most": max((r["count"] for r in runs), default=0), "backend_s": sum(r["seconds"] for r in runs),
            "summary": next((ln for ln in reversed(proc.stdout.splitlines()) if " in " in ln), "").strip("= "),
            "tail": "" if proc.returncode in (0, 1) else proc.stdout[-2000:] + proc.stderr[-2000:]}


def report(r: dict) -> None:
    held = f", the memo held at most {r['peak_mib']:.0f} MiB of outputs" if r["memo"] else ""
    print(f"  memo {'on ' if r['memo'] else 'off'}: {r['wall']:6.1f} s wall, {r['tests']} tests, {r['runs']} backend runs "
          f"of {r['distinct']} distinct cases (at most {r['most']} of one), {r['backend_s']:.1f} s in the backend{held}; "
          f"load {r['load']}; exit {r['rc']}; {r['summary']}")
    if r["tail"]:
        print(r["tail"])


def main(argv: list[str]) -> int:
    pairs, hw, args = 2, "emu", []
    it = iter(argv)
    for a in it:
        if a == "--pairs":
            pairs = int(next(it))
        elif a == "--hw":
            hw = next(it)
        else:
            args.append(a)
    args = args or ["tests/test_gemm_partition_n.py"]
    print(f"bench_run_memo: pytest {' '.join(args)} --hw {hw}; {os.cpu_count()} CPUs; {pairs} pairs after a warm-up")
    with tempfile.TemporaryDirectory(prefix="bench-run-memo-") as tmp:
        w = run(True, args, hw, Path(tmp) / "warmup")
        print(f"warm-up: {w['wall']:.1f} s")
        done = []
        for i in range(pairs):
            order = (False, True) if i % 2 == 0 else (True, False)
            pair = {}
            for memo in order:
                pair[memo] = run(memo, args, hw, Path(tmp) / f"pair{i}-{'on' if memo else 'off'}")
                report(pair[memo])
            done.append(pair)
    print("\nratios, memo off / memo on (per pair):")
    for i, p in enumerate(done):
        off, on = p[False], p[True]
        print(f"  pair {i + 1}: device runs {off['runs']}/{on['runs']} = {off['runs'] / max(1, on['runs']):.2f}x; "
              f"backend s {off['backend_s'] / max(1e-9, on['backend_s']):.2f}x; wall {off['wall'] / on['wall']:.2f}x")
    walls = [p[False]["wall"] / p[True]["wall"] for p in done]
    print(f"  wall ratio over pairs: {min(walls):.2f}x to {max(walls):.2f}x (spread = this machine's noise)")
    return 0 if all(r["rc"] in (0, 1) for p in done for r in p.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
