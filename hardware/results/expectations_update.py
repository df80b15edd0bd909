"""Upkeep of the expectation files: ``python -m accel_regress expectations check | update | stale``.

- ``check``: every file loads, and its entries are sorted by ``test``. Comments anywhere (a header,
  a note between entries, after a value) are the author's and are never a reason to complain.
- ``update RESULTS.json [--apply] [--prune-stale]``: the minimal change that makes the files agree
  with a run, as a unified diff; ``--apply`` writes it through tomlkit, so every comment, and every
  entry the change does not touch, stays as it was written.
- ``stale RESULTS.json...``: entries with a version or device range that none of the cases they
  match was run under, with the versions seen (qemu 8.2 makes a ``qemu < 8.1`` entry stale).
"""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import Optional

import tomlkit

from accel_regress.results import record as results
from accel_regress.core import verdicts
from accel_regress.util.atomic import write_atomic
from accel_regress.results.expectations import (
    DEFAULT_DIR,
    EXPECTABLE,
    Entry,
    Expectations,
    ExpectationsError,
    entry_text,
    load_dir,
    render,
)
from accel_regress.results.keys import device_of, test_key

_PASSED = (verdicts.PASS, verdicts.XPASS)


def _first_line(text: str, limit: int = 140) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def _versions(c: dict) -> dict:
    v = c.get("versions")
    return v if isinstance(v, dict) else {}


# --- stale by version --------------------------------------------------------------------------

def version_stale(exp: Expectations, data: dict) -> list[tuple[Entry, list[str]]]:
    """Entries with conditions whose pattern matches cases of this run, none of which they hold
    for: (entry, the versions seen, one line per distinct set)."""
    out = []
    for e in exp.entries:
        if not e.conditions:
            continue
        seen, held = {}, False
        for c in data.get("cases") or []:
            if c.get("backend") != e.backend or not e.matches(test_key(c["nodeid"], e.backend)):
                continue
            if c.get("verdict") in verdicts.NOT_RUN and not (c.get("detail") or {}).get("expectation"):
                continue        # a SKIP says nothing about the versions the bug needs
            device = device_of(c, data)
            if not e.conditions.on_device(_versions(c), device):
                continue        # another device's case: no sign that the bug is gone
            ok, _ = e.holds(_versions(c), device)
            held |= ok
            line = e.conditions.seen(_versions(c), device)
            seen[line] = seen.get(line, 0) + 1
        if seen and not held:
            out.append((e, [f"{line} ({n} case{'s' if n != 1 else ''})" for line, n in sorted(seen.items())]))
    return out


def stale_note(e: Entry, seen: list[str]) -> str:
    return (f"{e.backend}: stale entry {e.test!r} ({e.file}) holds for {e.conditions.describe()}; "
            f"versions seen: {'; '.join(seen)}")


# --- update ------------------------------------------------------------------------------------

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
        pattern_hits: set[int] = set()
        harness = [key for key, c in cases if verdicts.the_harness(c)]
        if harness:     # no verdict on the device: nothing learned about a known bug (issue 47 defect 2)
            notes.append(f"{backend}: {len(harness)} case(s) got no verdict on the device (the suite's files or a "
                         f"family's code failed), left out "
                         f"(first: {harness[0]})")
        for key, c in cases:
            pattern_hits.update(id(e) for e in exp.candidates(backend, key))   # an entry they match is not stale
            if verdicts.the_harness(c):
                continue
            e = exp.match(backend, key, _versions(c), device_of(c, data))
            if e is not None:
                matched[id(e)].append((key, c))
            elif c["verdict"] in EXPECTABLE:
                unlisted.append((key, c))
        kept: list[Entry] = []
        modules = {k.split("::", 1)[0] for k, _ in cases}
        for e in entries:
            hits = matched[id(e)]
            if not hits:
                if prune_stale and e.module in modules and id(e) not in pattern_hits:
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
                kept.append(Entry(backend, e.test, v, e.reason, e.issue, e.file, e.conditions, literal=e.literal))
            else:
                notes.append(f"{backend}: {e.test!r} split into exact ids ({len(hits)} cases disagree)")
                for key, v in sorted(wanted.items()):
                    if v is not None:
                        kept.append(Entry(backend, key, v, e.reason, e.issue, e.file, e.conditions,
                                          literal=_wild(key)))
        for key, c in sorted(unlisted, key=lambda kc: kc[0]):
            if any(k.test == key for k in kept):
                continue
            kept.append(Entry(backend, key, c["verdict"],
                              "TODO: " + (_first_line(c.get("message")) or f"{c['verdict']} at {c.get('stage')}"),
                              "TODO: link the upstream issue", literal=_wild(key)))
            notes.append(f"{backend}: new {c['verdict']} {key}")
        new[backend] = kept
    notes += [stale_note(e, seen) for e, seen in version_stale(exp, data)]
    return new, notes


def _wild(test_id: str) -> bool:
    """A test id that would read as a pattern (``*``, ``{a,b}``): written with ``exact = true``."""
    return "*" in test_id or "{" in test_id


def _split_leading(tables: list) -> list[list]:
    """The comments and blank lines written above each ``[[expect]]`` (tomlkit keeps them at the
    end of the previous table): taken off, so they travel with the entry they were written for."""
    leads = [[] for _ in tables]
    for i, t in enumerate(tables[:-1]):
        body = t.value.body
        n = len(body)
        while n and body[n - 1][0] is None:
            n -= 1
        leads[i + 1] = body[n:]
        del body[n:]
    return leads


