#!/usr/bin/env python3
"""What the harness costs, against issue 30's targets, from one invocation: a one-case run against
the repro, the warm default run against the backends' own compute, and the collection time.

    python benchmarks/bench_harness.py [--repeat N] [--hw NAME] [-k EXPR] [-- DEFAULT_RUN_ARGS...]
    (DEFAULT_RUN_ARGS: the default run's pytest arguments, default ``tests --ignore=tests/selftest``
    (``make suite``); give a subset, e.g. ``-- tests/test_fused_decode.py``, for a short run: the
    table then says it measured a subset)

An untimed warm-up round first (the usual golden store and IREE cache filled, the one case checked
to select exactly one test), then N rounds (``--repeat``, default 2), each:

- one case: ``pytest tests/test_gemm_partition_n.py --hw emu -k EXPR -q`` (one test, one device
  run) and ``python repros/gemm_partition_n.py --hw emu`` (the seed's check without pytest), twice
  each, in the order pytest, repro, repro, pytest (repro first in odd rounds); wall and CPU (user +
  system of the process and its children: the isolated worker). Target: pytest / repro <= 1.2x,
  the median of the ratios of the back-to-back pairs (pytest, repro) and (repro, pytest).
- collection: ``pytest DEFAULT_RUN_ARGS --co -q``, wall and pytest's own collection time, items
  collected and deselected; and the same with every opt-in case selected
  (``-m "large or input_classes or not large"``) for scale.
- the warm default run (``pytest DEFAULT_RUN_ARGS``, every backend available here, the usual golden
  store), run by benchmarks/bench_default_run.py's child: timers around golden, compare and the
  runner, in one process.

The backends' own compute is the time inside the backends' run calls: the sum, over the run's
backend runs, of the isolated worker's ``run_s`` (its perf_counter around ``runner.execute``: the
backend's ``run``, an injected fault if any, the output-contract check; not the transfer of
inputs and outputs, not the fork, not golden or compare). A run that returns no ``run_s`` (a
verdict raised in the worker, ``--isolation none``) is charged whole to the backend, which can only
flatter the harness. It is measured inside the same run as the run's own wall time, so both see
the same load (the pair needs no interleaving). Each distinct case runs once (the run memo), so
this is the device time the run cannot do without. The ratio is the run's process wall (what the
user waits for: interpreter, imports, collection, items, session end) over that compute;
target <= 1.25x. The harness share is (wall - golden - backend - compare) / wall; "run / work"
adds golden (warm: reads and the goldens too cheap to store) and compare to the compute, the
run's necessary work. Back to back with each default run (in turns, first or second): pytest's
floor, plain pytest over a file of as many trivial tests, what any pytest suite of that size pays;
"run / (work + floor)" is then what the plugin and the isolation add.

Every command runs with bytecode caching on, as a user's do (PYTHONDONTWRITEBYTECODE, if set
here, is left out of their environment). Prints the load average with every measurement and ends with one table: the medians over the
rounds, their ratios and the targets. The machine is shared: compare only within one invocation.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_default_run  # noqa: E402  (this folder, put on the path above)

DEFAULT_K = "test_forward_shape and vocab-mini and normal"
DEFAULT_RUN = ["tests", "--ignore=tests/selftest"]
ALL_OPT_IN = ["-m", "large or input_classes or not large"]
loads: list[float] = []


def _load() -> str:
    one, five, _ = os.getloadavg()
    loads.append(one)
    return f"load {one:.2f}/{five:.2f}"


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _timed(argv: list[str], env: dict) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU seconds (the process and its children) of one command."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    return time.perf_counter() - start, _children_cpu() - cpu, proc


def _checked(label: str, proc: subprocess.CompletedProcess, ok=(0,)) -> None:
    if proc.returncode not in ok:
        sys.exit(f"{label} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def _med(xs: list[float]) -> float:
    return statistics.median(xs)


def _spread(xs: list[float], unit: str = " s") -> str:
    return f"{_med(xs):.2f}{unit} ({min(xs):.2f}-{max(xs):.2f})"


class OneCase:
    def __init__(self, hw: str, expr: str, env: dict, tmp: Path):
        self.expr, self.hw, self.env = expr, hw, env
        self.argv = {"pytest": [sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", hw,
                                "-k", expr, "-q", "-p", "no:cacheprovider", "--report-dir", str(tmp / "reports")],
                     "repro": [sys.executable, "repros/gemm_partition_n.py", "--hw", hw]}
        self.wall: dict[str, list[float]] = {"pytest": [], "repro": []}
        self.cpu: dict[str, list[float]] = {"pytest": [], "repro": []}

    def warm_up(self) -> None:
        _, _, proc = _timed(self.argv["pytest"], self.env)
        _checked("the one-case pytest run", proc)
        if re.findall(r"(\d+) passed", proc.stdout) != ["1"]:
            sys.exit(f"-k {self.expr!r} must select exactly one test; pytest said:\n{proc.stdout[-2000:]}")
        _, _, proc = _timed(self.argv["repro"], self.env)
        _checked("the repro", proc, ok=(0, 1))

    def round(self, i: int) -> None:
        order = ["pytest", "repro", "repro", "pytest"] if i % 2 == 0 else ["repro", "pytest", "pytest", "repro"]
        load = _load()
        for which in order:
            wall, cpu, _ = _timed(self.argv[which], self.env)
            self.wall[which].append(wall)
            self.cpu[which].append(cpu)
        print(f"  one case ({load}): pytest {', '.join(f'{t:.2f}' for t in self.wall['pytest'][-2:])} s, "
              f"repro {', '.join(f'{t:.2f}' for t in self.wall['repro'][-2:])} s", flush=True)

    def ratios(self, what: str = "wall") -> list[float]:
        """pytest / repro of each adjacent pair (run back to back: the same load)."""
        d = self.wall if what == "wall" else self.cpu
        return [p / r for p, r in zip(d["pytest"], d["repro"])]


_COLLECTED = re.compile(r"(\d+)(?:/(\d+))? tests? collected(?: \((\d+) deselected\))? in ([\d.]+)s")


class Collection:
    def __init__(self, args: list[str], extra: list[str], env: dict):
        self.argv = [sys.executable, "-m", "pytest", *args, "--co", "-q", "-p", "no:cacheprovider", *extra]
        self.env, self.wall, self.inner, self.items = env, [], [], ""

    def round(self, label: str) -> None:
        load = _load()
        wall, _, proc = _timed(self.argv, self.env)
        _checked(f"pytest --co {label}", proc)
        m = _COLLECTED.search(proc.stdout)
        if not m:
            sys.exit(f"no collection line in:\n{proc.stdout[-2000:]}")
        self.wall.append(wall)
        self.inner.append(float(m.group(4)))
        selected, total, deselected = m.group(1), m.group(2) or m.group(1), m.group(3) or "0"
        self.items = f"{selected} selected of {total} ({deselected} deselected)"
        print(f"  collection {label} ({load}): {wall:.2f} s wall, pytest's {m.group(4)} s; {self.items}", flush=True)


class DefaultRun:
    def __init__(self, args: list[str], tmp: Path, env: dict):
        self.args, self.tmp, self.runs = args, tmp, []
        self.env = {**env, "PYTHONPATH": str(ROOT)}     # the usual golden store: warm after the warm-up

    def round(self, name: str, keep: bool = True) -> dict:
        print(f"  {name} ({_load()}):", flush=True)
        d = bench_default_run.run_child(self.tmp, name.replace(" ", "-"), self.args, self.env)
        if d["exit"] not in (0, 1):
            sys.exit(f"the default run exited {d['exit']}")
        if keep:
            self.runs.append(d)
            print(bench_default_run.shares(d), flush=True)
        print(f"    golden store: {d['store']}", flush=True)
        return d

    def med(self, fn) -> float:
        return _med(self.each(fn))

    def each(self, fn) -> list[float]:
        return [fn(d) for d in self.runs]


class PlainPytest:
    """pytest's own floor: a file of as many trivial tests as the default run has, plain pytest
    (run outside this repository: no conftest, the accel-regress plugin inert)."""

    def __init__(self, tmp: Path, env: dict):
        self.dir, self.env, self.wall, self.items = tmp / "plain", env, [], 0

    def round(self, items: int) -> None:
        self.dir.mkdir(exist_ok=True)
        if items != self.items:
            self.items = items
            (self.dir / "test_plain.py").write_text(
                "import pytest\n\n\n@pytest.mark.parametrize('i', range(%d))\ndef test_nothing(i):\n    pass\n" % items)
        load = _load()
        cpu, start = _children_cpu(), time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "test_plain.py", "-q", "-p", "no:cacheprovider"],
                              cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=900)
        self.wall.append(time.perf_counter() - start)
        _checked("plain pytest", proc)
        print(f"  plain pytest, {items} trivial tests ({load}): {self.wall[-1]:.2f} s wall, "
              f"{_children_cpu() - cpu:.2f} s CPU", flush=True)


def _row(name: str, value: str, target: str = "", met: str = "") -> str:
    return f"  {name:<72} {value:<26} {target:<9} {met}".rstrip()


def table(one: OneCase, co: Collection, co_all: Collection, run: DefaultRun, plain: PlainPytest, subset: bool,
          rounds: int) -> None:
    def verdict(x: float, bound: float) -> str:
        return "met" if x <= bound else "MISSED"

    print(f"\nissue 30's measures: medians of {rounds} rounds; load average (1 min) over the run "
          f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores")
    print(_row("measure", "value", "target", ""))
    r = _med(one.ratios())
    print(_row(f"one case: pytest -k {one.expr!r} --hw {one.hw}", _spread(one.wall["pytest"])))
    print(_row(f"          python repros/gemm_partition_n.py --hw {one.hw}", _spread(one.wall["repro"])))
    print(_row("          pytest / repro, wall (median of the pairs' ratios)", _spread(one.ratios(), "x"), "<= 1.2x",
               verdict(r, 1.2)))
    print(_row("          pytest / repro, CPU", _spread(one.ratios("cpu"), "x")))
    if run.runs:
        if subset:
            print(f"  warm default run: a SUBSET, pytest {' '.join(run.args)}")
        wall = run.med(lambda d: d["wall"])
        backend = run.med(lambda d: d["spent"]["backend"])
        share = run.med(lambda d: bench_default_run.harness_seconds(d, d["wall"]) / d["wall"])
        ratios = run.each(lambda d: d["wall"] / d["spent"]["backend"])
        ratio = _med(ratios)
        work = run.med(lambda d: d["wall"] / sum(d["spent"][k] for k in ("golden", "backend", "compare")))
        tests = run.runs[-1]["items"]
        print(_row(f"warm default run: wall, {tests} tests", f"{wall:.2f} s"))
        print(_row(f"          backends' own compute ({run.runs[-1]['runs']} isolated runs)", f"{backend:.2f} s"))
        print(_row("          harness share (wall - golden - backend - compare)", f"{share:.3f}"))
        print(_row("          run / backends' own compute", _spread(ratios, "x"), "<= 1.25x", verdict(ratio, 1.25)))
        print(_row("          run / work (backend + golden + compare)", f"{work:.2f}x"))
        floor = _med(plain.wall)
        beyond = [d["wall"] / (sum(d["spent"][k] for k in ("golden", "backend", "compare")) + f)
                  for d, f in zip(run.runs, plain.wall)]
        print(_row(f"          pytest's floor: plain pytest, {plain.items} trivial tests", f"{floor:.2f} s"))
        print(_row("          run / (work + pytest's floor): the plugin and isolation", _spread(beyond, "x")))
    for c, what in ((co, "default run"), (co_all, "every opt-in case too")):
        print(_row(f"collection ({what}): wall; pytest's own", f"{_med(c.wall):.2f} s; {_med(c.inner):.2f} s",
                   "(4.6 s)" if c is co else ""))
        print(_row("          items", c.items))
    print("  (4.6 s: the issue's `pytest --co -q` before items were generated only when selected; no target)")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--repeat", type=int, default=2, help="timed rounds after the warm-up (default 2)")
    parser.add_argument("--hw", default="emu", help="backend of the one-case run and the repro (default emu)")
    parser.add_argument("-k", dest="expr", default=DEFAULT_K, help=f"selects the one case (default {DEFAULT_K!r})")
    parser.add_argument("--no-default-run", action="store_true", help="leave the default run out (a quick check)")
    parser.add_argument("default_run", nargs="*", metavar="DEFAULT_RUN_ARGS",
                        help="after --: the default run's pytest arguments (default: tests --ignore=tests/selftest)")
    args = parser.parse_args(argv)
    run_args = args.default_run or DEFAULT_RUN
    # Measured as a user runs them: with bytecode caching (this sandbox sets PYTHONDONTWRITEBYTECODE,
    # which also turns off pytest's cache of rewritten test modules); the warm-up writes the caches.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if "PYTHONDONTWRITEBYTECODE" in os.environ:
        print("PYTHONDONTWRITEBYTECODE is set here: left out of the measured commands (a user's default)")
    print(f"bench_harness: {args.repeat} rounds after a warm-up; {os.cpu_count()} cores, {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
        tmp = Path(tmp)
        # The one case gets a golden store of its own (warmed by the warm-up), as in bench_one_case before.
        one = OneCase(args.hw, args.expr, {**env, "ACCEL_GOLDEN_CACHE": str(tmp / "golden")}, tmp)
        co = Collection(run_args, [], env)
        co_all = Collection(run_args, ALL_OPT_IN, env)
        run, plain = DefaultRun(run_args, tmp, env), PlainPytest(tmp, env)
        print("warm-up (untimed):", flush=True)
        one.warm_up()
        items = 0 if args.no_default_run else run.round("warm-up default run", keep=False)["items"]
        for i in range(args.repeat):
            print(f"round {i + 1}:", flush=True)
            one.round(i)
            co.round("(default run)")
            co_all.round("(every opt-in case)")
            if not args.no_default_run:     # the run and pytest's floor back to back, in turns
                for which in (("run", "plain") if i % 2 == 0 else ("plain", "run")):
                    if which == "run":
                        run.round(f"warm default run {i + 1}")
                    else:
                        plain.round(items)
    table(one, co, co_all, run, plain, subset=bool(args.default_run), rounds=args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
