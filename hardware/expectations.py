"""Known bugs as data: ``expectations/<backend>.toml``, their effect on a run, and their upkeep.

A file per backend (the file name is the backend id) holds ``[[expect]]`` entries::

    [[expect]]
    test = "tests/test_gemm_partition_n.py::test_partition[*-P4-C{1,2,3}]"
    verdict = "FAIL"            # FAIL | COMPILE_ERROR | HANG | CRASH
    reason = "runlist entries share one instruction binary; only C_0 is right"
    issue = "https://github.com/amd/IRON/issues/83"

``test`` is matched against the *test key*, the node id without the backend parameter (see
hardware.merge.test_key). In it ``*`` matches any run of characters and ``{a,b}`` either
alternative; everything else, brackets included, is literal, so a node id pastes in as it is.

In a run (the pytest plugin part):
- an expected FAIL / COMPILE_ERROR that happens is XFAIL; if the case passes it is XPASS, which
  fails the run (strict) and the gate: the bug is fixed and the entry must go. A *different* bad
  verdict (a HANG where a FAIL was expected) stays what it is.
- an expected HANG / CRASH is not attempted (SKIP with the entry's reason) unless
  ``--run-known-hangs``; then it is XFAIL when it hangs / crashes and XPASS when it passes.
- entries of a selected backend that match no collected test are reported as stale (never an
  error: a run that did not collect a file says nothing about that file's entries).
- ``--ignore-expectations`` runs everything plainly.

Upkeep: ``python -m hardware expectations update reports/results.json [--apply]`` prints the
sorted, minimal diff that makes the files agree with a run; ``... check`` validates the files.
The files are kept in the canonical form the update command writes (entries sorted by ``test``),
so its diffs never carry unrelated noise.
"""
from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import pytest

from hardware import schemas, strict_json, verdicts
from hardware.merge import test_key

EXPECTABLE = (verdicts.FAIL, verdicts.COMPILE_ERROR, verdicts.HANG, verdicts.CRASH)
NOT_ATTEMPTED = (verdicts.HANG, verdicts.CRASH)
_KEYS = ("test", "verdict", "reason", "issue")
DEFAULT_DIR = "expectations"


class ExpectationsError(ValueError):
    pass


def compile_pattern(pattern: str) -> re.Pattern:
    """``*`` -> any run of characters, ``{a,b}`` -> a or b; all else literal."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "{":
            end = pattern.find("}", i)
            if end < 0:
                raise ValueError(f"unclosed '{{' at position {i}")
            alts = pattern[i + 1:end].split(",")
            out.append("(?:" + "|".join(re.escape(a) for a in alts) + ")")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z")


@dataclass
class Entry:
    backend: str
    test: str
    verdict: str
    reason: str
    issue: str
    file: str = ""
    regex: re.Pattern = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.regex is None:
            self.regex = compile_pattern(self.test)

    @property
    def exact(self) -> bool:
        return "*" not in self.test and "{" not in self.test

    @property
    def module(self) -> str:
        """The test file part of the pattern ('' when it holds a wildcard)."""
        path = self.test.split("::", 1)[0]
        return "" if ("*" in path or "{" in path) else path

    def matches(self, key: str) -> bool:
        return bool(self.regex.match(key))

    def to_json(self) -> dict:
        return {"backend": self.backend, "test": self.test, "verdict": self.verdict,
                "reason": self.reason, "issue": self.issue, "file": self.file}


class Expectations:
    def __init__(self, entries: Iterable[Entry] = (), headers: Optional[dict[str, str]] = None,
                 directory: Optional[Path] = None):
        self.entries = list(entries)
        self.headers = dict(headers or {})      # backend -> the file's leading comment block
        self.directory = directory

    def for_backend(self, backend: str) -> list[Entry]:
        # Exact ids first, then patterns, each sorted: the most specific entry wins.
        own = [e for e in self.entries if e.backend == backend]
        return sorted(own, key=lambda e: (not e.exact, e.test))

    def match(self, backend: Optional[str], key: str) -> Optional[Entry]:
        if not backend:
            return None
        for e in self.for_backend(backend):
            if e.matches(key):
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
    doc = schemas.load_toml(path, "expectations", ExpectationsError)   # hardware/schemas/expectations.schema.json
    text = path.read_text()
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
        unknown = set(item) - set(_KEYS)
        if unknown:
            raise ExpectationsError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                                    f"keys are {', '.join(_KEYS)}")
        for key in _KEYS:
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise ExpectationsError(f"{where}: '{key}' is missing or empty")
        if item["verdict"] not in EXPECTABLE:
            raise ExpectationsError(f"{where}: verdict {item['verdict']!r} is not one of {', '.join(EXPECTABLE)}")
        if item["test"] in seen:
            raise ExpectationsError(f"{where}: the same test pattern as entry {seen[item['test']]}")
        seen[item["test"]] = n
        try:
            entries.append(Entry(backend, item["test"], item["verdict"], item["reason"], item["issue"], str(path)))
        except ValueError as exc:
            raise ExpectationsError(f"{where}: bad test pattern: {exc}") from None
    return entries, _header(text)


def load_dir(directory: Path, known_backends: Optional[Iterable[str]] = None) -> Expectations:
    directory = Path(directory)
    if not directory.is_dir():
        raise ExpectationsError(f"{directory}: no such directory")
    if known_backends is None:
        from hardware import registry
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


def render(entries: Iterable[Entry], header: str = "") -> str:
    """The canonical text of one backend's file: header comments, then entries sorted by test."""
    parts = [header.rstrip() + "\n"] if header.strip() else []
    for e in sorted(entries, key=lambda e: e.test):
        parts.append("\n[[expect]]\n" + "".join(f"{k} = {_toml_string(getattr(e, k))}\n" for k in _KEYS))
    return "".join(parts).lstrip("\n")


