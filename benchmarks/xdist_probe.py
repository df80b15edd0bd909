"""A pytest plugin for benchmarks/bench_xdist.py (``-p xdist_probe``, benchmarks/ on PYTHONPATH).

Every pytest process it is loaded into (the only one under ``-n 0``; the controller and each
worker under xdist) writes ``$BENCH_XDIST_DIR/<role>-<pid>.json`` when it ends: when the process
started, when pytest configured and finished collecting, its own CPU seconds at that point
(startup and collection), when its first test began and its last one ended, how many tests it
ran, how many module-scoped configurations it set up, and how long it waited on golden-store
locks (golden/store.py: a worker waits there while another computes the same golden).
"""
from __future__ import annotations

import atexit
import json
import os
import time
from pathlib import Path

_t: dict = {}
_tests = {"n": 0, "first": None, "last": None}
_lock_wait = {"s": 0.0, "n": 0}
_setups: set = set()


def _process_start() -> float:
    """Wall-clock time this process started (/proc: boot time + start ticks)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        btime = next(int(ln.split()[1]) for ln in Path("/proc/stat").read_text().splitlines()
                     if ln.startswith("btime"))
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return float("nan")


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _descendants_cpu() -> float:
    """CPU seconds of this process's children: those already reaped, plus the live ones (the
    isolation fork server and its worker) and their own live children, read from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, stats = {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = d.joinpath("stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(f[1]), []).append(int(d.name))
        stats[int(d.name)] = (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / tick   # own + reaped children
    total, todo = 0.0, list(parents.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += stats.get(pid, 0.0)
        todo += parents.get(pid, [])
    t = os.times()
    return total + t.children_user + t.children_system


def _role(config) -> str:
    if hasattr(config, "workerinput"):
        return config.workerinput["workerid"]
    return "controller" if getattr(config.option, "dist", "no") != "no" else "single"


def pytest_configure(config):
    _t["start"] = _process_start()
    _t["configure"] = time.time()
    _t["cpu_configure"] = _cpu()
    try:
        from accel_regress.golden import store
    except ImportError:
        return
    lock = getattr(store, "_lock", None)
    if lock is None:
        return

    def timed_lock(*args, **kwargs):
        start = time.perf_counter()
        try:
            return lock(*args, **kwargs)
        finally:
            _lock_wait["s"] += time.perf_counter() - start
            _lock_wait["n"] += 1
    store._lock = timed_lock


def pytest_collection_finish(session):
    _t["collected"] = time.time()
    _t["cpu_collected"] = _cpu()
    _t["items"] = len(session.items)


def pytest_runtest_logstart(nodeid, location):
    _tests["first"] = _tests["first"] or time.time()


def pytest_runtest_setup(item):
    cs = getattr(item, "callspec", None)
    if cs is not None:
        # a module's configuration: the module-scoped parameters other than the backend
        _setups.add((item.module.__name__, tuple(sorted((k, repr(v)) for k, v in cs.params.items() if k != "hw"))))


def pytest_runtest_logfinish(nodeid, location):
    _tests["n"] += 1
    _tests["last"] = time.time()


def pytest_unconfigure(config):
    out = os.environ.get("BENCH_XDIST_DIR")
    if not out:
        return
    try:
        from accel_regress.golden import store
        stats = dict(store.stats)
    except ImportError:
        stats = {}
    doc = {"role": _role(config), "pid": os.getpid(), **_t, "end": time.time(), "cpu_end": _cpu(),
           "cpu_children": _descendants_cpu(),
           "tests": _tests["n"], "first_test": _tests["first"], "last_test": _tests["last"],
           "configurations": len(_setups), "lock_wait_s": _lock_wait["s"], "locks": _lock_wait["n"],
           "golden": stats}
    path = Path(out, f"{doc['role']}-{os.getpid()}.json")
    path.write_text(json.dumps(doc))

    def at_exit():
        path.write_text(json.dumps({**doc, "atexit": time.time()}))
    atexit.register(at_exit)
