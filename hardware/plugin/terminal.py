"""What the run prints at its end: the family x backend table, backends not run and why, the
problems, and where the reports are."""
from __future__ import annotations

from pathlib import Path

import pytest

from hardware import summary


@pytest.hookimpl(wrapper=True, tryfirst=True)   # outermost: after pytest's short summary, so last
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    yield
    data = getattr(config, "_accel_data", None)
    if data is None:
        return
    tr = terminalreporter
    tr.section("accel-regress summary")
    if data["summary"]:
        for line in summary.table(data["summary"]):
            tr.write_line(line)
    else:
        tr.write_line("no cases ran")
    missing = [(n, b["reason"]) for n, b in data["backends"].items() if b["selected"] and not b["available"]]
    for name, reason in missing:
        tr.write_line(f"not run on {name}: {reason}")
    bad = summary.problems(data["cases"])
    if bad:
        tr.write_line("")
        for line in bad:
            tr.write_line(line)
    if not data["session"].get("complete", True):
        tr.write_line(f"results.json is incomplete: {data['session'].get('stop_reason', 'the session stopped early')}")
    tr.write_line(f"reports: {Path(config.getoption('report_dir')) / 'results.json'}, {config.option.xmlpath}")
