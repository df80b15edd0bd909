"""The report part of the pytest plugin: saves the ratio map of every census failure while the
arrays are at hand, and writes summary.md / index.html / heatmaps / CSV / pr-comment.md when the
session ends, each opening with the gate's verdict for the run (``--gate-policy``,
``--gate-baseline``: the same inputs ``python -m accel_regress gate`` takes). A run with an injected
fault says so in the terminal's header line too.

The ratio map is taken from the compared arrays a ``accel_regress.golden.compare.Mismatch`` carries
(``exc.arrays``), block-maxed down to at most 256 x 512 and saved with np.save
(allow_pickle=False) into <report-dir>/arrays/; the record's detail['heatmap'] points at it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import pytest

from accel_regress.results.report_dir import clear_own
from accel_regress.results.report import heatmap
from accel_regress.core import harness_files, own_folder
from accel_regress.results.report.tables import slug

_MAP = pytest.StashKey[dict]()
_DONE = pytest.StashKey[bool]()
_PLAIN_MARKS = {"parametrize", "usefixtures", "filterwarnings", "skip", "skipif", "xfail", "family", "timeout"}
MAX_MAPS_PER_SESSION = 200     # per xdist worker


@dataclass
class Reports:
    """This session's report inputs and what was written."""
    policy: Any = None            # --gate-policy, loaded
    baseline: Optional[dict] = None   # --gate-baseline, loaded
    maps_saved: int = 0           # ratio maps saved (at most MAX_MAPS_PER_SESSION)
    finished: bool = False        # the reports were written (or tried): once per session
    verdict: Any = None           # the gate's verdict on the run (accel_regress.results.gate)
    written: Optional[dict] = None    # what write_all wrote


_REPORTS = pytest.StashKey[Reports]()


def _state(config) -> Reports:
    return config.stash.setdefault(_REPORTS, Reports())


def verdict(config):
    """The gate's verdict on this session's run, once its reports are written (None before)."""
    return config.stash[_REPORTS].verdict if _REPORTS in config.stash else None


def _report_dir(config) -> Path:
    return Path(config.getoption("accel_report_dir"))


# Its options (--gate-policy, --gate-baseline) are declared with the core's (plugin/options.py): this
# plugin is registered only once a session is the plugin's (plugin/engagement.py).


def pytest_configure(config):
    from accel_regress.results import gate, record as results
    state = config.stash[_REPORTS] = Reports()
    try:
        policy = config.getoption("accel_gate_policy")
        baseline = config.getoption("accel_gate_baseline")
        state.policy = gate.load_policy(Path(policy)) if policy else None
        state.baseline = results.load(Path(baseline)) if baseline else None
    except (gate.PolicyError, results.ResultsError) as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(trylast=True)     # after pytest's own "test session starts" header
def pytest_sessionstart(session):
    """A run with an injected fault says so before anything else (whatever the verbosity); a new
    session's report dir starts without the last session's arrays and heatmaps."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    fault = config.getoption("accel_inject_fault", None)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if fault and tr is not None:
        from accel_regress.results.gate import fault_banner
        tr.write_line(fault_banner({"session": {"fault": fault}}), red=True, bold=True)
    if config.option.collectonly:
        return    # --collect-only leaves the last run's reports alone
    clear_own(_report_dir(config), (("arrays", "*.npy"), ("heatmaps", "*.png")))


def _mismatch(exc: Optional[BaseException]):
    from accel_regress.golden.compare import Mismatch
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, Mismatch):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _arrays(exc) -> Optional[tuple]:
    """(got, expected, atol, rtol, tol) of a Mismatch."""
    arrays = getattr(exc, "arrays", None)
    if not isinstance(arrays, dict) or "got" not in arrays or "expected" not in arrays:
        return None
    return (arrays["got"], arrays["expected"], arrays.get("atol", 0.0), arrays.get("rtol", 0.0), arrays.get("tol"))


def _save_map(item, exc) -> Optional[dict]:
    state = _state(item.config)
    if state.maps_saved >= MAX_MAPS_PER_SESSION:
        return None
    found = _arrays(exc)
    if found is None:
        return None
    got, expected, atol, rtol, tol = found
    result = heatmap.ratio_map(got, expected, atol=atol, rtol=rtol, tol=tol)
    if result is None:
        return None
    rel = f"arrays/{slug({'nodeid': item.nodeid})}.npy"
    try:
        own_folder.own_subdir(_report_dir(item.config), "arrays")      # never written through a planted link
    except OSError:
        return None
    heatmap.save(_report_dir(item.config) / rel, result["ratio"])
    state.maps_saved += 1
    return {"array": rel, "shape": result["shape"], "block": result["block"],
            "name": getattr(getattr(exc, "census", None), "name", "output")}


def _markers(item) -> list[str]:
    return sorted({m.name for m in item.iter_markers()} - _PLAIN_MARKS)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.excinfo is not None and _MAP not in item.stash:
        exc = _mismatch(call.excinfo.value)
        if exc is not None:
            try:
                info = _save_map(item, exc)
            except Exception as err:      # a report aid must never cost a result
                info = {"error": f"{type(err).__name__}: {err}"}
            if info:
                item.stash[_MAP] = info
    return report


def apply_record(item, record: dict) -> None:
    if item.stash.get(_DONE, False):
        return
    item.stash[_DONE] = True
    detail = record.setdefault("detail", {})
    detail["markers"] = _markers(item)
    info = item.stash.get(_MAP, None)
    if info and "array" in info:
        detail["heatmap"] = info


def pytest_accel_regress_record(item, record):
    apply_record(item, record)


def session_finished(config, data, report_dir) -> None:
    state = _state(config)
    if state.finished:
        return
    state.finished = True
    from accel_regress.plugin import expectations
    from accel_regress.results import gate
    from accel_regress.results.report import write_all
    state.verdict = gate.evaluate(data, state.baseline, state.policy)
    try:
        junit = config.option.xmlpath and Path(config.option.xmlpath).resolve() == (Path(report_dir) / "junit.xml").resolve()
        state.written = write_all(data, Path(report_dir), expectations=expectations.summary(config),
                                  verdict=state.verdict, baseline=state.baseline,
                                  pending=("junit.xml",) if junit else ())
    except Exception as exc:   # results.json is already written; say what went wrong and go on
        print(f"accel-regress: writing reports failed: {type(exc).__name__}: {exc}", file=sys.stderr)


@pytest.hookimpl(wrapper=True, trylast=True)      # inside pytest's own wrappers: its summary still prints
def pytest_sessionfinish(session, exitstatus):
    """pytest's junitxml writes junit.xml last: a report folder that is full or read-only by then is
    one line and exit 3 (a record that is not whole), never pytest's traceback and exit 1 (issue 47
    defect 13)."""
    try:
        return (yield)
    except OSError as exc:
        if exc.errno not in harness_files.NO_ROOM:
            raise
        if session.exitstatus != pytest.ExitCode.INTERNAL_ERROR:    # else the record's own line said it
            where = exc.filename or session.config.option.xmlpath or "the reports"
            print(f"accel-regress: cannot write {where}: {exc.strerror}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
        return None


@pytest.hookimpl(trylast=True)        # after expectations.json is written
def pytest_accel_regress_session_finished(config, data, report_dir):
    session_finished(config, data, report_dir)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    written = _state(config).written
    if written and config.get_verbosity() >= 0:
        terminalreporter.write_line(f"report: {written['index']} ({len(written['heatmaps'])} heatmap(s)), "
                                    f"{written['summary']}")
