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


@hookspec
def pytest_accel_regress_engaged(config) -> None:
    """Called once per session, when it turns out to be the plugin's (accel_regress/plugin/engagement.py):
    at its start when it was plainly meant for the plugin, else with the first item of the plugin's
    (in an xdist controller: the first result record). Session work (the fork server, the results
    sink, signal handlers) starts here, so that a project that never uses the plugin gets none of it."""
