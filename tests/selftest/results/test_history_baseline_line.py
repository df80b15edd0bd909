"""Issue 47 defect 4: ``gate --baseline history`` took each device's previous run from any project,
branch or import: one imported run of another project, holding the same FAIL and HANG, turned a
real FAIL and a real HANG into SHIP under ``pre_existing_block = false``. The baseline has the
flakiness evidence's provenance (the same project's and branch's sessions; imports only with
``--flaky-imports``), or there is none, and the gate says so. And (S3) a stored run's revision,
which the gate names as its baseline, reaches the terminal inert.
"""
from __future__ import annotations

import pytest

from accel_regress.results.history.store import History

from test_history_evidence import BRANCH, PROJECT, results, write   # the same records as the evidence tests

PLAN = {"c1": "PASS", "c2": "FAIL", "c3": "HANG"}


@pytest.fixture
def history(tmp_path):
    return str(tmp_path / "history.sqlite")


@pytest.fixture
def lenient(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text("[failures]\npre_existing_block = false\n")
    return path


def _gate(capsys, *argv) -> tuple[int, str]:
    from accel_regress.results import gate
    code = gate.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def _store(location, data, entry):
    h = History(location)
    try:
        h.ingest(data, entry=entry)
    finally:
        h.close()


@pytest.mark.parametrize("other, entry", [({"project": "someone-else"}, "import"), ({"branch": "experiment"}, "session"),
                                          ({}, "import")],
                         ids=["another-projects-import", "another-branchs-session", "this-lines-import"])
def test_a_run_of_another_line_is_no_baseline(history, tmp_path, capsys, lenient, other, entry):
    _store(history, results(1, PLAN, **other), entry)
    now = write(tmp_path / "now.json", results(30, PLAN))
    code, out = _gate(capsys, now, "--baseline", "history", "--history", history, "--policy", lenient)
    assert code == 1, out
    assert f"no baseline: the history {history} holds no earlier sessions of project {PROJECT}, branch {BRANCH}" in out
    assert "1 new hang/crash: HANG" in out and "1 failure(s) not in the known-bug list: FAIL" in out, out


def test_this_lines_session_is_the_baseline_and_named(history, tmp_path, capsys, lenient):
    _store(history, results(1, PLAN, project="someone-else"), "import")
    _store(history, results(2, PLAN, revision="rev-line"), "session")
    _store(history, results(3, {"c1": "PASS", "c2": "PASS", "c3": "PASS"}, branch="experiment"), "session")
    now = write(tmp_path / "now.json", results(30, PLAN))
    code, out = _gate(capsys, now, "--baseline", "history", "--history", history, "--policy", lenient)
    # The same FAIL and HANG in this line's previous session: pre-existing, which this policy lets ship.
    assert code == 0, out
    assert f"baseline from the history {history} (sessions of project {PROJECT}, branch {BRANCH}): " in out
    assert "rev rev-line" in out and "2 failure(s) also in the baseline" in out, out


def test_a_stored_revision_is_printed_inert(history, tmp_path, capsys):
    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]8;;http://x.invalid/\x07r"
    _store(history, results(2, {"c1": "PASS"}, revision=evil), "session")
    now = write(tmp_path / "now.json", results(30, {"c1": "PASS"}))
    code, out = _gate(capsys, now, "--baseline", "history", "--history", history)
    assert code == 0, out
    assert "\x1b" not in out and "\x07" not in out
    assert "rev \\x1b]52;c;Z" in out, out
