#!/usr/bin/env python3
"""``-n 2`` against ``-n 0`` on the warm default run, and where the parallel run loses.

    python benchmarks/bench_xdist.py [--modes 0,2] [--warmup] [--per-file] [pytest args...]
    (default pytest args: tests --ignore=tests/selftest; run from the repository root)

``--modes`` lists the runs, in order: ``0`` is plain pytest, ``2`` is ``-n 2`` with the suite's
default distribution, ``2:load`` / ``2:loadscope`` / ``2:worksteal`` ... name xdist's ``--dist``;
a ``+wide`` suffix (``2+wide``) gives every worker thread pools as wide as the machine (the
libraries' own default, what the suite did before hardware/plugin/parallel.py).
An ``@C`` suffix (``0@1``, ``2@1``) pins the run (every process it starts) to the first C CPUs, to
measure what ``-n`` does with fewer cores than workers; the thread pools follow the pinning.
``--per-file`` runs the modes on each test file given (default: the five family files) instead
of all of them at once, and ends with a table: tests, wall per mode and the speed-up, by file,
and the backend runs each mode made (under ``-n`` every xdist worker has its own run memo: a
case whose tests go to two workers runs on both).
``--warmup`` makes one untimed ``-n 0`` run first (IREE cache and golden store warm);
``--cold-golden`` gives each run an empty golden store of its own (where workers wait on each
other's golden locks).

Prints for each run: wall time, CPU seconds of the whole process tree, the load average before
and after, then per pytest process (from the probe plugin benchmarks/xdist_probe.py): startup
(process start to collection finished: interpreter, plugins, collection), its CPU seconds, tests
run, configurations set up, golden-store lock waits and golden entries computed, and the idle
tail (how long it sat done while another worker still ran). Last, the ratios: wall of the first
run over each other run (the speed-up), and CPU over CPU (the parallel run's overhead).

The machine is shared: compare ratios only within one invocation, with its load average.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_ARGS = ["tests", "--ignore=tests/selftest"]
FAMILY_FILES = ["tests/test_fused_decode.py", "tests/test_rowexpandmul_fillpad.py", "tests/test_f32_reduction.py",
                "tests/test_gemm_partition_n.py", "tests/test_matmul.py", "tests/test_matmul_shapes_property.py"]
COUNTER = ROOT / "tests" / "selftest" / "fixtures"      # run_counter.py: backend runs per process


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _iree_entries() -> int:
    from accel_regress.toolchains.iree import compiler
    root = compiler.cache_root()
    return sum(1 for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else 0


def _mode_cpus(mode: str):
    """The CPUs an ``@C`` suffix pins the run to (None: no pinning)."""
    _, at, c = mode.partition("@")
    if not at:
        return None
    return sorted(os.sched_getaffinity(0))[:int(c)]


def _mode_args(mode: str) -> list[str]:
    n, _, dist = mode.partition("@")[0].removesuffix("+wide").partition(":")
    if n == "0":
        return []
    return ["-n", n] + (["--dist", dist] if dist else [])


def run(mode: str, args: list[str], tmp: Path, cold_golden: bool = False) -> dict:
    probe_dir = tmp / f"probe-{mode.replace(':', '-').replace('@', '-at')}"
    probe_dir.mkdir()
    counts = probe_dir / "runs"
    counts.mkdir()
    env = dict(os.environ, BENCH_XDIST_DIR=str(probe_dir), ACCEL_RUN_COUNT_DIR=str(counts),
               PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks"), str(COUNTER), str(ROOT),
                                           os.environ.get("PYTHONPATH", "")]))
    if cold_golden:
        env["ACCEL_GOLDEN_CACHE"] = str(tmp / "golden")
    if mode.partition("@")[0].endswith("+wide"):
        from accel_regress.plugin.parallel import THREAD_VARIABLES
        env.update({var: str(os.cpu_count() or 1) for var in THREAD_VARIABLES})
    argv = [sys.executable, "-m", "pytest", *args, "-q", "-p", "no:cacheprovider", "-p", "xdist_probe", "-p", "run_counter",
            f"--report-dir={tmp / 'reports'}", *_mode_args(mode)]
    entries = _iree_entries()
    load_before = _load()
    cpu0 = _children_cpu()
    start = time.time()
    cpus = _mode_cpus(mode)
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
    wall = time.time() - start
    cpu = _children_cpu() - cpu0
    summary = next((ln for ln in reversed(proc.stdout.splitlines()) if " in " in ln and "passed" in ln), "")
    procs = [json.loads(p.read_text()) for p in sorted(probe_dir.glob("*.json"))]
    runs: dict = {}
    for p in counts.glob("*.json"):
        for r in json.loads(p.read_text()):
            runs[r["key"]] = runs.get(r["key"], 0) + r["count"]
    return {"mode": mode, "wall": wall, "cpu": cpu, "start": start, "load_before": load_before,
            "load_after": _load(), "rc": proc.returncode, "summary": summary.strip("= "),
            "procs": procs, "compiled": _iree_entries() - entries,
            "tests": sum(p["tests"] for p in procs if p["role"] != "controller"),
            "runs": sum(runs.values()), "distinct": len(runs),
            "tail": proc.stdout[-3000:] + proc.stderr[-3000:] if proc.returncode not in (0, 1) else ""}


def report(r: dict) -> None:
    print(f"\n-- {r['mode']:>12}: {r['wall']:6.1f} s wall, {r['cpu']:6.1f} s CPU (process tree), "
          f"load {r['load_before']} -> {r['load_after']}, exit {r['rc']}, new IREE cache entries {r['compiled']}")
    print(f"   {r['summary']}; {r['runs']} backend runs of {r['distinct']} distinct cases")
    if r["tail"]:
        print(r["tail"])
    ends = [p["last_test"] for p in r["procs"] if p.get("last_test") and p["role"] != "controller"]
    last = max(ends) if ends else None
    print("   timeline, s after launch: started / configured / collected / first test / last test end / unconfigured / atexit; "
          "CPU s: at collection finished, at the end, its children (isolation, qemu)")
    print(f"   {'process':>10} {'timeline':>48} {'CPU: start':>10} {'end':>5} {'kids':>5} {'tests':>6} {'configs':>7} {'lock waits':>14} "
          f"{'computed':>8} {'disk hits':>9} {'idle tail':>9}")
    for p in sorted(r["procs"], key=lambda p: p["role"]):
        rel = lambda key: p.get(key) - r["start"] if p.get(key) else float("nan")
        timeline = " ".join(f"{rel(k):6.1f}" for k in ("start", "configure", "collected", "first_test", "last_test", "end", "atexit"))
        cpu = p.get("cpu_collected", p["cpu_configure"])
        tail = (last - p["last_test"]) if last and p.get("last_test") else float("nan")
        g = p.get("golden", {})
        tests = p["tests"] if p["role"] != "controller" else 0
        print(f"   {p['role']:>10} {timeline:>48} {cpu:10.1f} {p['cpu_end']:5.1f} {p.get('cpu_children', 0):5.1f} {tests:6d} {p['configurations']:7d} "
              f"{p['locks']:5d} {p['lock_wait_s']:6.2f} s {g.get('computed', 0):8d} {g.get('disk_hits', 0):9d} "
              f"{tail:9.1f}")

def ratios(results: list[dict]) -> None:
    print("\nratios (each run against the latest run of the first mode before it; load printed above):")
    base = results[0]
    for r in results[1:]:
        if r["mode"] == results[0]["mode"]:
            base = r
            continue
        print(f"  {base['mode']} / {r['mode']}: wall {base['wall'] / r['wall']:.2f}x speed-up; "
              f"CPU {r['cpu'] / base['cpu']:.2f}x of {base['mode']}'s")
        workers = [p for p in r["procs"] if p["role"].startswith("gw") and p.get("collected")]
        if workers:
            n = len(workers)
            print(f"    startup per worker ({r['mode']}): collection finished {sum(p['collected'] for p in workers) / n - r['start']:.1f} s "
                  f"after launch, {sum(p['cpu_collected'] for p in workers) / n:.1f} s CPU each "
                  f"(controller {next((p['cpu_collected'] if p.get('cpu_collected') else p['cpu_configure'] for p in r['procs'] if p['role'] == 'controller'), 0):.1f} s CPU to configure)")
    single = [p for p in base["procs"] if p["role"] == "single"]
    if single:
        s = single[0]
        print(f"  startup of one pytest process (-n 0: start to collection finished): "
              f"{s['collected'] - base['start']:.1f} s wall, {s['cpu_collected']:.1f} s CPU; "
              f"share of the -n 0 wall: {(s['collected'] - base['start']) / base['wall']:.0%}")


def bench(modes: list[str], args: list[str], tmp: Path, cold_golden: bool) -> list[dict]:
    results = []
    for mode in modes:
        d = tmp / f"run-{len(results)}"
        d.mkdir(parents=True)
        results.append(run(mode, args, d, cold_golden))
        report(results[-1])
    ratios(results)
    return results


def table(by_file: dict[str, list[dict]]) -> None:
    """Per file: tests, wall per mode, speed-up of each mode over the first, backend runs."""
    modes = [r["mode"] for r in next(iter(by_file.values()))]
    print("\nper file (speed-up: the first mode's wall over this mode's; runs: backend runs, all processes):")
    print(f"  {'file':<38} {'tests':>5} " + " ".join(f"{m + ' s':>9} {'x':>5} {'runs':>5}" for m in modes))
    for f, results in by_file.items():
        first = results[0]["wall"]
        cells = " ".join(f"{r['wall']:9.1f} {first / r['wall']:5.2f} {r['runs']:5d}" for r in results)
        print(f"  {Path(f).name:<38} {results[0]['tests']:5d} {cells}")


def main(argv: list[str]) -> int:
    modes, warmup, cold_golden, per_file, args = ["0", "2"], False, False, False, []
    it = iter(argv)
    for a in it:
        if a == "--modes":
            modes = next(it).split(",")
        elif a.startswith("--modes="):
            modes = a.split("=", 1)[1].split(",")
        elif a == "--warmup":
            warmup = True
        elif a == "--cold-golden":
            cold_golden = True
        elif a == "--per-file":
            per_file = True
        else:
            args.append(a)
    if per_file:
        files = [a for a in args if a.endswith(".py")] or FAMILY_FILES
        rest = [a for a in args if not a.endswith(".py")]
        groups = {f: [f, *rest] for f in files}
    else:
        groups = {"": args or DEFAULT_ARGS}
    print(f"bench_xdist: pytest {' '.join(args or DEFAULT_ARGS) if not per_file else ', '.join(groups)}; "
          f"{os.cpu_count()} CPUs; runs {', '.join(modes)}{'; each with an empty golden store' if cold_golden else ''}")
    by_file = {}
    with tempfile.TemporaryDirectory(prefix="bench-xdist-") as tmp:
        if warmup:
            (Path(tmp) / "warmup").mkdir()
            w = run("0", [*files, *rest] if per_file else groups[""], Path(tmp) / "warmup")
            print(f"warm-up -n 0: {w['wall']:.1f} s, new IREE cache entries {w['compiled']}")
        for i, (name, group_args) in enumerate(groups.items()):
            if name:
                print(f"\n== {name}")
            by_file[name] = bench(modes, group_args, Path(tmp) / f"group-{i}", cold_golden)
    if per_file:
        table(by_file)
    return 0 if all(r["rc"] in (0, 1) for results in by_file.values() for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
