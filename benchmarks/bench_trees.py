#!/usr/bin/env python3
"""The warm default run (or a subset) of two checkouts, interleaved: what a change to the harness
gains, as the ratio of each tree's run wall time to its backends' own compute.

    python benchmarks/bench_trees.py BEFORE_TREE BEFORE_PYTHON AFTER_TREE AFTER_PYTHON [--pairs N] [-- PYTEST_ARGS...]

Each tree runs with its own interpreter (a venv with that tree installed editable: the repository's
conftest refuses an accel_regress from another tree) and its own benchmarks/bench_default_run.py
child (timers around golden, compare and the runner). The runs alternate, before first in even pairs
and after first in odd ones, so both sides see the same load; a warm-up run of each first (golden
store, IREE cache, bytecode). Prints per pair: wall, backends' own compute (the isolated workers'
run_s), run / compute, the after / before ratio of the two, with their medians; and the CPU time of
the whole process tree (pytest, fork server, workers: less moved by the load than wall time) less
the compute, after / before: a gain smaller than the wall time's noise shows there first.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(tree: Path, python: str, args: list[str], out: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # as a user runs it
    env["PYTHONPATH"] = str(tree)
    load = os.getloadavg()[0]
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = use.ru_utime + use.ru_stime
    start = time.perf_counter()
    proc = subprocess.run([python, str(tree / "benchmarks" / "bench_default_run.py"), "--child", str(out), *args],
                          cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = use.ru_utime + use.ru_stime - cpu
    if not out.is_file():
        sys.exit(f"{tree}: the run failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    d = json.loads(out.read_text())
    if d["exit"] not in (0, 1):
        sys.exit(f"{tree}: pytest exited {d['exit']}:\n{proc.stdout[-3000:]}")
    d.update(wall=wall, load=load, tree_cpu=cpu)
    return d


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before_tree", type=Path)
    ap.add_argument("before_python")
    ap.add_argument("after_tree", type=Path)
    ap.add_argument("after_python")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("pytest_args", nargs="*", help="after --: the run's pytest arguments (default: the default run)")
    a = ap.parse_args(argv)
    args = a.pytest_args or ["tests", "--ignore=tests/selftest"]
    sides = {"before": (a.before_tree.resolve(), a.before_python), "after": (a.after_tree.resolve(), a.after_python)}
    ratio: dict = {"before": [], "after": []}
    walls: dict = {"before": [], "after": []}
    cpus: dict = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench-trees-") as tmp:
        for side, (tree, py) in sides.items():
            run(tree, py, [*args, "--report-dir", f"{tmp}/{side}-warm"], Path(tmp) / f"{side}-warm.json")
        print(f"pytest {' '.join(args)}; {a.pairs} pairs after a warm-up of each; {os.cpu_count()} cores")
        for i in range(a.pairs):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            got = {}
            for side in order:
                tree, py = sides[side]
                d = got[side] = run(tree, py, [*args, "--report-dir", f"{tmp}/{side}-{i}"], Path(tmp) / f"{side}-{i}.json")
                walls[side].append(d["wall"])
                cpus[side].append(d["tree_cpu"] - d["spent"]["backend"])
                ratio[side].append(d["wall"] / d["spent"]["backend"])
            print(f"  pair {i + 1}: " + "; ".join(
                f"{s} {got[s]['wall']:.2f} s wall, {got[s]['spent']['backend']:.2f} s compute, "
                f"{got[s]['wall'] / got[s]['spent']['backend']:.3f}x, CPU less compute {got[s]['tree_cpu'] - got[s]['spent']['backend']:.2f} s "
                f"(load {got[s]['load']:.2f})" for s in order)
                + f"; after / before wall {got['after']['wall'] / got['before']['wall']:.3f}", flush=True)
    med = statistics.median
    pairs = [x / y for x, y in zip(walls["after"], walls["before"])]
    print(f"run / compute: before {med(ratio['before']):.3f}x ({min(ratio['before']):.3f}-{max(ratio['before']):.3f}), "
          f"after {med(ratio['after']):.3f}x ({min(ratio['after']):.3f}-{max(ratio['after']):.3f})")
    print(f"wall: before {med(walls['before']):.2f} s, after {med(walls['after']):.2f} s; "
          f"after / before (median of the pairs) {med(pairs):.3f} ({min(pairs):.3f}-{max(pairs):.3f})")
    cpu_pairs = [x / y for x, y in zip(cpus["after"], cpus["before"])]
    print(f"CPU of the process tree less the compute: before {med(cpus['before']):.2f} s, after {med(cpus['after']):.2f} s; "
          f"after / before {med(cpu_pairs):.3f} ({min(cpu_pairs):.3f}-{max(cpu_pairs):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
