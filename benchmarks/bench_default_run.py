#!/usr/bin/env python3
"""Where the default run's time goes, and the ratios of issue 17, from one invocation.

    python benchmarks/bench_default_run.py [--no-parallel] [pytest args...]
    python benchmarks/bench_default_run.py --warm-only [pytest args...]
    (default pytest args: tests --ignore=tests/selftest)

``--warm-only``: one run with the usual golden store (warm if an earlier run filled it), no cold
run, no ``-n 2`` run, no census: the harness breakdown alone (about a minute on an idle machine).

Prints, each as a ratio:
- harness share of a warm run: everything but golden (inputs, references, tolerances), the
  backend's own work in its worker and the comparison. Isolation (fork, transfer, bounds) and
  input hashing are harness: backend time is the worker's ``run_s`` for each case;
- golden cold vs warm: the golden time of a run with an empty golden store against a second
  run with the store it filled, overall and per family (GEMM first);
- census vs numpy: ``golden.census`` against a plain numpy tolerance pass
  (``count_nonzero(abs(got - expected) > tol)``) on a 2048 x 32064 float32 output, CPU time;
- ``-n 2`` vs ``-n 0``: wall time of the warm run over the same run under pytest-xdist.

The harness is broken down by phase: start (configuration, plugins, session start), collection,
the items (per item: pytest's protocol and the plugin's hooks, net of golden, backend, compare,
isolation and hashing inside them) and the session's end (results, reports, pytest's clean-up);
isolation and hashing per isolated run.

Each run is a child process (``--child``) with timers around the functions of each category;
a call is charged to the outermost category only. The golden store of the runs is a fresh
temporary folder; the IREE compile cache is the usual one (warm or not, say which).
"""
from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

spent = {"golden": 0.0, "backend": 0.0, "compare": 0.0, "isolation": 0.0, "hashing": 0.0}
# The same categories in this process's CPU time: on a loaded machine wall time is mostly waiting
# for a core, so the harness's own cost shows best as CPU ("run" is run_case's pytest-side CPU:
# isolation's share of it, since the backend works in the worker).
spent_cpu = {"golden": 0.0, "compare": 0.0, "hashing": 0.0, "run": 0.0}
golden_by_family: dict = {}
_active: list[str] = []
_worker_run_s: list = []


