"""The suite's options: each one on the command line and in the ini file (``accel_<name>``), the
command line winning (the feature plugins' options too); validation (a bad value is a usage error, never a traceback or a silent
default); which of them make a session the plugin's (plugin/engagement.py); the backend selection
and the opt-in cases -m asks for are in plugin/selection.py."""
from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from accel_regress.plugin import engagement, selection, spelling


def seconds(text: str) -> float:
    from accel_regress.core.isolation.bounds import seconds as checked   # lazily: its package imports numpy
    return checked(text)


def _folder(text: str) -> str:
    if not text.strip():
        raise ValueError("empty; name a folder (an empty value would write into the current one)")
    return text


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"must be 1 or more, not {value}")
    return value


def _threads(text: str) -> str:
    if text.strip() == "auto":
        return "auto"
    return str(_non_negative_int(text))


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text!r} is not a fraction between 0 and 1")
    return value


def _string(text: str) -> str:
    return text


@dataclass(frozen=True)
class Option:
    name: str
    metavar: str
    help: str
    convert: Callable[[str], Any] = _string
    default: Any = None
    env: Optional[str] = None       # an environment variable between the ini file and the default
    choices: Optional[tuple] = None
    repeat: bool = False            # may be given several times (a list)
    path: bool = False              # an ini value is relative to the ini file
    switch: bool = False            # a flag without a value (ini: true/false)
    const: Any = None               # the value of the flag given bare (its value optional: --flag[=VALUE])

    @property
    def dest(self) -> str:
        return spelling.dest(self.name)

    @property
    def flag(self) -> str:
        return spelling.flag(self.name)

    @property
    def ini(self) -> str:
        return self.dest


OPTIONS = (
    Option("hw", "NAME[,NAME...]",
           "backends to run on (default: $ACCEL_HW, else every backend available here; 'all' for every known one)"),
    Option("inject_fault", "FILE.py:NAME|NAME",
           "apply fault(case, outputs) to every backend result before comparison"),
    Option("golden_seed", "N", "shift every case's input seed (default 0: the pinned inputs)", int, 0),
    Option("case_timeout", "SECONDS",
           "bound for one backend run (default: the backend's own, per family and size)", seconds),
    Option("report_dir", "DIR", "where results.json, results.jsonl and junit.xml go (default: reports)",
           _folder, default="reports", path=True),
    Option("isolation", "MODE", "process (default): every backend run in a warm worker process, so hangs and "
           "crashes become verdicts; none: in the pytest process (for a debugger)",
           default="process", env="ACCEL_ISOLATION", choices=("process", "none")),
    Option("worker_memory", "SIZE", "address-space bound of the isolated worker, e.g. 8G; 'none' for no bound "
           "(default auto: 80%% of physical memory)", default="auto"),
    Option("max_hangs", "N", "after N hangs in a row on a backend, SKIP its remaining cases (default 3; 0: never)",
           _non_negative_int, 3),
    Option("devices", "IDS|RESOURCE=IDS", "device ids for backends with a device resource, one per "
           "pytest(-xdist) worker, e.g. 0,1 or npu=0,1 (repeatable)", repeat=True),
    Option("device_lock_dir", "DIR", "where the per-device lock files live (default $TMPDIR/accel-regress-devices)",
           path=True),
    Option("gate_policy", "FILE", "release policy the reports' and terminal's verdict uses (default: the gate's "
           "default policy: every backend the session asked for must run)", path=True),
    Option("gate_baseline", "RESULTS.json", "an earlier results.json the verdict compares with (as gate --baseline)",
           path=True),
    Option("expectations", "DIR", "known-bug files, one per backend (default: <rootdir>/expectations when present)",
           path=True),
    Option("ignore_expectations", "", "run every case plainly: no XFAIL/XPASS, known hangs attempted",
           switch=True, default=False),
    Option("run_known_hangs", "", "attempt cases expected to HANG or CRASH (default: SKIP them with the entry's "
           "reason)", switch=True, default=False),
    Option("repeat", "N", "run every suite case N times (same worker and fresh workers, alternating); mixed "
           "outcomes are FLAKY with their rate k/N (default 1)", _positive_int, 1),
    Option("no_golden_cache", "", "compute every golden afresh: neither read nor write the golden store "
           "($ACCEL_GOLDEN_CACHE, default ~/.cache/accel-regress/golden)", switch=True, default=False),
    Option("verify_golden", "FRACTION", "recompute this share of the goldens read from the store and fail "
           "naming any that differs (bare: every one; CI: 0.05)", _fraction, 0.0, const=1.0),
    Option("compile_ahead", "N|auto", "when collection ends, compile the programs the session's cases need on N "
           "threads while the first cases run (default auto: the CPUs this process may use; 0: each case compiles "
           "its own when it runs)", _threads, "auto", env="ACCEL_COMPILE_AHEAD"),
    Option("progress_every", "SECONDS", "where the output is not a terminal (a CI log): after this many seconds "
           "with no test reported, one line of progress (done of total, what runs, what compiles ahead), at most "
           "one per interval (default 60; 0: none)", _non_negative_int, 60),
    Option("golden_cache_shared", "", "the golden store is shared: accept a folder others can write or own "
           "(also $ACCEL_GOLDEN_CACHE_SHARED=1)", switch=True, default=False),
)


