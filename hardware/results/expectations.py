"""Known bugs as data: ``expectations/<backend>.toml``, their effect on a run, and their upkeep.

A file per backend (the file name is the backend id) holds ``[[expect]]`` entries::

    [[expect]]
    test = "tests/test_gemm_partition_n.py::test_partition[*-P4-C{1,2,3}]"
    verdict = "FAIL"            # FAIL | COMPILE_ERROR | HANG | CRASH
    reason = "runlist entries share one instruction binary; only C_0 is right"
    issue = "https://github.com/amd/IRON/issues/83"

``test`` is matched against the *test key*, the node id without the backend parameter (see
accel_regress.results.keys.test_key). In it ``*`` matches any run of characters and ``{a,b}`` either
alternative; everything else, brackets included, is literal, so a node id pastes in as it is
(hardware/util/globs.py: linear-time matching, patterns of bounded length).

An entry may also say for which versions and device generations it holds (hardware/results/version_range.py)::

    versions = { qemu = "<8.1" }        # keys of the versions each result records
    devices = ["Krackan"]               # a Krackan-only bug is not a Phoenix bug

Such an entry is decided per case once the backend's versions are known (at set-up); where it
does not hold the case runs plainly. An entry whose range matched none of the versions seen is
*stale*, reported with those versions (in a run, and by ``... expectations stale RESULTS.json``).

In a run (the pytest plugin part):
- an expected FAIL / COMPILE_ERROR that happens is XFAIL; if the case passes it is XPASS, which
  fails the run (strict) and the gate: the bug is fixed and the entry must go. A *different* bad
  verdict (a HANG where a FAIL was expected) stays what it is.
- an expected HANG / CRASH is not attempted (SKIP with the entry's reason) unless
  ``--run-known-hangs``; then it is XFAIL when it hangs / crashes and XPASS when it passes.
- entries of a selected backend that match no collected test are reported as stale (never an
  error: a run that did not collect a file says nothing about that file's entries).
- ``--ignore-expectations`` runs everything plainly.

Upkeep: ``python -m accel_regress expectations update reports/results.json [--apply]`` prints the
sorted, minimal diff that makes the files agree with a run and applies it with tomlkit, so
comments stay where they are; ``... check`` validates the files and that entries are sorted by
``test`` (comments between entries are welcome).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pytest

from accel_regress.results import schemas, skip_rules, strict_json
from accel_regress.core import verdicts
from accel_regress.util.globs import Glob, PatternError
from accel_regress.results.keys import test_key
from accel_regress.results.version_range import Conditions, RangeError

EXPECTABLE = (verdicts.FAIL, verdicts.COMPILE_ERROR, verdicts.HANG, verdicts.CRASH)
NOT_ATTEMPTED = (verdicts.HANG, verdicts.CRASH)
_KEYS = ("test", "verdict", "reason", "issue")
_OPTIONAL = ("versions", "devices", "exact")
DEFAULT_DIR = "expectations"


class ExpectationsError(ValueError):
    pass


@dataclass
class Entry:
    backend: str
    test: str
    verdict: str
    reason: str
    issue: str
    file: str = ""
    conditions: Conditions = field(default_factory=Conditions)
    glob: Glob = field(default=None, repr=False, compare=False)
    # ``exact = true``: ``test`` is one test id as it is, its ``*`` and ``{`` are characters, not
    # wildcards (a parameter id may hold them; as a pattern it would match every case of the test).
    literal: bool = False

    def __post_init__(self):
        if self.glob is None and not self.literal:
            self.glob = Glob(self.test)

    @property
    def exact(self) -> bool:
        return self.literal or self.glob.literal

    @property
    def module(self) -> str:
        """The test file part of the pattern ('' when it holds a wildcard)."""
        path = self.test.split("::", 1)[0]
        return "" if not self.literal and ("*" in path or "{" in path) else path

    def matches(self, key: str) -> bool:
        return key == self.test if self.literal else self.glob.match(key)

    def holds(self, versions: Optional[dict], device: Optional[str] = None) -> tuple[bool, str]:
        """Does the entry hold for a case with these recorded versions (None: not known yet)?"""
        if not self.conditions or versions is None:
            return True, ""
        return self.conditions.check(versions, device)

    def to_json(self) -> dict:
        return {"backend": self.backend, "test": self.test, "verdict": self.verdict,
                "reason": self.reason, "issue": self.issue, "file": self.file, **self.conditions.to_json(),
                **({"exact": True} if self.literal else {})}


class Expectations:
    def __init__(self, entries: Iterable[Entry] = (), headers: Optional[dict[str, str]] = None,
                 directory: Optional[Path] = None):
        self.entries = list(entries)
        self.headers = dict(headers or {})      # backend -> the file's leading comment block
        self.directory = directory
        self._by_backend: dict[str, list[Entry]] = {}     # asked for every collected item: sorted once

    def for_backend(self, backend: str) -> list[Entry]:
        # Exact ids first, then patterns, each sorted: the most specific entry wins.
        if backend not in self._by_backend:
            own = [e for e in self.entries if e.backend == backend]
            self._by_backend[backend] = sorted(own, key=lambda e: (not e.exact, e.test))
        return list(self._by_backend[backend])

    def candidates(self, backend: Optional[str], key: str) -> list[Entry]:
        """Every entry whose pattern matches, most specific first (conditions not yet asked)."""
        if not backend:
            return []
        if backend not in self._by_backend:
            self.for_backend(backend)
        return [e for e in self._by_backend[backend] if e.matches(key)]

    def match(self, backend: Optional[str], key: str, versions: Optional[dict] = None,
              device: Optional[str] = None) -> Optional[Entry]:
        """The entry for a case: the most specific whose pattern matches and that holds for the
        case's versions (when they are given)."""
        for e in self.candidates(backend, key):
            if e.holds(versions, device)[0]:
                return e
        return None

    @property
    def backends(self) -> list[str]:
        return sorted({e.backend for e in self.entries} | set(self.headers))


