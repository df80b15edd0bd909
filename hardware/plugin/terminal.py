"""What the run prints at its end (hardware/results/summary.py): the gate's verdict, the family x backend
table, backends not run and why, the SKIPs that matter, the problems with their rerun lines, and
where the reports are."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_regress.results import summary


@pytest.hookimpl(wrapper=True, tryfirst=True)   # outermost: after pytest's short summary, so last
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    yield
    data = getattr(config, "_accel_data", None)
    if data is None:
        return
    tr = terminalreporter
    tr.section("accel-regress summary")
    # The gate's verdict first (hardware/results/report/plugin.py computed it), then the tables.
    for line in summary.section(data, getattr(config, "_accel_gate", None)):
        tr.write_line(line)
    if not data["session"].get("complete", True):
        tr.write_line(f"results.json is incomplete: {data['session'].get('stop_reason', 'the session stopped early')}")
    tr.write_line(f"reports: {Path(config.getoption('report_dir')) / 'results.json'}, {config.option.xmlpath}")