# --- the update command ----------------------------------------------------------------------

_PASSED = (verdicts.PASS, verdicts.XPASS)
_UNKNOWN = (verdicts.SKIP, verdicts.INTERRUPTED, None)


def _first_line(text: str, limit: int = 140) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def propose(exp: Expectations, data: dict, prune_stale: bool = False) -> tuple[dict[str, list[Entry]], list[str]]:
    """What each backend's entries should be for the run in ``data``; returns (entries, notes)."""
    notes: list[str] = []
    cases_by_backend: dict[str, list[tuple[str, dict]]] = {}
    for c in data["cases"]:
        if c.get("backend"):
            cases_by_backend.setdefault(c["backend"], []).append((test_key(c["nodeid"], c["backend"]), c))
    new: dict[str, list[Entry]] = {b: list(exp.for_backend(b)) for b in exp.backends}
    for backend, cases in sorted(cases_by_backend.items()):
        entries = exp.for_backend(backend)
        matched: dict[int, list[tuple[str, dict]]] = {id(e): [] for e in entries}
        unlisted: list[tuple[str, dict]] = []
        for key, c in cases:
            e = exp.match(backend, key)
            if e is not None:
                matched[id(e)].append((key, c))
            elif c["verdict"] in EXPECTABLE:
                unlisted.append((key, c))
        kept: list[Entry] = []
        modules = {k.split("::", 1)[0] for k, _ in cases}
        for e in entries:
            hits = matched[id(e)]
            if not hits:
                if prune_stale and (e.module in modules):
                    notes.append(f"{backend}: removed stale entry {e.test!r} (matches no case of its file in this run)")
                    continue
                kept.append(e)
                continue
            wanted: dict[str, Optional[str]] = {}     # key -> verdict this run asks for (None: no entry)
            for key, c in hits:
                v = c["verdict"]
                if v in _PASSED:
                    wanted[key] = None
                elif v in EXPECTABLE:
                    wanted[key] = v
                else:                                   # XFAIL, SKIP, interrupted: nothing learned
                    wanted[key] = e.verdict
            values = set(wanted.values())
            if values == {e.verdict}:
                kept.append(e)
            elif values == {None}:
                notes.append(f"{backend}: {e.test!r} passed in every case it matches ({len(hits)}): bug fixed? "
                             f"({e.issue})")
            elif None not in values and len(values) == 1:
                (v,) = values
                notes.append(f"{backend}: {e.test!r} is now {v}, was {e.verdict}")
                kept.append(Entry(backend, e.test, v, e.reason, e.issue, e.file))
            else:
                notes.append(f"{backend}: {e.test!r} split into exact ids ({len(hits)} cases disagree)")
                for key, v in sorted(wanted.items()):
                    if v is not None:
                        kept.append(Entry(backend, key, v, e.reason, e.issue, e.file))
        for key, c in sorted(unlisted, key=lambda kc: kc[0]):
            if any(k.test == key for k in kept):
                continue
            kept.append(Entry(backend, key, c["verdict"],
                              "TODO: " + (_first_line(c.get("message")) or f"{c['verdict']} at {c.get('stage')}"),
                              "TODO: link the upstream issue"))
            notes.append(f"{backend}: new {c['verdict']} {key}")
        new[backend] = kept
    return new, notes


def diff(exp: Expectations, proposed: dict[str, list[Entry]], directory: Path) -> dict[Path, tuple[str, str]]:
    """{file: (old text, new text)} for every file whose canonical text would change."""
    changed = {}
    for backend, entries in sorted(proposed.items()):
        path = Path(directory) / f"{backend}.toml"
        old = path.read_text() if path.exists() else ""
        header = exp.headers.get(backend, f"# Known bugs on {backend}: see hardware/expectations.py for the format.")
        new = render(entries, header) if entries or path.exists() else ""
        if new != old:
            changed[path] = (old, new)
    return changed