# --- files -----------------------------------------------------------------------------------

def _header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            lines.append(line)
        else:
            break
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def load_file(path: Path, known_backends: Optional[Iterable[str]] = None) -> tuple[list[Entry], str]:
    path = Path(path)
    backend = path.stem
    if known_backends is not None and backend not in set(known_backends):
        raise ExpectationsError(f"{path}: no backend {backend!r} (the file name must be a backend id: "
                                f"{', '.join(sorted(known_backends))})")
    text = schemas.read_text(path, ExpectationsError)     # one read: what is checked is what is kept
    doc = schemas.parse_toml(text, path, "expectations", ExpectationsError)   # hardware/results/schemas/expectations.schema.json
    extra = set(doc) - {"expect"}
    if extra:
        raise ExpectationsError(f"{path}: unknown top-level key(s) {', '.join(sorted(extra))}; "
                                f"entries go in [[expect]] tables")
    raw = doc.get("expect", [])
    if not isinstance(raw, list):
        raise ExpectationsError(f"{path}: 'expect' must be an array of tables ([[expect]])")
    entries, seen = [], {}
    for n, item in enumerate(raw, 1):
        where = f"{path}: entry {n}"
        if isinstance(item, dict) and isinstance(item.get("test"), str):
            where += f" (test = {item['test']!r})"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where}: not a table")
        unknown = set(item) - set(_KEYS) - set(_OPTIONAL)
        if unknown:
            raise ExpectationsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                                    f"keys are {', '.join(_KEYS + _OPTIONAL)}")
        for key in _KEYS:
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise ExpectationsError(f"{where}: '{key}' is missing or empty")
        if item["verdict"] not in EXPECTABLE:
            raise ExpectationsError(f"{where}: verdict {item['verdict']!r} is not one of {', '.join(EXPECTABLE)}")
        if item["test"] in seen:
            raise ExpectationsError(f"{where}: the same test pattern as entry {seen[item['test']]}")
        seen[item["test"]] = n
        try:
            conditions = Conditions.parse(item.get("versions"), item.get("devices"))
        except RangeError as exc:
            raise ExpectationsError(f"{where}: {exc}") from None
        try:
            entries.append(Entry(backend, item["test"], item["verdict"], item["reason"], item["issue"], str(path),
                                 conditions, literal=item.get("exact", False)))
        except PatternError as exc:
            raise ExpectationsError(f"{where}: bad test pattern: {exc}") from None
    return entries, _header(text)


