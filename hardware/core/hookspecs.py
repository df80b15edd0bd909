"""Hooks the accel-regress plugin calls, so features (expectations, isolation, reports) plug in
without editing the core plugin. Their names start with ``pytest_`` because pytest registers
only implementations so named."""
import pluggy

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_accel_regress_record(item, record: dict) -> None:
    """Called once per test, at teardown, with its finished result record (a dict in the
    results.json 'cases' schema, verdict already set). Implementations may change it in place,
    e.g. turn FAIL into XFAIL. Runs where the test ran (an xdist worker or the only process)."""


@hookspec
def pytest_accel_regress_session_finished(config, data: dict, report_dir) -> None:
    """Called once, in the controller process, after results.json was written; ``data`` is its
    content. Report writers (markdown, html, heatmaps) hook here."""