def _timed(category, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _active:
            return fn(*args, **kwargs)
        _active.append(category)
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[category] += time.perf_counter() - start
            spent_cpu[category] += time.process_time() - cpu
            _active.pop()
    return wrapper


def _timed_store(fn):
    """Golden time, and each family's share of it."""
    timed = _timed("golden", fn)

    @functools.wraps(fn)
    def cached(kind, case, compute):
        if _active:
            return fn(kind, case, compute)
        start = time.perf_counter()
        try:
            return timed(kind, case, compute)
        finally:
            golden_by_family[case.op] = golden_by_family.get(case.op, 0.0) + time.perf_counter() - start
    return cached


def _always(category, fn):
    """Timed even inside another category (input hashing happens inside run_case)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[category] += time.perf_counter() - start
            spent_cpu[category] += time.process_time() - cpu
    return wrapper


def _timed_run_case(fn):
    """Backend = the worker's own run time; the rest of run_case is isolation (harness)."""
    @functools.wraps(fn)
    def run_case(*args, **kwargs):
        if _active:
            return fn(*args, **kwargs)
        _active.append("run")
        before = len(_worker_run_s)
        hashing, hashing_cpu = spent["hashing"], spent_cpu["hashing"]
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            total = time.perf_counter() - start - (spent["hashing"] - hashing)
            spent_cpu["run"] += time.process_time() - cpu - (spent_cpu["hashing"] - hashing_cpu)
            worker = sum(_worker_run_s[before:]) if len(_worker_run_s) > before else None
            backend = total if worker is None else min(worker, total)   # --isolation none: all backend
            spent["backend"] += backend
            spent["isolation"] += total - backend
            _active.pop()
    return run_case


def _instrument():
    from accel_regress import golden
    import accel_regress.golden.compare
    import accel_regress.golden.inputs
    import accel_regress.golden.store
    import accel_regress.core.runner
    from accel_regress.core.isolation import pool
    from accel_regress.golden.inputs import sha256_of
    for info in pkgutil.iter_modules(golden.__path__):
        if info.name == "store":
            continue
        module = importlib.import_module(f"accel_regress.golden.{info.name}")
        category = "compare" if info.name == "compare" else "golden"
        for name, fn in list(vars(module).items()):
            if inspect.isfunction(fn) and fn.__module__ == module.__name__ and not name.startswith("_"):
                setattr(module, name, _timed(category, fn))
    # Hashing a case's inputs (the run memo's key, handed on to the run) is harness, not golden.
    accel_regress.golden.inputs.sha256_of = _always("hashing", sha256_of)
    accel_regress.golden.store.cached = _timed_store(accel_regress.golden.store.cached)
    # Names imported elsewhere (``from golden import assert_close``) are rebound too.
    golden.assert_close = accel_regress.golden.compare.assert_close
    golden.census = accel_regress.golden.compare.census
    accel_regress.core.runner.sha256_of = _always("hashing", sha256_of)
    accel_regress.core.runner.run_case = _timed_run_case(accel_regress.core.runner.run_case)

    answer = pool.Isolation._answer

    def _answer(self, reply, *args, **kwargs):
        if reply.get("ok") and "run_s" in reply:
            _worker_run_s.append(float(reply["run_s"]))
        return answer(self, reply, *args, **kwargs)
    pool.Isolation._answer = _answer


class _Phases:
    """pytest plugin: when collection, the items and the session's end begin, and how much of
    each category was spent before the items and after them."""

    def __init__(self):
        self.at: dict = {}
        self.cpu: dict = {}      # this process's CPU time at each mark (a loaded machine's wall time lies)
        self.items = 0

    def _mark(self, name: str) -> None:
        self.at[name] = (time.perf_counter(), dict(spent))
        self.cpu[name] = time.process_time()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection(self):
        self._mark("collection")
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        self._mark("items")
        self.items = len(session.items)
        try:
            return (yield)
        finally:
            self._mark("end")


def _phase_times(phases: _Phases, start: float, total: float) -> dict:
    """Seconds of harness per phase: wall time of the phase less the categories spent in it."""
    marks = [("start", start, {k: 0.0 for k in spent})]
    marks += [(name, *phases.at[name]) for name in ("collection", "items", "end") if name in phases.at]
    marks.append(("", start + total, dict(spent)))
    out = {}
    for (name, t, before), (_, t_next, after) in zip(marks, marks[1:]):
        worked = sum(after[k] - before[k] for k in ("golden", "backend", "compare", "isolation", "hashing"))
        out[name] = (t_next - t) - worked
    return out


def child(out: str, args: list[str]) -> int:
    _instrument()
    phases = _Phases()
    start, cpu_start = time.perf_counter(), time.process_time()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--report-dir", str(Path(out).parent / "reports"), *args],
                       plugins=[phases])
    total = time.perf_counter() - start
    cpu_marks = [cpu_start, *(phases.cpu[n] for n in ("collection", "items", "end") if n in phases.cpu),
                 time.process_time()]
    cpu = dict(zip(["start", "collection", "items", "end"], (b - a for a, b in zip(cpu_marks, cpu_marks[1:]))))
    from accel_regress.golden import store
    Path(out).write_text(json.dumps({"total": total, "exit": int(code), "spent": spent,
                                     "golden_by_family": golden_by_family, "store": store.stats,
                                     "phases": _phase_times(phases, start, total), "cpu": cpu,
                                     "spent_cpu": spent_cpu, "items": phases.items,
                                     "runs": len(_worker_run_s)}))
    return 0


def run_child(tmp: Path, name: str, args: list[str], env: dict) -> dict:
    out = tmp / f"{name}.json"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", str(out), *args], env=env, cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - start
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    if not out.is_file():
        raise SystemExit(f"{name} run failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}")
    data = json.loads(out.read_text())
    data["wall"] = wall
    print(f"{name}: {wall:.1f} s wall, pytest exit {data['exit']} ({tail[0]})", flush=True)
    return data


def harness_seconds(d: dict, total: Optional[float] = None) -> float:
    """What is left of ``total`` (default: the seconds in pytest) after golden, backend and compare."""
    return (d["total"] if total is None else total) - sum(d["spent"][k] for k in ("golden", "backend", "compare"))