def load_dir(directory: Path, known_backends: Optional[Iterable[str]] = None) -> Expectations:
    directory = Path(directory)
    if not directory.is_dir():
        raise ExpectationsError(f"{directory}: no such directory")
    if known_backends is None:
        from accel_regress.core import registry
        known_backends = list(registry.KNOWN)
    known_backends = list(known_backends)
    entries, headers = [], {}
    for path in sorted(directory.glob("*.toml")):
        found, header = load_file(path, known_backends)
        entries.extend(found)
        headers[path.stem] = header
    return Expectations(entries, headers, directory)


def _toml_string(s: str) -> str:
    # A JSON string is a valid TOML basic string for everything json.dumps emits.
    return json.dumps(s, ensure_ascii=False)


def entry_text(e: Entry) -> str:
    """One ``[[expect]]`` table as the update command writes it."""
    lines = [f"{k} = {_toml_string(getattr(e, k))}" for k in _KEYS]
    if e.conditions.versions:
        lines.append("versions = { " + ", ".join(f"{_toml_string(k)} = {_toml_string(v)}"
                                                 for k, v in e.conditions.versions.items()) + " }")
    if e.conditions.devices:
        lines.append("devices = [" + ", ".join(_toml_string(d) for d in e.conditions.devices) + "]")
    if e.literal:
        lines.append("exact = true")
    return "[[expect]]\n" + "\n".join(lines) + "\n"


def render(entries: Iterable[Entry], header: str = "") -> str:
    """The text of a new backend file: header comments, then entries sorted by test."""
    parts = [header.rstrip() + "\n"] if header.strip() else []
    for e in sorted(entries, key=lambda e: e.test):
        parts.append("\n" + entry_text(e))
    return "".join(parts).lstrip("\n")


# --- the pytest plugin part ------------------------------------------------------------------

_ENTRY = pytest.StashKey[Entry]()
_HELD_WHY = pytest.StashKey[str]()
_NOT_HELD = pytest.StashKey[list]()
_OUTCOME = pytest.StashKey[dict]()
_DONE = pytest.StashKey[bool]()


# Its options (--expectations, --ignore-expectations, --run-known-hangs) are declared with the core's
# (plugin/options.py): this plugin is registered only once a session is the plugin's (plugin/engagement.py).


@dataclass
class SessionExpectations:
    """This session's known bugs and what its cases made of them (an xdist controller: all its workers')."""
    exp: Optional[Expectations] = None      # the loaded files; None: none (or --ignore-expectations)
    matched: set = field(default_factory=set)     # (backend, test) of entries some collected case matched
    collected: set = field(default_factory=set)   # "module::function" of every collected or deselected test
    held: set = field(default_factory=set)        # (backend, test) of conditional entries that held for a case
    seen: dict = field(default_factory=dict)      # (backend, test) -> versions seen where they did not hold
    summary: Optional[dict] = None                # expectations.json's content, once written


_STATE = pytest.StashKey[SessionExpectations]()


def _state(config) -> SessionExpectations:
    return config.stash.setdefault(_STATE, SessionExpectations())


def summary(config) -> Optional[dict]:
    """expectations.json's content, once this session wrote it (the report writers read it)."""
    return config.stash[_STATE].summary if _STATE in config.stash else None


