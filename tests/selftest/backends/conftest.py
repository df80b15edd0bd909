"""The suite's own sessions, run inside this process (issue 51).

A `python -m pytest tests/...` subprocess spends most of its time importing (the plugin, torch for
the torch devices' recorded versions, IREE's runtime) before its first case; these tests start a
dozen sessions each, to show a fault is caught by a real session. Run in-process they go through
the same plugin, backends, isolated workers and results.json, on modules this process imported once.
Faults act on a run's outputs only (hardware/core/faults.py), so nothing of one session's fault
reaches the next."""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[3]


class Session(NamedTuple):
    rc: int
    out: str          # what the session printed, for a failing test's message
    cases: list       # results.json's cases


def run_suite(report_dir: Path, *args: str) -> Session:
    """``python -m pytest *args --report-dir report_dir -p no:cacheprovider -q`` from the repository
    root, in this process. The suite's test modules stay imported (a module of IREE's runtime
    or torch imported anew after being dropped is not the same extension); sys.path and the working
    directory are put back."""
    argv = [*args, "--report-dir", str(report_dir), "-p", "no:cacheprovider", "-q"]
    cwd, path, out = os.getcwd(), list(sys.path), io.StringIO()
    os.chdir(REPO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = int(pytest.main(argv))
    finally:
        os.chdir(cwd)
        sys.path[:] = path
    results = report_dir / "results.json"
    assert results.is_file(), f"no results.json from pytest {' '.join(argv)}:\n{out.getvalue()[-3000:]}"
    return Session(rc, out.getvalue(), json.loads(results.read_text())["cases"])


@pytest.fixture(scope="session")
def suite_session():
    return run_suite
