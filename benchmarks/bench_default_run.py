#!/usr/bin/env python3
"""Where the default run's time goes: golden (inputs, references, tolerances), backend runs,
comparison, and the harness itself, as shares of the whole.

    python benchmarks/bench_default_run.py [pytest args...]   (default: tests --ignore=tests/selftest)

Runs pytest in this process with timers around the functions of each category; a call is
charged to the outermost category only (an emu model calling golden.dtypes is backend time).
Everything else inside the session (collection, fixtures, plugin, reports) is harness.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

spent = {"golden": 0.0, "backend": 0.0, "compare": 0.0}
_active: list[str] = []


def _timed(category, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _active:
            return fn(*args, **kwargs)
        _active.append(category)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[category] += time.perf_counter() - start
            _active.pop()
    return wrapper


def _instrument():
    import golden
    import golden.compare
    import hardware.runner
    for info in pkgutil.iter_modules(golden.__path__):
        module = importlib.import_module(f"golden.{info.name}")
        category = "compare" if info.name == "compare" else "golden"
        for name, fn in list(vars(module).items()):
            if inspect.isfunction(fn) and fn.__module__ == module.__name__ and not name.startswith("_"):
                setattr(module, name, _timed(category, fn))
    # Names imported elsewhere (``from golden import assert_close``) are rebound too.
    golden.assert_close = golden.compare.assert_close
    golden.census = golden.compare.census
    hardware.runner.run_case = _timed("backend", hardware.runner.run_case)


def main(argv: list[str]) -> int:
    import pytest
    _instrument()
    args = argv or ["tests", "--ignore=tests/selftest"]
    start = time.perf_counter()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--report-dir", "reports/bench", *args])
    total = time.perf_counter() - start
    harness = total - sum(spent.values())
    print(f"\nwall time of the run: {total:.2f} s (pytest exit {int(code)})")
    for name, t in [*spent.items(), ("harness", harness)]:
        print(f"  {name:<8} {t:8.2f} s  {100 * t / total:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