def pytest_configure(config):
    state = config.stash[_STATE] = SessionExpectations()
    if config.getoption("accel_ignore_expectations"):
        return
    given = config.getoption("accel_expectations")
    directory = Path(given) if given else Path(config.rootpath) / DEFAULT_DIR
    if not given and not directory.is_dir():
        return
    try:
        shown = Path(os.path.relpath(directory, config.invocation_params.dir))
        state.exp = load_dir(directory if shown.parts[:1] == ("..",) else shown)
    except ExpectationsError as exc:
        raise pytest.UsageError(f"expectations: {exc}") from None


def _backend_of(item) -> Optional[str]:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("hw") if callspec else None


def _function_of(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def _raises(verdict: str):
    from accel_regress.core.errors import CompileError, Crash, Hang
    # A census Mismatch is an AssertionError; a HANG where a FAIL was expected is not XFAIL.
    return {verdicts.FAIL: AssertionError, verdicts.COMPILE_ERROR: CompileError,
            verdicts.HANG: Hang, verdicts.CRASH: Crash}[verdict]


_CANDIDATES = pytest.StashKey[list]()


def _apply(item, entry: Entry, backend: str, now: bool = False) -> None:
    """Expect ``entry``'s verdict of ``item``: skip a known hang / crash, else a strict xfail.
    ``now``: at set-up (a skip must be raised; an xfail mark added then is still read)."""
    item.stash[_ENTRY] = entry
    where = f"{entry.reason} ({entry.issue}; {entry.file})"
    if entry.verdict in NOT_ATTEMPTED and not item.config.getoption("accel_run_known_hangs"):
        reason = f"known {entry.verdict} on {backend}, not attempted (--run-known-hangs to try): {where}"
        if now:
            pytest.skip(reason)
        item.add_marker(pytest.mark.skip(reason=reason))
    else:
        item.add_marker(pytest.mark.xfail(strict=True, raises=_raises(entry.verdict),
                                          reason=f"known {entry.verdict} on {backend}: {where}"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    state = _state(config)
    exp = state.exp
    state.collected.update(_function_of(i.nodeid) for i in items)
    if exp is None:
        return
    from accel_regress.core import registry
    for item in items:
        backend = _backend_of(item)
        found = exp.candidates(backend, test_key(item.nodeid, backend))
        if not found:
            continue
        state.matched.update((e.backend, e.test) for e in found)
        if backend not in registry.KNOWN or registry.availability(backend) is not None:
            continue        # the core SKIPs it with the backend's own reason; nothing to expect
        if not found[0].conditions:
            _apply(item, found[0], backend)
        else:               # versions / device decide: known once the backend is asked, at set-up
            item.stash[_CANDIDATES] = found


def _backend_versions(config, backend: str) -> tuple[dict, Optional[str]]:
    """The versions every result of ``backend`` records (its device held first, as a run does)."""
    from accel_regress.core import runner
    from accel_regress.plugin import isolation
    from accel_regress.results.version_range import generation
    isolation.context(config).device_env(backend)
    versions = runner.versions_of(backend)
    return versions, generation(versions)


def pytest_runtest_setup(item):
    found = item.stash.get(_CANDIDATES, None)
    if not found:
        return
    config, backend = item.config, _backend_of(item)
    versions, device = _backend_versions(config, backend)
    state = _state(config)
    for e in found:
        ok, why = e.holds(versions, device)
        if ok:
            state.held.add((e.backend, e.test))
            if e.conditions:
                item.stash[_HELD_WHY] = why
            _apply(item, e, backend, now=True)
            return
        state.seen.setdefault((e.backend, e.test), set()).add(e.conditions.seen(versions, device))
        item.stash.setdefault(_NOT_HELD, []).append({**e.to_json(), "why": why})


def pytest_collection_finish(session):
    _to_controller(session.config)


def pytest_sessionfinish(session):
    _to_controller(session.config)


def _to_controller(config) -> None:
    if hasattr(config, "workeroutput"):     # an xdist worker: tell the controller what it saw
        state = _state(config)
        config.workeroutput["accel_exp_matched"] = sorted(state.matched)
        config.workeroutput["accel_exp_collected"] = sorted(state.collected)
        config.workeroutput["accel_exp_held"] = sorted(state.held)
        config.workeroutput["accel_exp_seen"] = [[list(k), sorted(v)] for k, v in state.seen.items()]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    out = getattr(node, "workeroutput", None) or {}
    state = _state(node.config)
    state.matched.update(tuple(m) for m in out.get("accel_exp_matched", []))
    state.collected.update(out.get("accel_exp_collected", []))
    state.held.update(tuple(m) for m in out.get("accel_exp_held", []))
    for key, seen in out.get("accel_exp_seen", []):
        state.seen.setdefault(tuple(key), set()).update(seen)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if _ENTRY not in item.stash:
        return report
    seen = item.stash.setdefault(_OUTCOME, {})
    if report.failed and str(report.longrepr or "").startswith("[XPASS(strict)]"):
        seen["xpass"] = True
    if hasattr(report, "wasxfail") and call.excinfo is not None:
        exc = call.excinfo.value
        seen["message"] = str(exc)
        seen["stage"] = getattr(exc, "stage", "compare")
        census = getattr(exc, "census", None)
        if census is not None:
            seen["census"] = census.to_json()
        seen["detail"] = {k: v for k, v in (getattr(exc, "detail", None) or {}).items()
                          if isinstance(v, (str, int, float, bool, type(None)))}
    return report


def apply_record(item, record: dict) -> None:
    """XFAIL / XPASS wording, the census of an expected failure, the matching entry; the entries
    whose version or device range this case was outside of."""
    if item.stash.get(_DONE, False):
        return
    not_held = item.stash.get(_NOT_HELD, None)
    if not_held:
        record.setdefault("detail", {})["expectations_not_holding"] = not_held
    entry = item.stash.get(_ENTRY, None)
    if entry is None:
        return
    item.stash[_DONE] = True
    seen = item.stash.get(_OUTCOME, {})
    record.setdefault("detail", {})["expectation"] = dict(entry.to_json(), **(
        {"holds": item.stash[_HELD_WHY]} if _HELD_WHY in item.stash else {}))
    if seen.get("xpass"):
        record["verdict"], record["stage"] = verdicts.XPASS, "compare"
        record["message"] = (f"XPASS(strict): known {entry.verdict} did not happen, the case passed. "
                             f"Fixed? {entry.reason} ({entry.issue}); remove {entry.test!r} from {entry.file}")
    elif record["verdict"] == verdicts.XFAIL:
        record["stage"] = seen.get("stage") or record.get("stage")
        record["message"] = f"known {entry.verdict}: {entry.reason} ({entry.issue})\n{seen.get('message', '')}".rstrip()
        if seen.get("census") and not record.get("census"):
            record.setdefault("census", []).append(seen["census"])
        for k, v in seen.get("detail", {}).items():
            record["detail"].setdefault(k, v)
    elif record["verdict"] in EXPECTABLE and record["verdict"] != entry.verdict:
        record["message"] = f"expected {entry.verdict} ({entry.issue}), got {record['verdict']}\n{record.get('message') or ''}"


def pytest_accel_regress_record(item, record):
    apply_record(item, record)


def _whole_file_run(config, module: str) -> bool:
    """Was ``module`` collected as a whole (a directory or the file given, not a node id)?"""
    args = [a for a in (config.args or []) if not a.startswith("-")]
    if not args:
        return True
    root, inv = Path(config.rootpath), Path(config.invocation_params.dir)
    target = (root / module).resolve()
    for a in args:
        if "::" in a:
            continue
        p = (inv / a).resolve()
        if p == target or p in target.parents:
            return True
    return False


def stale(config) -> list[Entry]:
    """Entries of the selected backends that matched nothing although their test was collected.

    An entry is stale when its file does not exist, when its test function was collected with
    none of its parametrizations matching, or when its file was collected whole and has no
    such function. Entries of backends not selected, and of files not in this run, are not.
    """
    from accel_regress.plugin import selection
    state = _state(config)
    exp = state.exp
    if exp is None:
        return []
    selected = set(selection.already_selected(config) or [])
    collected = state.collected
    modules = {f.split("::", 1)[0] for f in collected}
    root = Path(config.rootpath)
    out = []
    for e in exp.entries:
        if e.backend not in selected:
            continue
        if (e.backend, e.test) in state.matched:
            if (e.conditions and (e.backend, e.test) not in state.held
                    and state.seen.get((e.backend, e.test))):
                out.append(e)       # its cases ran, under versions outside its range
            continue
        module = e.module
        if not module:
            continue                # a wildcard file: cannot tell which run should have matched
        if not (root / module).exists():
            out.append(e)
            continue
        function = _function_of(e.test)
        if function in collected:
            out.append(e)           # its test function ran: none of its cases matched
        elif module in modules and _whole_file_run(config, module):
            fn = Glob(function)
            if not any(fn.match(f) for f in collected if f.startswith(module + "::")):
                out.append(e)       # its file ran whole and has no such function (renamed?)
    return out


def _stale_json(config, e: Entry) -> dict:
    state = _state(config)
    seen = sorted(state.seen.get((e.backend, e.test), ()))
    if (e.backend, e.test) in state.matched and seen:
        return dict(e.to_json(), why=f"holds for {e.conditions.describe()}; versions seen: {'; '.join(seen)}")
    return dict(e.to_json(), why="matches no collected test")


def _summary(config, data: dict) -> dict:
    exp = _state(config).exp
    with_entry = [c for c in data.get("cases", []) if (c.get("detail") or {}).get("expectation")]
    return {
        "directory": str(exp.directory) if exp else None,
        "ignored": bool(config.getoption("accel_ignore_expectations")),
        "run_known_hangs": bool(config.getoption("accel_run_known_hangs")),
        "entries": len(exp.entries) if exp else 0,
        "xfail": [c["nodeid"] for c in with_entry if c["verdict"] == verdicts.XFAIL],
        "xpass": [c["nodeid"] for c in with_entry if c["verdict"] == verdicts.XPASS],
        "not_attempted": [c["nodeid"] for c in with_entry if skip_rules.not_attempted(c)],
        "stale": [_stale_json(config, e) for e in stale(config)],
    }


def session_finished(config, data: dict, report_dir) -> None:
    """Write expectations.json next to results.json; the report writers read it."""
    state = _state(config)
    if state.summary is not None:
        return
    from accel_regress.results import record as results
    state.summary = _summary(config, data)
    results.write_atomic(Path(report_dir) / "expectations.json", strict_json.dumps(state.summary, indent=1) + "\n")


@pytest.hookimpl(tryfirst=True)       # before the report writers, which read expectations.json
def pytest_accel_regress_session_finished(config, data, report_dir):
    session_finished(config, data, report_dir)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    summary = _state(config).summary
    if config.get_verbosity() < 0 or not summary or not (summary["xfail"] or summary["xpass"] or summary["not_attempted"] or summary["stale"]):
        return
    tr = terminalreporter
    tr.section("accel-regress expectations")
    tr.write_line(f"known bugs: {len(summary['xfail'])} XFAIL, {len(summary['not_attempted'])} not attempted "
                  f"(known HANG/CRASH; --run-known-hangs to try), {len(summary['xpass'])} XPASS")
    for nodeid in summary["xpass"]:
        tr.write_line(f"XPASS, the bug looks fixed: remove its entry: {nodeid}")
    for e in summary["stale"]:
        tr.write_line(f"stale entry ({e.get('why') or 'matches no collected test'}): {e['file']}: test = {e['test']!r}")