def edit(old_text: str, entries: list[Entry]) -> str:
    """``old_text`` with its entries made ``entries`` (sorted by test), through tomlkit: untouched
    entries keep their exact text, comments stay with the entry below them."""
    doc = tomlkit.parse(old_text)
    tables = list(doc.get("expect") or [])
    leads = _split_leading(tables)
    old = {str(t["test"]): (t, lead) for t, lead in zip(tables, leads)}
    trailer = []
    if tables:                       # what follows the last entry stays at the end of the file
        body = tables[-1].value.body
        n = len(body)
        while n and body[n - 1][0] is None:
            n -= 1
        trailer = body[n:]
        del body[n:]
    aot = tomlkit.aot()
    for e in sorted(entries, key=lambda e: e.test):
        t, lead = old.get(e.test, (None, [(None, tomlkit.nl())]))
        if t is None:
            t = tomlkit.parse(entry_text(e))["expect"][0]
        else:
            for key in ("verdict", "reason", "issue"):
                if str(t[key]) != getattr(e, key):
                    t[key] = getattr(e, key)
        if len(aot):
            aot[-1].value.body.extend(lead)
        aot.append(t)
    for t in aot:
        t.trivia.indent = ""         # the blank line above an entry is its lead's, not tomlkit's
    if len(aot):
        aot[-1].value.body.extend(trailer)
    if "expect" in doc:
        doc["expect"] = aot
    elif len(aot):
        doc.append("expect", aot)
    return tomlkit.dumps(doc)


def diff(exp: Expectations, proposed: dict[str, list[Entry]], directory: Path) -> dict[Path, tuple[str, str]]:
    """{file: (old text, new text)} for every file whose entries would change."""
    changed = {}
    for backend, entries in sorted(proposed.items()):
        path = Path(directory) / f"{backend}.toml"
        old = path.read_text() if path.exists() else ""
        if old:
            if [e.to_json() for e in sorted(entries, key=lambda e: e.test)] == \
                    [e.to_json() for e in sorted(exp.for_backend(backend), key=lambda e: e.test)]:
                continue
            new = edit(old, entries)
        else:
            header = exp.headers.get(backend, f"# Known bugs on {backend}: see hardware/results/expectations.py for the format.")
            new = render(entries, header) if entries else ""
        if new != old:
            changed[path] = (old, new)
    return changed


def _unified(path: Path, old: str, new: str) -> str:
    name = path.as_posix()
    a, b = (name, name) if path.is_absolute() else (f"a/{name}", f"b/{name}")
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a if old else "/dev/null", b))


# --- check -------------------------------------------------------------------------------------

def unsorted(exp: Expectations) -> list[tuple[str, Entry, Entry]]:
    """(file, entry, the entry before it) wherever a file's entries are out of order."""
    out = []
    for backend in exp.backends:
        own = [e for e in exp.entries if e.backend == backend]       # in file order
        for before, e in zip(own, own[1:]):
            if e.test < before.test:
                out.append((e.file, e, before))
    return out


# --- the command -------------------------------------------------------------------------------

def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress expectations",
                                description="Known-bug expectation files: check them, find stale version "
                                            "ranges, or update them from a run.")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("update", help="print (or --apply) the change that makes the files match a run; "
                                       "exit 1 when there is one")
    up.add_argument("results", help="a results.json")
    up.add_argument("--apply", action="store_true", help="write the change (atomically, comments kept)")
    up.add_argument("--prune-stale", action="store_true",
                    help="also remove entries that match no case of a test file that ran")
    up.add_argument("--dir", default=DEFAULT_DIR, help="expectations directory (default: %(default)s)")
    ck = sub.add_parser("check", help="validate the files and that their entries are sorted by test")
    ck.add_argument("--dir", default=DEFAULT_DIR, help="expectations directory (default: %(default)s)")
    st = sub.add_parser("stale", help="entries whose version / device range none of a run's cases had; exit 1 "
                                      "when there is one")
    st.add_argument("results", nargs="+", help="results.json files")
    st.add_argument("--dir", default=DEFAULT_DIR, help="expectations directory (default: %(default)s)")
    args = p.parse_args(argv)
    directory = Path(args.dir)
    try:
        exp = load_dir(directory) if directory.exists() else Expectations(directory=directory)
    except ExpectationsError as exc:
        print(f"expectations: {exc}", file=sys.stderr)
        return 2
    if args.command == "check":
        bad = unsorted(exp)
        for file, e, before in bad:
            print(f"{file}: not sorted by test: {e.test!r} comes after {before.test!r}")
        n = len(exp.entries)
        print(f"{n} entr{'y' if n == 1 else 'ies'} in {len(exp.backends)} file(s): "
              + ("ok" if not bad else f"{len({f for f, _, _ in bad})} file(s) not sorted "
                                      f"(`expectations update RESULTS.json --apply` writes them sorted)"))
        return 1 if bad else 0
    paths = args.results if args.command == "stale" else [args.results]
    try:
        runs = [results.load(Path(path)) for path in paths]
    except results.ResultsError as exc:
        print(f"expectations {args.command}: {exc}", file=sys.stderr)
        return 2
    if args.command == "stale":
        found = [(e, seen) for data in runs for e, seen in version_stale(exp, data)]
        for e, seen in found:
            print(stale_note(e, seen))
        if not found:
            print("no entry is stale by version or device for these runs")
        return 1 if found else 0
    proposed, notes = propose(exp, runs[0], prune_stale=args.prune_stale)
    changes = diff(exp, proposed, directory)
    for note in notes:
        print(f"# {note}")
    if not changes:
        print("# the expectation files already match this run")
        return 0
    for path, (old, new) in changes.items():
        print(_unified(path, old, new), end="")
        if args.apply:
            write_atomic(path, new)
    if args.apply:
        print(f"# applied to {len(changes)} file(s)")
        return 0
    return 1
