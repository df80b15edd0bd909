"""Known bugs in a run: the pytest plugin part of the expectations (the data model, the files'
format and their upkeep are accel_regress.results.expectations).

- an expected FAIL / COMPILE_ERROR that happens is XFAIL; if the case passes it is XPASS, which
  fails the run (strict) and the gate: the bug is fixed and the entry must go. A *different* bad
  verdict (a HANG where a FAIL was expected) stays what it is.
- an expected HANG / CRASH is not attempted (SKIP with the entry's reason) unless
  ``--run-known-hangs``; then it is XFAIL when it hangs / crashes and XPASS when it passes.
- entries of a selected backend that match no collected test are reported as stale (never an
  error: a run that did not collect a file says nothing about that file's entries).
- ``--ignore-expectations`` runs everything plainly.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from accel_regress.core import verdicts
from accel_regress.results import skip_rules
from accel_regress.results.expectations import (DEFAULT_DIR, EXPECTABLE, NOT_ATTEMPTED, Entry, Expectations,
                                                 ExpectationsError, load_dir)
from accel_regress.results.keys import test_key
from accel_regress.util import strict_json
from accel_regress.util.globs import Glob

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
        key = test_key(item.nodeid, backend)
        found = [e for source in _sources(backend) for e in exp.candidates(source, key)]
        if not found:
            continue
        state.matched.update((e.backend, e.test) for e in found)
        if backend not in registry.KNOWN or registry.availability(backend) is not None:
            continue        # the core SKIPs it with the backend's own reason; nothing to expect
        if not found[0].conditions:
            _apply(item, found[0], backend)
        else:               # versions / device decide: known once the backend is asked, at set-up
            item.stash[_CANDIDATES] = found


def _sources(backend: Optional[str]) -> list[Optional[str]]:
    """Whose expectations hold for ``backend``: its own file's, then those of the backends it is a
    variant of (Backend.shares_expectations_of)."""
    from accel_regress.core import registry
    if backend not in registry.KNOWN:
        return [backend]
    try:
        shared = tuple(getattr(registry.get(backend), "shares_expectations_of", ()))
    except registry.RegistrationError:     # the session names it with its own message
        shared = ()
    return [backend, *shared]


def nothing_to_build(item) -> bool:
    """Whether building the item's programs ahead would be wasted: a known hang or crash not
    attempted, or a known COMPILE_ERROR (its case compiles it and gets the error), decided at
    collection or (an entry whose versions or device decide) possibly at set-up."""
    entries = [item.stash[_ENTRY]] if _ENTRY in item.stash else list(item.stash.get(_CANDIDATES, None) or ())
    skipped = () if item.config.getoption("accel_run_known_hangs") else NOT_ATTEMPTED
    return any(e.verdict in skipped or e.verdict == verdicts.COMPILE_ERROR for e in entries)


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
        if e.conditions.on_device(versions, device):
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
    from accel_regress.util.escape import term_text
    for nodeid in summary["xpass"]:
        tr.write_line(term_text(f"XPASS, the bug looks fixed: remove its entry: {nodeid}"))
    for e in summary["stale"]:
        tr.write_line(term_text(f"stale entry ({e.get('why') or 'matches no collected test'}): {e['file']}: "
                                f"test = {e['test']!r}"))
