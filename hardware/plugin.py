"""The pytest plugin: --hw selection, the ``hw`` fixture, verdict recording, reports, summary."""
from __future__ import annotations

import json
import os
import platform
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import pytest

from golden.case import Case
from golden.compare import Mismatch
from hardware import devices, registry, results, runner, summary, verdicts
from hardware.errors import Unsupported, VerdictError

# Feature plugins: each adds its options and hooks (pytest_accel_regress_* in hookspecs.py).
pytest_plugins = [
    "hardware.expectations",            # known bugs: XFAIL / strict XPASS, known hangs not attempted
    "hardware.report.plugin",           # markdown, html and heatmaps after results.json
    "hardware.npu.markers",             # supported_devices, --npu-artifacts, --npu-mode
    "hardware.pypto.pto_cpp_option",    # --pto-cpp: lint ptoas output
    "hardware.qemu_rvv.report_plugin",  # RVV codegen scan in qemu-rvv / firesim records
    "hardware.hypothesis_profiles",     # accel-ci (default) and explore profiles
]

_RECORD = pytest.StashKey[dict]()
_PROP = "accel_regress"


def pytest_addhooks(pluginmanager):
    from hardware import hookspecs
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser):
    g = parser.getgroup("accel-regress")
    g.addoption("--hw", default=None, metavar="NAME[,NAME...]",
                help="backends to run on (default: $ACCEL_HW, else every backend available here; 'all' for every known one)")
    g.addoption("--inject-fault", default=None, metavar="FILE.py:NAME|NAME",
                help="apply fault(case, outputs) to every backend result before comparison")
    g.addoption("--golden-seed", type=int, default=0, metavar="N",
                help="shift every case's input seed (default 0: the pinned inputs)")
    g.addoption("--case-timeout", type=float, default=None, metavar="SECONDS",
                help="bound for one backend run (default: the backend's own, per family and size)")
    g.addoption("--report-dir", default="reports", metavar="DIR",
                help="where results.json, results.jsonl and junit.xml go (default: reports)")
    g.addoption("--isolation", default=os.environ.get("ACCEL_ISOLATION", "process"), choices=("process", "none"),
                help="process (default): every backend run in a warm worker process, so hangs and crashes "
                     "become verdicts; none: in the pytest process (for a debugger)")
    g.addoption("--worker-memory", default="auto", metavar="SIZE",
                help="address-space bound of the isolated worker, e.g. 8G; 'none' for no bound "
                     "(default auto: 80%% of physical memory)")
    g.addoption("--max-hangs", type=int, default=3, metavar="N",
                help="after N hangs in a row on a backend, SKIP its remaining cases (default 3; 0: never)")
    g.addoption("--devices", action="append", default=None, metavar="IDS|RESOURCE=IDS",
                help="device ids for backends with a device resource, one per pytest(-xdist) worker, "
                     "e.g. 0,1 or npu=0,1 (repeatable)")
    g.addoption("--device-lock-dir", default=None, metavar="DIR",
                help="where the per-device lock files live (default $TMPDIR/accel-regress-devices)")


def pytest_configure(config):
    config.addinivalue_line("markers", "large: big cases, excluded by default; run with -m large")
    config.addinivalue_line("markers", "input_classes: the input-class cases beyond the default few per "
                            "family, excluded by default; run with -m input_classes")
    config.addinivalue_line("markers", "family(op): the operator family a test belongs to")
    try:
        config._accel_hw = registry.parse(config.getoption("hw"))
    except ValueError as exc:
        raise pytest.UsageError(f"--hw: {exc}") from None
    spec = config.getoption("inject_fault")
    if spec:
        from hardware import faults
        try:
            faults.load(spec)
        except Exception as exc:
            raise pytest.UsageError(str(exc)) from None
    report_dir = Path(config.getoption("report_dir"))
    if not config.option.xmlpath and not hasattr(config, "workerinput"):
        config.option.xmlpath = str(report_dir / "junit.xml")
    if not config.getoption("markexpr", None):   # -k selects within the default set; -m replaces it
        config.option.markexpr = "not large and not input_classes"
    runner.observer = _observe
    global _config, _started
    # A session inside a session (pytester's inline runs) must hand the outer one its state back.
    config._accel_saved = (_config, _started, runner.isolation, runner.hang_guard, runner.devices)
    _config, _started = config, {}
    _configure_isolation(config)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config) -> bool:
    return not _is_worker(config) and getattr(config.option, "dist", "no") != "no"


