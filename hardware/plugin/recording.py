"""One result record per suite case (a test that uses ``hw``): its verdict, stage, census and runs;
results.jsonl as cases finish and results.json at the end (hardware/results/record.py); cases that were
running when the session stopped are recorded as INTERRUPTED."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from accel_regress.core import verdicts
from accel_regress.results import report_dir
from accel_regress.util.escape import term_text
from accel_regress.util import strict_json
from accel_regress.core.errors import HarnessError, SetupError, VerdictError
from accel_regress.plugin import engagement, isolation, selection, spelling
from accel_regress.plugin.fixtures import NOT_APPLICABLE

if TYPE_CHECKING:
    from accel_regress.core import runner

_RECORD = pytest.StashKey[dict]()
PROP = "accel_regress"      # the JUnit property that carries a case's record, as JSON


class Recorder:
    """The records of one session (per xdist worker, and the controller's results.json). Registered
    as a plugin of its session: the hooks that report a test's start and end get no config."""

    def __init__(self, config):
        self.config = config
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.current: Optional[dict] = None     # the record of the case running in this process
        self.started: dict[str, float] = {}     # node id -> start time, of cases not finished yet
        self.finished = 0                       # tests (suite cases or not) that reached their teardown
        self.sink = None                        # accel_regress.results.record.Sink, where records go
        self.data: Optional[dict] = None        # results.json's content once the session finished

    def observe(self, run: runner.Run) -> None:
        if self.current is not None and all(r is not run for r in self.current["_runs"]):
            self.current["_runs"].append(run)

    def pytest_runtest_logstart(self, nodeid, location):
        self.started[nodeid] = time.time()

    def pytest_runtest_logreport(self, report):
        if report.when != "teardown":
            return
        self.finished += 1
        self.started.pop(report.nodeid, None)
        for key, value in report.user_properties:
            if key == PROP:
                engagement.engage(self.config)      # an xdist controller learns it from its workers' records
                if self.sink is not None:
                    self.sink.add(strict_json.loads(value))

    @pytest.hookimpl(optionalhook=True)      # pytest-xdist's: a worker process died while it ran a case
    def pytest_handlecrashitem(self, crashitem, report, sched):
        start = self.started.pop(crashitem, None)
        self.finished += 1
        if self.sink is None:
            return
        rec = _bare_record(crashitem)
        rec.update(verdict=verdicts.CRASH, stage="run",
                   message=f"{report.longrepr}: the pytest-xdist worker process died (SIGKILL, the OOM killer, "
                           f"os._exit ...) while it ran this case",
                   duration_s=round(time.time() - start, 4) if start else None)
        self.sink.add(rec)

    def pytest_collectreport(self, report):
        """A test file that cannot be collected is a record (``--continue-on-collection-errors`` goes on
        without it): a FAIL at stage collect, never a silent gap in the matrix."""
        if not report.failed or self.sink is None:
            return
        nodeid = report.nodeid or "."
        text = str(report.longrepr or "").strip().splitlines()
        self.sink.add({**_bare_record(nodeid), "test": Path(nodeid.split("::")[0]).name or nodeid,
                       "family": Path(nodeid.split("::")[0]).stem or None, "verdict": verdicts.FAIL,
                       "stage": "collect", "message": "collection error: " + "\n".join(text[-20:]),
                       "duration_s": 0.0})


_RECORDER = pytest.StashKey[Recorder]()


def recorder(config) -> Recorder:
    return config.stash[_RECORDER]


def sink(config):
    """Where this session's records go (an accel_regress.results.record.Sink; None: none, e.g. an
    xdist worker, --collect-only, or a session that is not the plugin's)."""
    rec_of = config.stash.get(_RECORDER, None)
    return rec_of.sink if rec_of is not None else None


def finished_data(config) -> Optional[dict]:
    """results.json's content once this session finished writing it (None: not the plugin's session)."""
    rec_of = config.stash.get(_RECORDER, None)
    return rec_of.data if rec_of is not None else None


def pytest_configure(config):
    config.stash[_RECORDER] = Recorder(config)
    config.pluginmanager.register(config.stash[_RECORDER], "accel-regress-recording")


def pytest_accel_regress_engaged(config):
    isolation.context(config).observer = recorder(config).observe
    if not isolation.is_worker(config) and not config.option.collectonly:
        _open_sink(config)   # --collect-only writes no reports and leaves the last run's alone


def _new_record(item) -> dict:
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("hw") if callspec else None
    fam = item.get_closest_marker("family")
    # A test on no backend (a harness check) is a result too, under its family, else its file's name.
    family = fam.args[0] if fam else ("selftest" if item.get_closest_marker("selftest") else item.path.stem)
    return {"nodeid": item.nodeid, "test": item.name, "backend": backend,
            "family": family, "verdict": None, "stage": None, "message": "",
            "census": [], "detail": {}, "_runs": [], "_start": time.time()}


@pytest.hookimpl(tryfirst=True)   # before pytest's own skip marks, so a SKIP is a result too
def pytest_runtest_setup(item):
    if not engagement.engaged(item.config):
        return
    # Every test is a result (the headline counts what pytest counts); backend None when it runs on none.
    item.stash[_RECORD] = recorder(item.config).current = _new_record(item)


def _classify(rec: dict, report, call) -> None:
    """Fold one phase's report into the record; the first bad phase decides the verdict."""
    if rec["verdict"] not in (None, verdicts.PASS):
        return
    if hasattr(report, "wasxfail"):
        rec["verdict"] = verdicts.XFAIL if report.skipped else verdicts.XPASS
        rec["stage"], rec["message"] = "compare", report.wasxfail
        return
    if report.passed:
        if report.when == "call":
            rec["verdict"], rec["stage"] = verdicts.PASS, "compare"
        return
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        rec["verdict"], rec["stage"], rec["message"] = verdicts.SKIP, None, reason.removeprefix("Skipped: ")
        return
    # pytest's own failure text stays (the --tb style, the test's file and line, add_note lines);
    # what the verdict adds goes in a section after it.
    exc = call.excinfo.value if call and call.excinfo else None
    from accel_regress.golden.compare import Mismatch
    if isinstance(exc, VerdictError):
        rec["verdict"], rec["stage"] = exc.verdict, exc.stage
        rec["message"] = exc.message
        # The program itself goes to the report folder's failures/, not into every results file.
        rec["detail"].update({k: v for k, v in exc.detail.items() if k not in ("program", "argv_here", "temp_dir")})
        _add_section(report, f"{exc.verdict} at stage {exc.stage}", _verdict_text(exc))
    elif isinstance(exc, SetupError):
        rec["verdict"], rec["stage"], rec["message"] = verdicts.FAIL, "setup", str(exc)
    elif isinstance(exc, HarnessError):
        rec["verdict"], rec["stage"], rec["message"] = verdicts.FAIL, exc.stage, exc.message
        rec["detail"].update(exc.detail)
        _add_section(report, f"no verdict on the device (stage {exc.stage})", exc.message)
    elif isinstance(exc, Mismatch):
        rec["verdict"], rec["stage"], rec["message"] = verdicts.FAIL, "compare", str(exc)
        rec["census"].append(exc.census.to_json())
        rec["detail"].update(getattr(exc, "detail", {}))     # e.g. compare mode's per-step table
    elif isinstance(exc, AssertionError):
        rec["verdict"], rec["stage"] = verdicts.FAIL, "compare"
        rec["message"] = str(exc) or "assertion failed"
    else:
        rec["verdict"], rec["stage"] = verdicts.FAIL, "harness"
        rec["message"] = f"{report.when}: {type(exc).__name__}: {exc}" if exc else f"{report.when} failed"


def _add_section(report, title: str, text: str) -> None:
    if hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection(term_text(title), term_text(text, keep_newlines=True))


def _inert(report) -> None:
    """The failure's text pytest prints (its E lines, the short summary's message) made inert: a
    device's or simulator's words in an exception must not drive the terminal (issue 47 S3)."""
    for tb, crash, _descr in getattr(report.longrepr, "chain", None) or ():
        for entry in getattr(tb, "reprentries", ()):
            if isinstance(getattr(entry, "lines", None), list):
                entry.lines[:] = [term_text(line) for line in entry.lines]
        if crash is not None and isinstance(getattr(crash, "message", None), str):
            crash.message = term_text(crash.message, keep_newlines=True)


def _verdict_text(exc: VerdictError) -> str:
    lines = [exc.message]
    for key, value in exc.detail.items():
        if key in ("program", "argv_here", "temp_dir"):    # in the report folder's failures/ (_keep_failure_files)
            continue
        text = str(value).rstrip()
        if "\n" in text:
            lines.append(f"--- {key} ---")
            lines.extend(text.splitlines()[-30:])
        else:
            lines.append(f"{key}: {text}")
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    rec = item.stash.get(_RECORD, None)
    if rec is None:
        if report.failed and engagement.engaged(item.config):
            _add_section(report, "rerun this case", rerun_line(item, None))
        return report
    _classify(rec, report, call)
    _inert(report)
    _keep_failure_files(item, rec, report, call)
    if rec["verdict"] == verdicts.SKIP and NOT_APPLICABLE in item.stash:
        rec["verdict"] = verdicts.NOT_APPLICABLE
    if report.failed:
        rec["rerun"] = rerun_line(item, rec["backend"])
        _add_section(report, "rerun this case", rec["rerun"])
    elif hasattr(report, "wasxfail"):          # a known bug: the line that shows it again (issue 35)
        rec["rerun"] = rerun_line(item, rec["backend"])
    if report.when == "teardown":
        record = _finish_record(recorder(item.config), rec)
        item.config.hook.pytest_accel_regress_record(item=item, record=record)
        # A JSON string: what JUnit's <property value=...> shows, and what travels through
        # execnet under xdist (which refuses str subclasses such as torch's TorchVersion).
        report.user_properties.append((PROP, strict_json.dumps(record)))     # no bare NaN in junit.xml
    return report


def _keep_failure_files(item, rec: dict, report, call) -> None:
    """A COMPILE_ERROR, HANG or CRASH keeps its program, command lines and output in the report
    folder (results/failure_files.py); its message says where."""
    exc = call.excinfo.value if call and call.excinfo else None
    if not isinstance(exc, VerdictError) or rec["verdict"] != exc.verdict:
        return
    from accel_regress.results import failure_files
    from accel_regress.results.report.tables import slug
    folder, name = Path(item.config.getoption("accel_report_dir")), slug(rec)
    said = failure_files.keep(folder, name, exc.verdict, exc.detail)
    if said:
        rec["message"] = f"{failure_files.in_message(rec['message'], exc.detail, folder, name)} ({said})"
        rec["detail"]["kept"] = said
        _add_section(report, "kept for reading", said)


def rerun_line(item, backend: Optional[str]) -> str:
    """The command that reruns exactly this case, with the options, opt-in markers and
    environment that shaped it (the same line the summary prints from results.json), from the
    directory pytest was started in."""
    from accel_regress.results import summary
    config = item.config
    session = {"argv": _session_argv(config), "golden_seed": config.getoption("accel_golden_seed"),
               "fault": config.getoption("accel_inject_fault"), "env": summary.rerun_env(os.environ),
               "rootdir": str(config.rootpath), "cwd": str(config.invocation_params.dir),
               "prefixed_only": spelling.prefixed_only(config)}
    case = {"nodeid": item.nodeid, "backend": backend, "detail": {"markers": [m.name for m in item.iter_markers()]}}
    return summary.rerun_line(case, session)


def _session_argv(config) -> list:
    """The session's arguments: pytest's own record of them (an xdist worker gets the
    controller's; an inline run its own, not the outer process's sys.argv), with any URL's password
    taken out (``--history postgresql://u:PW@...``): results.json, results.jsonl, the rerun lines
    and the history never hold one."""
    from accel_regress.results.history.location import redact
    return [redact(str(a)) for a in config.invocation_params.args]


def _as_result(rec: dict) -> dict:
    """A results.json case from a live record (which keeps its Run objects and start time)."""
    out = {k: v for k, v in rec.items() if k not in ("_runs", "_start")}
    runs = rec["_runs"]
    out["duration_s"] = round(time.time() - rec["_start"], 4)
    out["runs"] = [r.to_json() for r in runs]
    out["versions"] = runs[0].versions if runs else {}
    if out["family"] is None and runs:
        out["family"] = runs[0].case.op
    return out


def _finish_record(rec_of: Recorder, rec: dict) -> dict:
    out = _as_result(rec)
    if out["verdict"] is None:
        out["verdict"] = verdicts.PASS
    rec_of.current = None
    return out


def _backends_info(names) -> dict:
    """Every registered backend; the selected ones probed (once: registry caches it), the others
    only named, so that a one-backend run starts no other backend's tools."""
    from accel_regress.core import registry, runner
    info = {}
    for name in registry.names():
        if name not in names:
            info[name] = {"selected": False, "available": None, "reason": "not selected (not probed)", "kind": None}
            continue
        reason = registry.availability(name)
        entry = {"selected": True, "available": reason is None, "reason": reason, "kind": registry.get(name).kind}
        if reason is None:
            entry["versions"] = runner.versions_of(name)
        info[name] = entry
    return info


def _open_sink(config) -> None:
    import platform
    import socket
    from accel_regress.results import record as results, summary
    names = selection.selected(config)
    meta = {"started": recorder(config).started_at, "host": socket.gethostname(),
            "platform": platform.platform(), "python": sys.version.split()[0], "argv": _session_argv(config),
            "cwd": os.getcwd(), "rootdir": str(config.rootpath), "hw": names, "fault": config.getoption("accel_inject_fault"),
            "golden_seed": config.getoption("accel_golden_seed"), "interrupted": False,
            "env": summary.rerun_env(os.environ), "prefixed_only": spelling.prefixed_only(config)}
    folder = Path(config.getoption("accel_report_dir"))
    try:
        recorder(config).sink = results.Sink(folder, meta, _backends_info(names))
    except report_dir.Busy as exc:
        raise pytest.UsageError(f"--report-dir: {exc}") from None
    except OSError as exc:
        raise pytest.UsageError(f"--report-dir {folder}: cannot write there: {exc.strerror or exc}") from None


def _backend_in(nodeid: str) -> Optional[str]:
    """The backend named in a test id's parameters (the ``hw`` parameter), if any."""
    from accel_regress.core import registry
    parts = nodeid.rpartition("[")[2].rstrip("]")
    return next((n for n in sorted(registry.names(), key=len, reverse=True)
                 if parts == n or parts.startswith(n + "-") or parts.endswith("-" + n) or f"-{n}-" in parts), None)


def _bare_record(nodeid: str) -> dict:
    """The record of a case known only by its node id (under xdist, all the controller knows)."""
    return {"nodeid": nodeid, "test": nodeid.rpartition("::")[2], "backend": _backend_in(nodeid), "family": None,
            "census": [], "detail": {}, "runs": [], "versions": {}}


def _interrupted_records(rec_of: Recorder, reason: str) -> list[dict]:
    """Suite cases that started but never finished: the session stopped while they ran."""
    out = []
    current = rec_of.current
    for nodeid, start in list(rec_of.started.items()):
        if current is not None and current["nodeid"] == nodeid:
            rec = _as_result(current)
        else:
            rec = _bare_record(nodeid)
        rec.update(verdict=verdicts.INTERRUPTED, stage="run",
                   message=f"the session stopped ({reason}) while this case ran",
                   duration_s=round(time.time() - start, 4))
        out.append(rec)
    rec_of.started.clear()
    return out


@pytest.hookimpl(tryfirst=True)     # before any other plugin's session end can fail
def pytest_sessionfinish(session, exitstatus):
    stop = isolation.stop(session.config)
    stop.phase = "finishing"     # a stop signal now is noted, never cuts the writing short
    rec_of = recorder(session.config)
    sink = rec_of.sink
    if sink is None:
        return
    if int(exitstatus) == pytest.ExitCode.USAGE_ERROR:
        # pytest printed the one message; results.json says no verdict was reached, and nothing
        # else (reports, history, the summary) speaks as if cases had run.
        sink.finish(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), exit_status=int(exitstatus), interrupted=False,
                    complete=False, stop_reason="a usage error (pytest exit status 4) before any case")
        sink.close()
        return
    if int(exitstatus) == pytest.ExitCode.INTERNAL_ERROR and stop.reason is None:
        stop.reason = "an internal error of the suite (pytest exit status 3)"
    stop_reason = stop.reason
    interrupted = bool(session.shouldstop) or int(exitstatus) == 2 or stop_reason is not None
    if interrupted:
        for rec in _interrupted_records(rec_of, stop_reason or "interrupted"):
            sink.add(rec)
    # complete: every selected test ran to its end (no -x / --maxfail stop, no interruption)
    stopped_early = bool(session.shouldfail) and not (session.testscollected and rec_of.finished >= session.testscollected)
    if not stop_reason and session.shouldstop:
        stop_reason = str(session.shouldstop)
    if not stop_reason and stopped_early:
        stop_reason = f"{session.shouldfail} (-x / --maxfail)"
    data = sink.finish(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), exit_status=int(exitstatus),
                       interrupted=interrupted, complete=not (interrupted or stopped_early),
                       **({"stop_reason": stop_reason} if stop_reason else {}))
    rec_of.data = data
    problem = sink.problem
    try:
        session.config.hook.pytest_accel_regress_session_finished(config=session.config, data=data,
                                                                  report_dir=sink.dir)
    except OSError as exc:         # a full disk, a folder made read-only: the reports, not the record
        problem = problem or f"cannot write the reports: {exc.filename or sink.dir}: {exc.strerror or exc}"
    finally:
        sink.close()               # the report folder is free for the next session
    if problem:
        # One line; what was written stays; pytest's internal-error status: a CI job must not read
        # a session whose record is not whole as a verdict on the device.
        print(f"accel-regress: {problem}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
