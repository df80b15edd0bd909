"""pytest sessions run inside this process (issue 51), for selftests that start many.

A `python -m pytest` subprocess spends most of its time importing (the plugin, torch for the torch
devices' recorded versions, IREE's runtime) before its first case. In-process, a session goes through
the same plugin, backends, isolated workers and results files, on modules this process imported
once. What a test needs of a separate process (a signal, a bounded address space, a killed pytest)
stays a subprocess."""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import warnings
from pathlib import Path
from typing import NamedTuple, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]


class Session(NamedTuple):
    rc: int
    out: str                      # what the session printed (stdout and stderr), for a test's message
    cases: Optional[list]         # results.json's cases; None where the session wrote none


def run(cwd: Path, *args: str, report_dir: Optional[Path] = None) -> Session:
    """``python -m pytest -p no:cacheprovider *args`` (``--report-dir report_dir`` where given) in
    ``cwd``. Modules the session imported stay imported (IREE's runtime or psycopg imported anew
    is not the same extension) except the test files and conftests it collected, top-level modules
    from under ``cwd`` that a next session's files of the same name would clash with; sys.path and
    the working directory are put back."""
    argv = ["-p", "no:cacheprovider", *args] + (["--report-dir", str(report_dir)] if report_dir else [])
    old_cwd, old_path, before, out = os.getcwd(), list(sys.path), set(sys.modules), io.StringIO()
    os.chdir(cwd)
    try:
        # A warning the session's plugins raise outside its tests (pytest-benchmark's under xdist)
        # is its output, not this test's.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
                warnings.catch_warnings(record=True) as raised:
            warnings.simplefilter("always")
            rc = int(pytest.main(argv))
        out.writelines(f"{w.category.__name__}: {w.message}\n" for w in raised)
    finally:
        os.chdir(old_cwd)
        sys.path[:] = old_path
        root = str(Path(cwd).resolve()) + os.sep
        for name in set(sys.modules) - before:
            if "." not in name and str(getattr(sys.modules[name], "__file__", None) or "").startswith(root):
                del sys.modules[name]
    results = Path(report_dir or Path(cwd) / "reports") / "results.json"
    cases = json.loads(results.read_text())["cases"] if results.is_file() else None
    return Session(rc, out.getvalue(), cases)


def run_suite(report_dir: Path, *args: str) -> Session:
    """A session of the suite itself (``tests/...`` from the repository root), ``-q``; it must write
    its results.json."""
    session = run(REPO, *args, "-q", report_dir=report_dir)
    assert session.cases is not None, f"no results.json from pytest {' '.join(args)}:\n{session.out[-3000:]}"
    return session
