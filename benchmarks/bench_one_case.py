#!/usr/bin/env python3
"""A developer's one-case run against the standalone repro, and the collection time (issue 30 items 2-3).

    python benchmarks/bench_one_case.py [--rounds N] [--hw NAME] [-k EXPR]

Prints, from one invocation, with the golden store warmed by a first run of each:
- one case: ``pytest tests/test_gemm_partition_n.py --hw emu -k EXPR`` (one test, one device run)
  against ``python repros/gemm_partition_n.py --hw emu`` (the seed's check, no pytest), median wall
  and CPU times (user + system of the process and its children: the isolated worker) of N
  alternating rounds and their ratios (target: 1.2x or less);
- collection: ``pytest tests --co -q`` wall time and pytest's own collection time, with the items
  collected and deselected (the opt-in ``large`` / ``input_classes`` cases are generated only when
  ``-m`` names them), and the same with ``-m "large or input_classes or not large"`` for scale.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_K = "test_forward_shape and vocab-mini and normal"


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


_last_cpu = [0.0]


def _timed(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    cpu, start = _cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    _last_cpu[0] = _cpu() - cpu
    return time.perf_counter() - start, proc


def _checked(label: str, proc: subprocess.CompletedProcess, ok=(0,)) -> None:
    if proc.returncode not in ok:
        sys.exit(f"{label} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def one_case(rounds: int, hw: str, expr: str, env: dict, tmp: Path) -> float:
    pytest_argv = [sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", hw, "-k", expr,
                   "-q", "-p", "no:cacheprovider", "--report-dir", str(tmp / "reports")]
    repro_argv = [sys.executable, "repros/gemm_partition_n.py", "--hw", hw]
    _, proc = _timed(pytest_argv, env)          # warms the golden store and the IREE cache
    _checked("the one-case pytest run", proc)
    ran = re.findall(r"(\d+) passed", proc.stdout)
    if ran != ["1"]:
        sys.exit(f"-k {expr!r} must select exactly one test; pytest said:\n{proc.stdout[-2000:]}")
    _, proc = _timed(repro_argv, env)
    _checked("the repro", proc, ok=(0, 1))
    times: dict[str, list[float]] = {"pytest": [], "repro": []}
    cpu: dict[str, list[float]] = {"pytest": [], "repro": []}
    for i in range(rounds):
        order = ("pytest", "repro") if i % 2 == 0 else ("repro", "pytest")
        for which in order:
            took, _ = _timed(pytest_argv if which == "pytest" else repro_argv, env)
            times[which].append(took)
            cpu[which].append(_last_cpu[0])
    ratio = statistics.median(times["pytest"]) / statistics.median(times["repro"])
    print(f"one case, {rounds} alternating rounds (wall; CPU):")
    print(f"  pytest -k {expr!r} --hw {hw}: {_spread(times['pytest'])}; {_spread(cpu['pytest'])}")
    print(f"  python repros/gemm_partition_n.py --hw {hw}: {_spread(times['repro'])}; {_spread(cpu['repro'])}")
    print(f"  one-case pytest / repro (medians): wall {ratio:.2f}x, CPU "
          f"{statistics.median(cpu['pytest']) / statistics.median(cpu['repro']):.2f}x (target <= 1.2)")
    return ratio


_COLLECTED = re.compile(r"(\d+)(?:/(\d+))? tests? collected(?: \((\d+) deselected\))? in ([\d.]+)s")


def collection(rounds: int, env: dict, extra: list[str], label: str) -> None:
    argv = [sys.executable, "-m", "pytest", "tests", "--co", "-q", "-p", "no:cacheprovider", *extra]
    walls, inner, found = [], [], None
    for _ in range(rounds):
        took, proc = _timed(argv, env)
        _checked(f"pytest --co {label}", proc)
        m = _COLLECTED.search(proc.stdout)
        if not m:
            sys.exit(f"no collection line in:\n{proc.stdout[-2000:]}")
        walls.append(took)
        inner.append(float(m.group(4)))
        selected, total, deselected = m.group(1), m.group(2) or m.group(1), m.group(3) or "0"
        found = f"{selected} selected of {total} collected ({deselected} deselected)"
    print(f"  pytest tests --co -q {label}: wall {_spread(walls)}, pytest's collection {_spread(inner)}; {found}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per comparison (default 5)")
    parser.add_argument("--hw", default="emu", help="backend of the one-case run and the repro (default emu)")
    parser.add_argument("-k", dest="expr", default=DEFAULT_K, help=f"selects the one case (default {DEFAULT_K!r})")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-one-case-") as tmp:
        env = {**os.environ, "ACCEL_GOLDEN_CACHE": str(Path(tmp) / "golden")}
        one_case(args.rounds, args.hw, args.expr, env, Path(tmp))
        print("collection:")
        collection(max(1, args.rounds // 2), env, [], "(default selection)")
        collection(max(1, args.rounds // 2), env, ["-m", "large or input_classes or not large"], "-m 'large or input_classes or not large'")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
