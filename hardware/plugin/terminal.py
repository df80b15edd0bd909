"""What the run prints at its end (hardware/results/summary.py): the gate's verdict, the family x backend
table, backends not run and why, the SKIPs that matter, the problems with their rerun lines, and
where the reports are. ``-q``: one line (the verdict, the counts, where the reports are); ``-qq``:
nothing. A session that is not the plugin's prints nothing (it has no results)."""
from __future__ import annotations

from pathlib import Path

import pytest



@pytest.hookimpl(wrapper=True, tryfirst=True)   # outermost: after pytest's short summary, so last
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    yield
    from accel_regress.plugin import recording
    data = recording.finished_data(config)
    verbosity = config.get_verbosity()
    if data is None or verbosity <= -2:
        return
    from accel_regress.results import summary
    from accel_regress.plugin import reports     # registered: the session engaged
    verdict = reports.verdict(config)
    tr = terminalreporter
    results_json = Path(config.getoption("report_dir")) / "results.json"
    if verbosity == -1:
        tr.write_line(one_line(data, verdict, results_json))
        return
    tr.section("accel-regress summary")
    # The gate's verdict first (hardware/plugin/reports.py computed it), then the tables.
    for line in summary.section(data, verdict):
        tr.write_line(line)
    if not data["session"].get("complete", True):
        tr.write_line(f"results.json is incomplete: {data['session'].get('stop_reason', 'the session stopped early')}")
    tr.write_line(f"reports: {results_json}" + (f", {config.option.xmlpath}" if config.option.xmlpath else ""))


def one_line(data: dict, verdict, results_json: Path) -> str:
    """The summary in one line, for ``-q``: the gate's verdict, verdict counts, results.json."""
    counts: dict[str, int] = {}
    for case in data.get("cases") or []:
        counts[case["verdict"]] = counts.get(case["verdict"], 0) + 1
    head = "; ".join((verdict.lines() if verdict is not None else []))
    told = ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "no cases"
    incomplete = "" if data["session"].get("complete", True) else " (incomplete)"
    return f"accel-regress: {head + ': ' if head else ''}{told}{incomplete}; {results_json}"
