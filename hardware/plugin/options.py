"""The suite's options: each one on the command line and in the ini file (``accel_<name>``), the
command line winning (the feature plugins' options too); validation (a bad value is a usage error, never a traceback or a silent
default); the backend selection; which marker expression applies."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from accel_regress.core import registry
from accel_regress.core.isolation.bounds import MAX_SECONDS, seconds


def _folder(text: str) -> str:
    if not text.strip():
        raise ValueError("empty; name a folder (an empty value would write into the current one)")
    return text


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return value


def _string(text: str) -> str:
    return text


@dataclass(frozen=True)
class Option:
    dest: str
    metavar: str
    help: str
    convert: Callable[[str], Any] = _string
    default: Any = None
    env: Optional[str] = None       # an environment variable between the ini file and the default
    choices: Optional[tuple] = None
    repeat: bool = False            # may be given several times (a list)
    path: bool = False              # an ini value is relative to the ini file
    switch: bool = False            # a flag without a value (ini: true/false)

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")

    @property
    def ini(self) -> str:
        return "accel_" + self.dest


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
    Option("no_golden_cache", "", "compute every golden afresh: neither read nor write the golden store "
           "($ACCEL_GOLDEN_CACHE, default ~/.cache/accel-regress/golden)", switch=True, default=False),
)


def pytest_addoption(parser):
    g = parser.getgroup("accel-regress")
    # The feature plugins (registered before this module) have added theirs: each gets an ini twin.
    _FEATURE[:] = []
    for arg in g.options:
        dest = arg.dest
        flag = arg.attrs().get("action") in ("store_true", "store_false")
        parser.addini("accel_" + dest, f"{arg.names()[-1]} (the command line wins)", type="bool" if flag else "string",
                      default=None)
        _FEATURE.append(arg)
    for opt in OPTIONS:
        # default None on the command line: "not given", so the ini file can fill it in.
        if opt.switch:
            g.addoption(opt.flag, dest=opt.dest, default=None, action="store_true",
                        help=f"{opt.help} [ini: {opt.ini}]")
            parser.addini(opt.ini, f"{opt.flag} (the command line wins)", type="bool", default=None)
            continue
        g.addoption(opt.flag, dest=opt.dest, default=None, metavar=opt.metavar,
                    action="append" if opt.repeat else "store",
                    help=f"{opt.help} [ini: {opt.ini}]")
        parser.addini(opt.ini, f"{opt.flag} (the command line wins)", type="args" if opt.repeat else "string",
                      default=[] if opt.repeat else None)


_FEATURE: list = []   # feature plugins' options (pytest's Argument objects), ini-settable too


def _resolve_feature(config, arg) -> None:
    """A feature option left at its default takes the ini value, converted as on the command line."""
    attrs = arg.attrs()
    if config.getoption(arg.dest) != attrs.get("default"):
        return
    ini = config.getini("accel_" + arg.dest)
    if ini in (None, ""):
        return
    where = f"accel_{arg.dest} (ini file {config.inipath})"
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
    where = opt.flag
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
    value = config.getoption("session_timeout", None)
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or value > MAX_SECONDS:
        raise pytest.UsageError(f"--session-timeout: {value!r} is not a number of seconds >= 0 (at most {MAX_SECONDS:g})")


_LARGE = re.compile(r"\blarge\b")
_INPUT_CLASSES = re.compile(r"\binput_classes\b")


def _markexpr(config) -> str:
    """``-m`` selects within the default set: ``large`` cases and the extra ``input_classes``
    cases stay out unless the expression names them."""
    expr = (config.getoption("markexpr", None) or "").strip()
    if not expr:
        config._accel_large = "large cases excluded (-m large runs them)"
        return "not large and not input_classes"
    classes = "" if _INPUT_CLASSES.search(expr) else " and not input_classes"
    if _LARGE.search(expr):
        config._accel_large = f"large cases as -m {expr!r} says"
        return f"({expr}){classes}"
    config._accel_large = f"large cases excluded (-m {expr!r} does not name 'large')"
    return f"({expr}) and not large{classes}"


@pytest.hookimpl(tryfirst=True)   # every other part of the plugin reads what this settles
def pytest_configure(config):
    config.addinivalue_line("markers", "large: big cases, excluded by default; run with -m large")
    config.addinivalue_line("markers", "input_classes: the input-class cases beyond the default few per "
                            "family, excluded by default; run with -m input_classes")
    config.addinivalue_line("markers", "family(op): the operator family a test belongs to")
    for opt in OPTIONS:
        setattr(config.option, opt.dest, _resolve(config, opt))
    for arg in _FEATURE:
        _resolve_feature(config, arg)
    _check_session_timeout(config)
    from accel_regress.golden import store
    store.configure(enabled=not config.getoption("no_golden_cache"))
    try:
        store.max_bytes()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    try:
        config._accel_hw = registry.parse(config.getoption("hw"))
    except registry.RegistrationError as exc:
        raise pytest.UsageError(f"accel-regress registrations: {exc}") from None
    except ValueError as exc:
        raise pytest.UsageError(f"--hw: {exc}") from None
    spec = config.getoption("inject_fault")
    if spec:
        from accel_regress.core import faults
        try:
            faults.load(spec)
        except (Exception, SystemExit) as exc:    # a fault file that calls sys.exit on import too
            raise pytest.UsageError(str(exc) if isinstance(exc, ValueError) else
                                    f"--inject-fault {spec}: cannot load it: {type(exc).__name__}: {exc}") from None
    # --collect-only writes no reports (and so leaves the last run's alone).
    if not config.option.xmlpath and not hasattr(config, "workerinput") and not config.option.collectonly:
        config.option.xmlpath = str(Path(config.getoption("report_dir")) / "junit.xml")
    config.option.markexpr = _markexpr(config)


def pytest_report_header(config):
    return [f"accel-regress: backends {','.join(config._accel_hw) or '(none)'}; {config._accel_large}"]
