#!/usr/bin/env python3
"""What the installed plugin costs a project that does not use it (issue 24 item 3).

    python benchmarks/bench_guest.py [--rounds N] [PROJECT ...]

Runs each project's tests (default: the four unrelated projects in
tests/selftest/fixtures/guests/) with this environment's pytest, with the plugin and with
``-p no:accel-regress``, alternating, from a fresh copy each time, and prints each mode's median
wall time, the spread (min-max) and the ratio, and the same for CPU time (user + system of pytest
and its children: what the plugin itself costs, less moved by other load on the machine). The
target is 1.1x or less.
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUESTS = ROOT / "tests" / "selftest" / "fixtures" / "guests"
NAME = "accel-regress"      # the pytest11 entry point (``-p no:accel-regress``)


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _run(project: Path, tmp: Path, plugin: bool) -> tuple[float, float]:
    work = Path(tempfile.mkdtemp(dir=tmp))
    copy = work / project.name
    shutil.copytree(project, copy)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + ([] if plugin else ["-p", f"no:{NAME}"])
    env = {**os.environ, "HOME": str(work), "TMPDIR": str(work)}
    cpu, start = _cpu(), time.perf_counter()
    subprocess.run(argv, cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    took, cpu = time.perf_counter() - start, _cpu() - cpu
    shutil.rmtree(work, ignore_errors=True)
    return took, cpu


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("projects", nargs="*", type=Path, help="project folders, or names of the guests (default: the four guests)")
    parser.add_argument("--rounds", type=int, default=5, help="runs per project and mode (default 5)")
    args = parser.parse_args(argv)
    if not any(ep.name == NAME for ep in md.entry_points(group="pytest11")):
        print(f"the {NAME} plugin is not installed in {sys.executable}'s environment: nothing to compare",
              file=sys.stderr)
        return 2
    projects = [p if p.is_dir() else GUESTS / p for p in args.projects] or sorted(p for p in GUESTS.iterdir() if p.is_dir())
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.rounds} rounds")
    total = {(mode, plugin): 0.0 for mode in ("wall", "cpu") for plugin in (True, False)}
    with tempfile.TemporaryDirectory(prefix="bench-guest-") as tmp:
        for project in projects:
            times = {(mode, plugin): [] for mode in ("wall", "cpu") for plugin in (True, False)}
            for i in range(args.rounds):
                for plugin in ((True, False) if i % 2 == 0 else (False, True)):   # alternating order
                    wall, cpu = _run(project, Path(tmp), plugin)
                    times["wall", plugin].append(wall)
                    times["cpu", plugin].append(cpu)
            for mode in ("wall", "cpu"):
                on, off = times[mode, True], times[mode, False]
                total[mode, True] += statistics.median(on)
                total[mode, False] += statistics.median(off)
                print(f"{project.name:<16} {mode:<4} with plugin {_spread(on)}, -p no:{NAME} {_spread(off)}: "
                      f"ratio {statistics.median(on) / statistics.median(off):.3f}")
    for mode in ("wall", "cpu"):
        print(f"all projects, {mode} (sum of medians): ratio {total[mode, True] / total[mode, False]:.3f} (target <= 1.1)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