def shares(d: dict) -> str:
    s = d["spent"]
    total = d["total"]
    harness = harness_seconds(d)
    parts = [("golden", s["golden"]), ("backend", s["backend"]), ("compare", s["compare"]),
             ("harness", harness)]
    lines = [f"  {n:<8} {t:8.2f} s  {100 * t / total:5.1f} %" for n, t in parts]
    lines.append(f"    of harness: isolation {s['isolation']:.2f} s, input hashing {s['hashing']:.2f} s, "
                 f"pytest and plugin {harness - s['isolation'] - s['hashing']:.2f} s")
    ph, items, runs = d.get("phases") or {}, d.get("items") or 0, d.get("runs") or 0
    if ph:
        lines.append(f"    pytest and plugin by phase: start {ph.get('start', 0):.2f} s, collection "
                     f"{ph.get('collection', 0):.2f} s, items {ph.get('items', 0):.2f} s "
                     f"({1000 * ph.get('items', 0) / max(items, 1):.2f} ms per item, {items} items), "
                     f"session end {ph.get('end', 0):.2f} s")
    cpu, sc = d.get("cpu") or {}, d.get("spent_cpu") or {}
    if cpu and sc:
        # Golden, compare and hashing run during the items; what is left of the items' CPU is pytest,
        # the plugin and the pytest side of isolation (the backend works in the worker).
        own = cpu.get("items", 0) - sc["golden"] - sc["compare"] - sc["hashing"]
        lines.append(f"    CPU of the pytest process: golden {sc['golden']:.2f} s, compare {sc['compare']:.2f} s, "
                     f"hashing {sc['hashing']:.2f} s; harness: start {cpu.get('start', 0):.2f} s, collection "
                     f"{cpu.get('collection', 0):.2f} s, items {own:.2f} s ({1000 * own / max(items, 1):.2f} ms per "
                     f"item, of which isolation {1000 * sc['run'] / max(runs, 1):.2f} ms per run), "
                     f"session end {cpu.get('end', 0):.2f} s")
    if runs:
        lines.append(f"    per isolated run ({runs} runs): isolation {1000 * s['isolation'] / runs:.2f} ms, "
                     f"input hashing {1000 * s['hashing'] / runs:.2f} ms")
    return "\n".join(lines)


def census_vs_numpy(rows: int = 2048, cols: int = 32064, repeat: int = 3) -> tuple[float, float]:
    """Prints census / numpy with a plain float32 allowance and with a GEMM error model (the
    statistics on), from one run (benchmarks/bench_census.py); returns (plain census, numpy) CPU s."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_census
    t = bench_census.measure(rows, cols, repeat)
    print(bench_census.report(t, rows, cols), flush=True)
    return t["plain"], t["numpy"]


def warm_only(args: list[str]) -> int:
    """One run with the usual golden store: the harness breakdown alone."""
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        warm = run_child(Path(tmp), "warm", args, {**os.environ, "PYTHONPATH": str(ROOT)})
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    harness = harness_seconds(warm)
    print(f"\nwarm run ({warm['total']:.1f} s in pytest, {warm['wall']:.1f} s wall):\n{shares(warm)}")
    print(f"  harness share of the warm run:  {harness / warm['total']:.3f}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):     # its own help; pytest's is `--help` after other arguments
        print(__doc__)
        return 0
    parallel = "--no-parallel" not in argv
    if "--warm-only" in argv:
        return warm_only([a for a in argv if a != "--warm-only"] or ["tests", "--ignore=tests/selftest"])
    args = [a for a in argv if a != "--no-parallel"] or ["tests", "--ignore=tests/selftest"]
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    full, plain = census_vs_numpy()
    with tempfile.TemporaryDirectory(prefix="bench-golden-") as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "ACCEL_GOLDEN_CACHE": str(tmp / "golden"), "PYTHONPATH": str(ROOT)}
        cold = run_child(tmp, "cold", args, env)
        warm = run_child(tmp, "warm", args, env)
        par = run_child(tmp, "warm -n 2", [*args, "-n", "2"], env) if parallel else None
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    print(f"\nwarm run ({warm['total']:.1f} s in pytest):\n{shares(warm)}")
    print(f"cold run ({cold['total']:.1f} s in pytest):\n{shares(cold)}")
    s_cold, s_warm = cold["spent"]["golden"], warm["spent"]["golden"]
    print("\nratios")
    harness = harness_seconds(warm)
    print(f"  harness share of the warm run:  {harness / warm['total']:.3f}")
    print(f"  golden cold / warm:             {s_cold / max(s_warm, 1e-9):.1f}x "
          f"({s_cold:.2f} s / {s_warm:.2f} s)")
    for fam in sorted(cold["golden_by_family"], key=lambda f: (f != "gemm_partition_n", f)):
        c, w = cold["golden_by_family"][fam], warm["golden_by_family"].get(fam, 0.0)
        print(f"    {fam:<22} {c / max(w, 1e-9):8.1f}x ({c:.2f} s / {w:.2f} s)")
    print(f"  warm run / cold run (wall):     {warm['wall'] / cold['wall']:.2f}")
    print(f"  census / numpy pass (CPU):      {full / plain:.2f} ({full:.3f} s / {plain:.3f} s, 2048 x 32064 float32)")
    if par:
        print(f"  -n 0 / -n 2 (wall, speed-up):   {warm['wall'] / par['wall']:.2f}")
    print(f"  golden store: cold {cold['store']}, warm {warm['store']}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(child(sys.argv[2], sys.argv[3:]))
    sys.exit(main(sys.argv[1:]))
