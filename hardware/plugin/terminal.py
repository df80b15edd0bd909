"""What the run prints at its end (hardware/results/summary.py): the gate's verdict, the family x backend
table, backends not run and why, the SKIPs that matter, the problems with their rerun lines, and
where the reports are. ``-q``: one line (the verdict, the counts, where the reports are); ``-qq``:
nothing. A session that is not the plugin's prints nothing (it has no results)."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_regress.util.escape import term_text


@pytest.hookimpl(wrapper=True, tryfirst=True)   # outermost: after pytest's short summary, so last
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from accel_regress.plugin import recording
    data = recording.finished_data(config)
    hidden = _hide_own_skips(terminalreporter, data)
    try:
        yield
    finally:
        if hidden:      # back before pytest's last line counts them ("N skipped")
            terminalreporter.stats.setdefault("skipped", []).extend(hidden)
    verbosity = config.get_verbosity()
    if data is None or verbosity <= -2:
        return
    from accel_regress.results import summary
    from accel_regress.plugin import reports     # registered: the session engaged
    verdict = reports.verdict(config)
    results_json = Path(config.getoption("accel_report_dir")) / "results.json"

    def say(line: str) -> None:     # test ids, messages, revisions: the run's words, inert (issue 47 S3)
        terminalreporter.write_line(term_text(line))
    if verbosity == -1:
        say(one_line(data, verdict, results_json))
        return
    terminalreporter.section("accel-regress summary")
    # The gate's verdict first (hardware/plugin/reports.py computed it), then the tables.
    for line in summary.section(data, verdict):
        say(line)
    if not data["session"].get("complete", True):
        say(f"results.json is incomplete: {data['session'].get('stop_reason', 'the session stopped early')}")
    say(f"reports: {results_json}" + (f", {config.option.xmlpath}" if config.option.xmlpath else ""))


def _hide_own_skips(tr, data) -> list:
    """pytest's short summary (``-ra``) folds SKIPs by source line and reason: for the suite's own
    cases that is the same SKIPs again, split by line number and by every number in a message.
    Ours says them once, by rule; pytest's own summary keeps every other test's. pytest builds it
    from ``TerminalReporter.stats["skipped"]`` in ``short_test_summary``, which its
    ``pytest_terminal_summary`` wrapper calls after its yield (_pytest/terminal.py, pytest 9.0), so
    this outermost wrapper takes them out before and puts them back after."""
    if data is None or not tr.stats.get("skipped"):
        return []
    from accel_regress.core import registry
    families = registry.registrations("family")
    ours = {c["nodeid"] for c in data.get("cases") or [] if c["verdict"] in ("SKIP", "NOT_APPLICABLE")
            and (c.get("backend") or c.get("family") in families)}
    hidden = [r for r in tr.stats["skipped"] if getattr(r, "nodeid", None) in ours]
    if hidden:
        tr.stats["skipped"] = [r for r in tr.stats["skipped"] if getattr(r, "nodeid", None) not in ours]
    return hidden


def one_line(data: dict, verdict, results_json: Path) -> str:
    """The summary in one line, for ``-q``: the gate's verdict, verdict counts, results.json."""
    counts: dict[str, int] = {}
    for case in data.get("cases") or []:
        counts[case["verdict"]] = counts.get(case["verdict"], 0) + 1
    head = "; ".join((verdict.lines() if verdict is not None else []))
    told = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "no cases"
    incomplete = "" if data["session"].get("complete", True) else " (incomplete)"
    return f"accel-regress: {head + ': ' if head else ''}{told}{incomplete}; {results_json}"