def _unified(path: Path, old: str, new: str) -> str:
    name = path.as_posix()
    a, b = (name, name) if path.is_absolute() else (f"a/{name}", f"b/{name}")
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a if old else "/dev/null", b))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m hardware expectations",
                                description="Known-bug expectation files: check them, or update them from a run.")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("update", help="print (or --apply) the change that makes the files match a run; "
                                       "exit 1 when there is one")
    up.add_argument("results", help="a results.json")
    up.add_argument("--apply", action="store_true", help="write the change (atomically)")
    up.add_argument("--prune-stale", action="store_true",
                    help="also remove entries that match no case of a test file that ran")
    up.add_argument("--dir", default=DEFAULT_DIR, help="expectations directory (default: %(default)s)")
    ck = sub.add_parser("check", help="validate the files and that they are in canonical form")
    ck.add_argument("--dir", default=DEFAULT_DIR, help="expectations directory (default: %(default)s)")
    args = p.parse_args(argv)
    from hardware import results
    directory = Path(args.dir)
    try:
        exp = load_dir(directory) if directory.exists() else Expectations(directory=directory)
    except ExpectationsError as exc:
        print(f"expectations: {exc}", file=sys.stderr)
        return 2
    if args.command == "check":
        bad = 0
        for backend in exp.backends:
            path = directory / f"{backend}.toml"
            want = render(exp.for_backend(backend), exp.headers.get(backend, ""))
            if path.read_text() != want:
                bad += 1
                print(f"{path}: not in canonical form (sorted by test); the fix:")
                print(_unified(path, path.read_text(), want), end="")
        n = len(exp.entries)
        print(f"{n} entr{'y' if n == 1 else 'ies'} in {len(exp.backends)} file(s): "
              + ("ok" if not bad else f"{bad} file(s) not canonical"))
        return 1 if bad else 0
    try:
        data = results.load(Path(args.results))
    except results.ResultsError as exc:
        print(f"expectations update: {exc}", file=sys.stderr)
        return 2
    proposed, notes = propose(exp, data, prune_stale=args.prune_stale)
    changes = diff(exp, proposed, directory)
    for note in notes:
        print(f"# {note}")
    if not changes:
        print("# the expectation files already match this run")
        return 0
    for path, (old, new) in changes.items():
        print(_unified(path, old, new), end="")
        if args.apply:
            results.write_atomic(path, new)
    if args.apply:
        print(f"# applied to {len(changes)} file(s)")
        return 0
    return 1


# --- the pytest plugin part ------------------------------------------------------------------

_ENTRY = pytest.StashKey[Entry]()
_OUTCOME = pytest.StashKey[dict]()
_DONE = pytest.StashKey[bool]()


def pytest_addoption(parser):
    g = parser.getgroup("accel-regress")
    g.addoption("--expectations", default=None, metavar="DIR",
                help="known-bug files, one per backend (default: <rootdir>/expectations when present)")
    g.addoption("--ignore-expectations", action="store_true", default=False,
                help="run every case plainly: no XFAIL/XPASS, known hangs attempted")
    g.addoption("--run-known-hangs", action="store_true", default=False,
                help="attempt cases expected to HANG or CRASH (default: SKIP them with the entry's reason)")


def pytest_configure(config):
    config._accel_exp = None
    config._accel_exp_matched = set()
    config._accel_exp_collected = set()     # "module::function" of every collected or deselected test
    if config.getoption("ignore_expectations"):
        return
    given = config.getoption("expectations")
    directory = Path(given) if given else Path(config.rootpath) / DEFAULT_DIR
    if not given and not directory.is_dir():
        return
    try:
        shown = Path(os.path.relpath(directory, config.invocation_params.dir))
        config._accel_exp = load_dir(directory if shown.parts[:1] == ("..",) else shown)
    except ExpectationsError as exc:
        raise pytest.UsageError(f"expectations: {exc}") from None


def _backend_of(item) -> Optional[str]:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("hw") if callspec else None


