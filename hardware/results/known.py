"""Known bugs for scripts outside pytest (the repros): the expectations entry that holds for a case.

A repro names each case by the node id of the test that checks it (``tests/test_x.py::test_y[ID]``,
without the backend), reads ``expectations/<backend>.toml`` as the pytest plugin does
(accel_regress/results/expectations.py) and judges a row as a session would: a listed bug that
happens as listed is known (the run is not failed by it), one that no longer happens is XPASS.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from accel_regress.results.expectations import Entry, Expectations, ExpectationsError, load_dir

REPO_EXPECTATIONS = Path(__file__).resolve().parents[2] / "expectations"
_loaded: dict[Path, Expectations] = {}


def expectations(directory: Optional[Path] = None) -> Expectations:
    """The expectations in ``directory`` (default: the checkout's expectations/; none there: no entries)."""
    directory = Path(directory or REPO_EXPECTATIONS)
    if directory not in _loaded:
        try:
            _loaded[directory] = load_dir(directory)
        except ExpectationsError:
            _loaded[directory] = Expectations()
    return _loaded[directory]


def entry_for(backend: str, nodeid: str, versions: Optional[dict] = None,
              directory: Optional[Path] = None) -> Optional[Entry]:
    return expectations(directory).match(backend, nodeid, versions)


def judged(verdict: str, entry: Optional[Entry]) -> str:
    """A row's verdict in a session's words: a listed bug as listed is XFAIL, a listed bug that
    passed is XPASS; anything else stays as it is."""
    if entry is None or verdict in ("SKIP", "NOT_APPLICABLE"):
        return verdict
    if verdict == entry.verdict:
        return "XFAIL"
    return "XPASS" if verdict == "PASS" else verdict