def pytest_addoption(parser):
    g = parser.getgroup("accel-regress")
    # The feature plugins (registered before this module) have added theirs: each gets an ini twin.
    _FEATURE[:] = []
    for arg in g.options:
        dest = arg.dest
        flag = spelling.declared(arg).get("action") in ("store_true", "store_false")
        parser.addini(spelling.dest(dest), f"{arg.names()[-1]} (the command line wins)", type="bool" if flag else "string",
                      default=None)
        _FEATURE.append(arg)
    for opt in OPTIONS:
        # default None on the command line: "not given", so the ini file can fill it in.
        also = f" (also {spelling.short(opt.name)} where the project does not define it)"
        if opt.switch:
            spelling.add(parser, opt.name, default=None, action="store_true",
                         help=f"{opt.help} [ini: {opt.ini}]{also}")
            parser.addini(opt.ini, f"{opt.flag} (the command line wins)", type="bool", default=None)
            continue
        spelling.add(parser, opt.name, default=None, metavar=opt.metavar,
                     action="append" if opt.repeat else "store",
                     **({"nargs": "?", "const": str(opt.const)} if opt.const is not None else {}),
                     help=f"{opt.help} [ini: {opt.ini}]{also}")
        parser.addini(opt.ini, f"{opt.flag} (the command line wins)", type="args" if opt.repeat else "string",
                      default=[] if opt.repeat else None)


_FEATURE: list = []   # feature plugins' options (pytest's Argument objects), ini-settable too


def _resolve_feature(config, arg) -> None:
    """A feature option left at its default takes the ini value, converted as on the command line."""
    attrs = spelling.declared(arg)
    if config.getoption(arg.dest) != attrs.get("default"):
        return
    ini = config.getini(spelling.dest(arg.dest))
    if ini in (None, ""):
        return
    where = f"{spelling.dest(arg.dest)} (ini file {config.inipath})"
    if attrs.get("action") in ("store_true", "store_false"):
        setattr(config.option, arg.dest, bool(ini) == (attrs["action"] == "store_true"))
        return
    try:
        value = attrs["type"](ini) if callable(attrs.get("type")) else ini
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    if attrs.get("choices") and value not in attrs["choices"]:
        raise pytest.UsageError(f"{where}: {value!r} is not one of {', '.join(attrs['choices'])}")
    setattr(config.option, arg.dest, [value] if attrs.get("action") == "append" else value)


def _resolve(config, opt: Option) -> Any:
    """Command line, else ini file, else environment, else default; converted and checked."""
    given = config.getoption(opt.dest)
    where = spelling.spelled(config, opt.name)
    if given is None or given == []:
        ini = config.getini(opt.ini)
        if ini not in (None, "", []):
            given, where = ini, f"{opt.ini} (ini file {config.inipath})"
            if opt.path:
                given = str(Path(config.inipath).parent / given) if config.inipath else given
        elif opt.env and os.environ.get(opt.env):
            given, where = os.environ[opt.env], f"${opt.env}"
        else:
            return opt.default
    values = given if opt.repeat else [given]
    out = []
    for v in values:
        try:
            v = opt.convert(v) if isinstance(v, str) else v
        except ValueError as exc:
            raise pytest.UsageError(f"{where}: {exc}") from None
        if opt.choices and v not in opt.choices:
            raise pytest.UsageError(f"{where}: {v!r} is not one of {', '.join(opt.choices)}")
        out.append(v)
    return out if opt.repeat else out[0]


def _check_session_timeout(config) -> None:
    # pytest-timeout's option: it takes any float; a negative or NaN bound would never fire.
    from accel_regress.core.isolation.bounds import MAX_SECONDS
    value = config.getoption("session_timeout", None)
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or value > MAX_SECONDS:
        raise pytest.UsageError(f"--session-timeout: {value!r} is not a number of seconds >= 0 (at most {MAX_SECONDS:g})")