def _function_of(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def _raises(verdict: str):
    from hardware.errors import CompileError, Crash, Hang
    # A census Mismatch is an AssertionError; a HANG where a FAIL was expected is not XFAIL.
    return {verdicts.FAIL: AssertionError, verdicts.COMPILE_ERROR: CompileError,
            verdicts.HANG: Hang, verdicts.CRASH: Crash}[verdict]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    exp = config._accel_exp
    config._accel_exp_collected.update(_function_of(i.nodeid) for i in items)
    if exp is None:
        return
    from hardware import registry
    run_hangs = config.getoption("run_known_hangs")
    for item in items:
        backend = _backend_of(item)
        entry = exp.match(backend, test_key(item.nodeid, backend))
        if entry is None:
            continue
        config._accel_exp_matched.add((entry.backend, entry.test))
        if backend not in registry.KNOWN or registry.availability(backend) is not None:
            continue        # the core SKIPs it with the backend's own reason; nothing to expect
        item.stash[_ENTRY] = entry
        where = f"{entry.reason} ({entry.issue}; {entry.file})"
        if entry.verdict in NOT_ATTEMPTED and not run_hangs:
            item.add_marker(pytest.mark.skip(
                reason=f"known {entry.verdict} on {backend}, not attempted (--run-known-hangs to try): {where}"))
        else:
            item.add_marker(pytest.mark.xfail(strict=True, raises=_raises(entry.verdict),
                                              reason=f"known {entry.verdict} on {backend}: {where}"))


def pytest_collection_finish(session):
    config = session.config
    if hasattr(config, "workeroutput"):     # an xdist worker: tell the controller what it saw
        config.workeroutput["accel_exp_matched"] = sorted(config._accel_exp_matched)
        config.workeroutput["accel_exp_collected"] = sorted(config._accel_exp_collected)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    out = getattr(node, "workeroutput", None) or {}
    node.config._accel_exp_matched.update(tuple(m) for m in out.get("accel_exp_matched", []))
    node.config._accel_exp_collected.update(out.get("accel_exp_collected", []))


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
    """XFAIL / XPASS wording, the census of an expected failure, the matching entry."""
    entry = item.stash.get(_ENTRY, None)
    if entry is None or item.stash.get(_DONE, False):
        return
    item.stash[_DONE] = True
    seen = item.stash.get(_OUTCOME, {})
    record.setdefault("detail", {})["expectation"] = entry.to_json()
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
    exp = config._accel_exp
    if exp is None:
        return []
    selected = set(getattr(config, "_accel_hw", None) or [])
    collected = config._accel_exp_collected
    modules = {f.split("::", 1)[0] for f in collected}
    root = Path(config.rootpath)
    out = []
    for e in exp.entries:
        if e.backend not in selected or (e.backend, e.test) in config._accel_exp_matched:
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
            fn = compile_pattern(function)
            if not any(fn.match(f) for f in collected if f.startswith(module + "::")):
                out.append(e)       # its file ran whole and has no such function (renamed?)
    return out


def _summary(config, data: dict) -> dict:
    exp = config._accel_exp
    with_entry = [c for c in data.get("cases", []) if (c.get("detail") or {}).get("expectation")]
    return {
        "directory": str(exp.directory) if exp else None,
        "ignored": bool(config.getoption("ignore_expectations")),
        "run_known_hangs": bool(config.getoption("run_known_hangs")),
        "entries": len(exp.entries) if exp else 0,
        "xfail": [c["nodeid"] for c in with_entry if c["verdict"] == verdicts.XFAIL],
        "xpass": [c["nodeid"] for c in with_entry if c["verdict"] == verdicts.XPASS],
        "not_attempted": [c["nodeid"] for c in with_entry if c["verdict"] == verdicts.SKIP],
        "stale": [e.to_json() for e in stale(config)],
    }


def session_finished(config, data: dict, report_dir) -> None:
    """Write expectations.json next to results.json; the report writers read it."""
    if getattr(config, "_accel_exp_summary", None) is not None:
        return
    from hardware import results
    summary = _summary(config, data)
    config._accel_exp_summary = summary
    results.write_atomic(Path(report_dir) / "expectations.json", strict_json.dumps(summary, indent=1) + "\n")


@pytest.hookimpl(tryfirst=True)       # before the report writers, which read expectations.json
def pytest_accel_regress_session_finished(config, data, report_dir):
    session_finished(config, data, report_dir)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    summary = getattr(config, "_accel_exp_summary", None)
    if not summary or not (summary["xfail"] or summary["xpass"] or summary["not_attempted"] or summary["stale"]):
        return
    tr = terminalreporter
    tr.section("accel-regress expectations")
    tr.write_line(f"known bugs: {len(summary['xfail'])} XFAIL, {len(summary['not_attempted'])} not attempted "
                  f"(known HANG/CRASH; --run-known-hangs to try), {len(summary['xpass'])} XPASS")
    for nodeid in summary["xpass"]:
        tr.write_line(f"XPASS, the bug looks fixed: remove its entry: {nodeid}")
    for e in summary["stale"]:
        tr.write_line(f"stale entry (matches no collected test): {e['file']}: test = {e['test']!r}")