# --- isolation, bounds, devices, interruption ---------------------------------------------------

_stop_reason: Optional[str] = None


def _preload_modules(names) -> list[str]:
    """Modules the fork server imports once, so every worker starts warm."""
    import importlib.util
    import pkgutil
    mods = []
    for name in names:
        if registry.availability(name) is not None:
            continue
        mods.append(registry.KNOWN[name].split(":")[0])
        if name == "emu":
            import hardware.emu as emu
            mods += [f"hardware.emu.{m.name}" for m in pkgutil.iter_modules(emu.__path__)]
    return [m for m in mods if importlib.util.find_spec(m.split(".")[0]) is not None]


def _configure_isolation(config) -> None:
    from hardware.isolation import Bounds, HangGuard
    from hardware.isolation.bounds import default_memory, parse_size
    try:
        memory = config.getoption("worker_memory")
        memory_bytes = default_memory() if memory == "auto" else parse_size(memory)
        pools = devices.parse(config.getoption("devices"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if config.getoption("max_hangs") < 0:
        raise pytest.UsageError("--max-hangs: must be 0 (never stop) or more")
    runner.hang_guard = HangGuard(config.getoption("max_hangs"))
    lock_dir = config.getoption("device_lock_dir")
    runner.devices = devices.DeviceLocks(pools, lock_dir and Path(lock_dir),
                                         on_wait=lambda msg: print(f"accel-regress: {msg}", file=sys.stderr)) if pools else None
    if config.getoption("isolation") == "process" and not _is_xdist_controller(config):
        runner.isolation = _isolation_for(Bounds(memory_bytes=memory_bytes), _preload_modules(config._accel_hw))
    else:
        runner.isolation = None
    _install_stop_handlers(config)


_isolations: dict = {}


def _isolation_for(bounds, preload):
    """One fork server per process and setting: sessions inside a session (pytester) share it
    instead of paying a torch import each; all are closed when the process exits."""
    from hardware.isolation import Isolation
    key = (bounds, tuple(preload))
    if key not in _isolations:
        if not _isolations:
            import atexit
            atexit.register(_close_isolations)
        _isolations[key] = Isolation(bounds, preload=preload)
    return _isolations[key]


def _close_isolations() -> None:
    while _isolations:
        _isolations.popitem()[1].close()


def _on_stop_signal(signum, frame):
    # A KeyboardInterrupt takes pytest's own interrupted path: the session finishes, results.json is
    # written, and the running case is marked INTERRUPTED (pytest_sessionfinish below).
    global _stop_reason
    _stop_reason = _stop_reason or signal.Signals(signum).name
    raise KeyboardInterrupt(_stop_reason)


def pytest_keyboard_interrupt(excinfo):
    global _stop_reason
    _stop_reason = _stop_reason or "SIGINT"


def _install_stop_handlers(config) -> None:
    global _stop_reason
    _stop_reason = None
    config._accel_old_sigterm = config._accel_timer = None
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        config._accel_old_sigterm = signal.signal(signal.SIGTERM, _on_stop_signal)
    # --session-timeout is pytest-timeout's option (it stops between tests); at the deadline this
    # also interrupts the case that is running, which results.json lists as INTERRUPTED.
    seconds = config.getoption("session_timeout", None)
    if seconds and not _is_worker(config):
        main_id = threading.main_thread().ident

        def fire():
            global _stop_reason
            _stop_reason = f"session timeout after {seconds:g} s (--session-timeout)"
            signal.pthread_kill(main_id, signal.SIGTERM)   # to the main thread: wakes a blocking wait
        timer = config._accel_timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()


def pytest_unconfigure(config):
    global _config, _started
    if getattr(config, "_accel_timer", None) is not None:
        config._accel_timer.cancel()
    if getattr(config, "_accel_old_sigterm", None) is not None:
        signal.signal(signal.SIGTERM, config._accel_old_sigterm)
    runner.isolation = None      # kept warm for the next session in this process (see _isolation_for)
    if runner.devices is not None:
        runner.devices.release()
        runner.devices = None
    saved = getattr(config, "_accel_saved", None)
    if saved is not None:
        _config, _started, runner.isolation, runner.hang_guard, runner.devices = saved


class Hardware:
    """The ``hw`` fixture: one backend, with the session's fault and seed applied."""

    def __init__(self, name: str, config):
        self.name = name
        self.backend = registry.get(name)
        self.fault = config.getoption("inject_fault")
        self.golden_seed = config.getoption("golden_seed")
        self.case_timeout = config.getoption("case_timeout")

    def run(self, case: Case, inputs) -> runner.Run:
        return runner.run_case(self.name, case, inputs, fault=self.fault, timeout_s=self.case_timeout)

    def __repr__(self) -> str:
        return f"<hw {self.name}>"


def pytest_generate_tests(metafunc):
    if "hw" in metafunc.fixturenames:
        names = metafunc.config._accel_hw
        metafunc.parametrize("hw", names, ids=names, indirect=True, scope="module")


def pytest_collection_modifyitems(config, items):
    """A backend that cannot run a family at all SKIPs its tests before any input is made."""
    said: dict[tuple, Optional[str]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        family = item.get_closest_marker("family")
        if callspec is None or "hw" not in callspec.params or family is None:
            continue
        key = (callspec.params["hw"], family.args[0])
        if key not in said:
            name, op = key
            reason = registry.availability(name)
            said[key] = (f"backend {name} unavailable: {reason}" if reason
                         else _op_reason(name, op))
        if said[key]:
            item.add_marker(pytest.mark.skip(reason=said[key]))


def _op_reason(name: str, op: str) -> Optional[str]:
    reason = registry.get(name).supports_op(op)
    return f"{name}: {reason}" if reason else None


@pytest.fixture(scope="module")
def hw(request) -> Hardware:
    name = request.param
    reason = registry.availability(name)
    if reason:
        pytest.skip(f"backend {name} unavailable: {reason}")
    return Hardware(name, request.config)


@pytest.fixture(scope="session")
def golden_seed(request) -> int:
    return request.config.getoption("golden_seed")


# --- recording -------------------------------------------------------------------------------

_current: Optional[dict] = None
_config = None


def _observe(run: runner.Run) -> None:
    if _current is not None and all(r is not run for r in _current["_runs"]):
        _current["_runs"].append(run)


def _new_record(item) -> dict:
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("hw") if callspec else None
    fam = item.get_closest_marker("family")
    return {"nodeid": item.nodeid, "test": item.name, "backend": backend,
            "family": fam.args[0] if fam else None, "verdict": None, "stage": None, "message": "",
            "census": [], "detail": {}, "_runs": [], "_start": time.time()}


@pytest.hookimpl(tryfirst=True)   # before pytest's own skip marks, so a SKIP is a result too
def pytest_runtest_setup(item):
    global _current
    # Only suite cases (tests that run on a backend) are results; selftests are not.
    if "hw" in getattr(item, "fixturenames", ()):
        item.stash[_RECORD] = _current = _new_record(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    except Unsupported as exc:
        pytest.skip(str(exc))


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
    exc = call.excinfo.value if call and call.excinfo else None
    if isinstance(exc, VerdictError):
        rec["verdict"], rec["stage"] = exc.verdict, exc.stage
        rec["message"] = exc.message
        rec["detail"].update(exc.detail)
        report.longrepr = _verdict_text(exc) + _notes(exc)
    elif isinstance(exc, Mismatch):
        rec["verdict"], rec["stage"], rec["message"] = verdicts.FAIL, "compare", str(exc)
        rec["census"].append(exc.census.to_json())
        report.longrepr = str(exc) + _notes(exc)
    elif isinstance(exc, AssertionError):
        rec["verdict"], rec["stage"] = verdicts.FAIL, "compare"
        rec["message"] = str(exc) or "assertion failed"
    else:
        rec["verdict"], rec["stage"] = verdicts.FAIL, "harness"
        rec["message"] = f"{report.when}: {type(exc).__name__}: {exc}" if exc else f"{report.when} failed"


def _notes(exc: BaseException) -> str:
    """Lines added with add_note (hypothesis's 'Falsifying example: ...' among them)."""
    return "".join("\n" + n for n in getattr(exc, "__notes__", ()))


def _verdict_text(exc: VerdictError) -> str:
    lines = [f"{exc.verdict} at stage {exc.stage}: {exc.message}"]
    for key, value in exc.detail.items():
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
        return report
    _classify(rec, report, call)
    if report.when == "teardown":
        record = _finish_record(rec)
        item.config.hook.pytest_accel_regress_record(item=item, record=record)
        # Plain JSON types only: under xdist the record travels through execnet, which refuses str
        # subclasses such as torch's TorchVersion.
        record = json.loads(json.dumps(record, default=str))
        report.user_properties.append((_PROP, record))
    return report


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


def _finish_record(rec: dict) -> dict:
    global _current
    out = _as_result(rec)
    if out["verdict"] is None:
        out["verdict"] = verdicts.PASS
    _current = None
    return out


# --- session ---------------------------------------------------------------------------------

def _backends_info(names) -> dict:
    info = {}
    for name in registry.KNOWN:
        reason = registry.availability(name)
        b = registry.get(name)
        entry = {"selected": name in names, "available": reason is None, "reason": reason, "kind": b.kind}
        if reason is None and name in names:
            entry["versions"] = runner.versions_of(name)
        info[name] = entry
    return info


def pytest_sessionstart(session):
    config = session.config
    if runner.isolation is not None:
        runner.isolation.start()      # the fork server imports torch while pytest collects
    if _is_worker(config):
        return
    names = config._accel_hw
    meta = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": socket.gethostname(),
            "platform": platform.platform(), "python": sys.version.split()[0], "argv": sys.argv[1:],
            "cwd": os.getcwd(), "hw": names, "fault": config.getoption("inject_fault"),
            "golden_seed": config.getoption("golden_seed"), "interrupted": False}
    config._accel_sink = results.Sink(Path(config.getoption("report_dir")), meta, _backends_info(names))


_started: dict[str, float] = {}


def pytest_runtest_logstart(nodeid, location):
    _started[nodeid] = time.time()


def pytest_runtest_logreport(report):
    if report.when != "teardown":
        return
    _started.pop(report.nodeid, None)
    for key, value in report.user_properties:
        if key == _PROP:
            sink = getattr(_config, "_accel_sink", None)
            if sink is not None:
                sink.add(value)


def _backend_in(nodeid: str) -> Optional[str]:
    """The backend named in a test id's parameters (the ``hw`` parameter), if any."""
    parts = nodeid.rpartition("[")[2].rstrip("]")
    return next((n for n in sorted(registry.KNOWN, key=len, reverse=True)
                 if parts == n or parts.startswith(n + "-") or parts.endswith("-" + n) or f"-{n}-" in parts), None)


def _interrupted_records(session, reason: str) -> list[dict]:
    """Suite cases that started but never finished: the session stopped while they ran."""
    items = {item.nodeid: item for item in getattr(session, "items", [])}
    out = []
    for nodeid, start in list(_started.items()):
        if _current is not None and _current["nodeid"] == nodeid:
            rec = _as_result(_current)
        else:
            item = items.get(nodeid)
            if item is not None and "hw" not in getattr(item, "fixturenames", ()):
                continue    # not a suite case (a selftest): not a result
            # Under xdist the controller knows only the node id.
            backend = _backend_in(nodeid)
            if item is None and backend is None:
                continue
            rec = {"nodeid": nodeid, "test": nodeid.rpartition("::")[2], "backend": backend, "family": None,
                   "census": [], "detail": {}, "runs": [], "versions": {}}
        rec.update(verdict=verdicts.INTERRUPTED, stage="run",
                   message=f"the session stopped ({reason}) while this case ran",
                   duration_s=round(time.time() - start, 4))
        out.append(rec)
    _started.clear()
    return out


def pytest_sessionfinish(session, exitstatus):
    sink = getattr(session.config, "_accel_sink", None)
    if sink is None:
        return
    interrupted = bool(session.shouldstop) or int(exitstatus) == 2 or _stop_reason is not None
    if interrupted:
        for rec in _interrupted_records(session, _stop_reason or "interrupted"):
            sink.add(rec)
    data = sink.finish(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), exit_status=int(exitstatus),
                       interrupted=interrupted, **({"stop_reason": _stop_reason} if _stop_reason else {}))
    session.config._accel_data = data
    session.config.hook.pytest_accel_regress_session_finished(config=session.config, data=data,
                                                       report_dir=sink.dir)


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
    tr.write_line(f"reports: {Path(config.getoption('report_dir')) / 'results.json'}, {config.option.xmlpath}")