def _large_note(expr: str) -> str:
    if not expr:
        return "large cases excluded (-m large runs them)"
    if selection.names(expr, "large"):
        return f"large cases as -m {expr!r} says"
    return f"large cases excluded (-m {expr!r} does not name 'large')"


def _given(config) -> bool:
    """An accel-regress option on the command line (before the ini file fills any in), or in the ini file."""
    for opt in OPTIONS:
        if config.getoption(opt.dest) not in (None, []) or config.getini(opt.ini) not in (None, "", []):
            return True
    for arg in _FEATURE:
        if config.getoption(arg.dest) != spelling.declared(arg).get("default") or config.getini(spelling.dest(arg.dest)) not in (None, ""):
            return True
    return False


@pytest.hookimpl(tryfirst=True)   # every other part of the plugin reads what this settles
def pytest_configure(config):
    explicit = _given(config) or engagement.rootdir_registers(config)
    engagement.set_explicit(config, explicit)
    config.addinivalue_line("markers", "family(op): the operator family a test belongs to")
    if explicit:    # generic names: registered only where the plugin is plainly in use
        config.addinivalue_line("markers", "large: big cases, excluded by default; run with -m large")
        config.addinivalue_line("markers", "large_on(*kinds_or_names, reason): large on backends of these kinds "
                                "or names only (a simulator's default-run budget), by default elsewhere")
        config.addinivalue_line("markers", "input_classes: the input-class cases beyond the default few per "
                                "family, excluded by default; run with -m input_classes")
        config.addinivalue_line("markers", "corpus: the ONNX node corpus's cases, excluded by default; run with -m corpus")
        config.addinivalue_line("markers", "backends(*names): the test is a stage of these backends only; "
                                "NOT_APPLICABLE on the others")
    for opt in OPTIONS:
        setattr(config.option, opt.dest, _resolve(config, opt))
    for arg in _FEATURE:
        _resolve_feature(config, arg)
    _check_session_timeout(config)
    # A store this process already uses (a session inside a session) starts each session afresh;
    # one not imported yet is configured when the session engages.
    if "accel_regress.golden.store" in sys.modules:
        _configure_store(config, sys.modules["accel_regress.golden.store"])
    if os.environ.get("ACCEL_GOLDEN_CACHE_BYTES") is not None:
        from accel_regress.golden import store
        try:
            store.max_bytes()
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    if config.getoption("accel_hw") is not None:
        selection.selected(config)        # a named backend is checked now; no backend is probed
    spec = config.getoption("accel_inject_fault")
    if spec:
        from accel_regress.core import faults
        try:
            faults.load(spec)
        except (Exception, SystemExit) as exc:    # a fault file that calls sys.exit on import too
            raise pytest.UsageError(str(exc) if isinstance(exc, ValueError) else
                                    f"--inject-fault {spec}: cannot load it: {type(exc).__name__}: {exc}") from None
    # --collect-only writes no reports (and so leaves the last run's alone).
    if explicit and not config.option.xmlpath and not hasattr(config, "workerinput") and not config.option.collectonly:
        config.option.xmlpath = str(Path(config.getoption("accel_report_dir")) / "junit.xml")
    expr = (config.getoption("markexpr", None) or "").strip()
    selection.set_expression(config, expr)


def _configure_store(config, store) -> None:
    store.configure(enabled=not config.getoption("accel_no_golden_cache"), verify=config.getoption("accel_verify_golden"),
                    shared=config.getoption("accel_golden_cache_shared") or None)


@pytest.hookimpl(tryfirst=True)     # before any golden is asked for, or any backend
def pytest_accel_regress_engaged(config):
    from accel_regress.core import registry
    from accel_regress.golden import store
    _configure_store(config, store)
    try:
        registry.check()        # a registration that cannot be loaded is a usage error
    except registry.RegistrationError as exc:
        raise pytest.UsageError(f"accel-regress registrations: {exc}") from None
    if not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no":
        from accel_regress.plugin import fixtures     # an xdist controller collects nothing: every family, now
        fixtures.check_contracts(registry.registrations("family"))
    selection.selected(config)


def pytest_report_header(config):
    if engagement.explicit(config):
        note = _large_note(selection.expression(config))
        lines = [f"accel-regress: backends {','.join(selection.selected(config)) or '(none)'}; {note}"]
        theirs = spelling.prefixed_only(config)
        if theirs:
            lines.append(f"accel-regress: {', '.join(theirs)} are this project's own options; ours are spelled "
                         f"{', '.join('--accel-' + n[2:] for n in theirs)} here")
        return lines
