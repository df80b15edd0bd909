"""A results.json (a session's, or a merged one) as history rows: one run per session, with its
versions, devices, tests and cases. Plain Python: no database here.

A run's key is derived from what every copy of its record says (host, argv, start and end,
fault, seed, exit status): the session's own results.json and a merged file's entry for it give
the same key, so a run is stored once however often and by whichever route it is imported. A
merged file is split back into its sessions (each case names its source file)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from accel_regress.core import verdicts
from accel_regress.results.history.location import redact
from accel_regress.results.keys import device_of, test_key

# What a device did, for flip counting: a good or a bad outcome; anything else (SKIP, INTERRUPTED,
# XPASS, NOT_APPLICABLE) says nothing about the device's stability.
GOOD = (verdicts.PASS, verdicts.XFAIL)
BAD = (verdicts.FAIL, verdicts.FLAKY, verdicts.HANG, verdicts.CRASH, verdicts.COMPILE_ERROR)
_KEY_FIELDS = ("host", "argv", "started", "finished", "fault", "golden_seed", "exit_status")
_DEVICE_KEYS = ("device", "device_name", "board", "target")
# How a run came into the history: a session storing itself at its end, or `history import` of a
# results.json. (bisect steps and upstream runs write no history at all.) Only sessions are
# evidence of a device's flakiness unless the user counts imports too.
SESSION, IMPORT = "session", "import"
ENTRIES = (SESSION, IMPORT)


@dataclass
class RunRows:
    key: str
    run: dict
    versions: dict = field(default_factory=dict)     # (backend, name) -> value
    devices: dict = field(default_factory=dict)      # label -> (backend, reported name)
    tests: dict = field(default_factory=dict)        # test key -> family
    cases: list = field(default_factory=list)        # dicts with "test" and "device" labels


def run_key(session: dict) -> str:
    ident = {k: session.get(k) for k in _KEY_FIELDS}
    text = json.dumps(ident, sort_keys=True, default=str, separators=(",", ":"))
    return "r" + hashlib.sha256(text.encode()).hexdigest()[:32]


def parse_time(text: Any) -> Optional[datetime]:
    """A session's timestamp as naive UTC (what both back ends store the same way)."""
    if not isinstance(text, str) or not text:
        return None
    for parse in (lambda t: datetime.strptime(t, "%Y-%m-%dT%H:%M:%S%z"), datetime.fromisoformat):
        try:
            when = parse(text)
        except ValueError:
            continue
        if when.tzinfo is not None:
            when = when.astimezone(timezone.utc).replace(tzinfo=None)
        return when
    return None


def _text(value: Any, limit: Optional[int] = None) -> Optional[str]:
    if value is None:
        return None
    out = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return out[:limit] if limit else out


def _device_name(versions: Any) -> Optional[str]:
    if isinstance(versions, dict):
        for k in _DEVICE_KEYS:
            if isinstance(versions.get(k), str) and versions[k]:
                return versions[k]
    return None


def _rank(verdict: str) -> int:
    return 2 if verdict in BAD else 1 if verdict in GOOD else 0


def _stats(case: dict) -> Optional[str]:
    detail = case.get("detail") or {}
    out = {k: v for k, v in (("census", case.get("census")), ("repeat", detail.get("repeat")),
                             ("expectation", detail.get("expectation"))) if v}
    return json.dumps(out, sort_keys=True, default=str) if out else None


def _add_versions(rows: RunRows, backend: str, versions: Any) -> None:
    if not isinstance(versions, dict):
        return
    for name, value in versions.items():
        k = (str(backend)[:255], str(name)[:255])
        v = _text(value)
        old = rows.versions.get(k)
        if old is None:
            rows.versions[k] = v
        elif v is not None and v not in old.split(" | "):
            rows.versions[k] = f"{old} | {v}"


def _one_run(session: dict, backends: dict, cases: list, data: dict, source: Optional[str],
             entry: str = IMPORT) -> RunRows:
    fault = session.get("fault")
    argv = session.get("argv")
    if isinstance(argv, list):      # a record written before passwords were taken out of it
        argv = [redact(a) if isinstance(a, str) else a for a in argv]
    rows = RunRows(key=run_key(session), run={
        "started": parse_time(session.get("started")), "finished": parse_time(session.get("finished")),
        "host": _text(session.get("host")), "runner": _text(session.get("runner")),
        "revision": _text(session.get("revision")), "argv": _text(argv),
        "project": _text(session.get("project")), "branch": _text(session.get("branch")), "entry": entry,
        "hw": _text(session.get("hw")), "fault": _text(fault), "has_fault": bool(fault),
        "policy": _text(session.get("policy")),
        "golden_seed": session.get("golden_seed") if isinstance(session.get("golden_seed"), int) else None,
        "exit_status": session.get("exit_status") if isinstance(session.get("exit_status"), int) else None,
        "interrupted": bool(session.get("interrupted")), "source": source})
    for name, info in (backends or {}).items():
        if isinstance(info, dict) and (info.get("selected") or info.get("versions")):
            _add_versions(rows, name, info.get("versions"))
    seen: dict[tuple, dict] = {}
    columns: dict[tuple, str] = {}
    for case in cases:
        backend = case.get("backend")
        key = test_key(case["nodeid"], backend)
        versions = case.get("versions")
        # device_of reads only these: one call per distinct combination, not per case.
        which = (case.get("device"), backend,
                 tuple(str(versions.get(k)) for k in _DEVICE_KEYS) if isinstance(versions, dict) else None)
        device = columns.get(which)
        if device is None:
            device = columns[which] = device_of(case, data)
        rows.tests.setdefault(key, _text(case.get("family"), 255))
        if device not in rows.devices or rows.devices[device][1] is None:
            rows.devices[device] = (backend, _device_name(versions))
        if versions:
            _add_versions(rows, backend or "-", versions)
        duration = case.get("duration_s")
        row = {"test": key, "device": device, "backend": backend, "verdict": str(case["verdict"])[:32],
               "stage": _text(case.get("stage"), 32),
               "duration": float(duration) if isinstance(duration, (int, float)) else None,
               "message": _text(case.get("message")), "stats": _stats(case),
               "rerun": redact(case["rerun"]) if isinstance(case.get("rerun"), str) else _text(case.get("rerun"))}
        old = seen.get((key, device))
        # One cell per test x device: twice in one record (a rerun), a failure wins over a pass,
        # and either over what says nothing of the device (SKIP, INTERRUPTED, ...).
        if old is None or _rank(row["verdict"]) > _rank(old["verdict"]):
            seen[(key, device)] = row
    rows.cases = list(seen.values())
    rows.run["n_cases"] = len(rows.cases)
    return rows


def prepare(data: dict, source: Optional[str] = None, entry: str = IMPORT) -> list[RunRows]:
    """The runs in a results dict: one, or one per source session of a merged file; ``entry``:
    how they came in (ENTRIES)."""
    if entry not in ENTRIES:
        raise ValueError(f"entry {entry!r} is not one of {ENTRIES}")
    session = data.get("session") or {}
    merged = [s for s in session.get("merged_from") or [] if isinstance(s, dict)]
    if not merged:
        return [_one_run(session, data.get("backends") or {}, data.get("cases") or [], data, source, entry)]
    by_file: dict[str, list] = {}
    for case in data.get("cases") or []:
        by_file.setdefault(str(case.get("source")), []).append(case)
    out = []
    for src in merged:
        cases = by_file.pop(str(src.get("file")), [])
        out.append(_one_run(src, data.get("backends") or {}, cases, data, source, entry))
    if any(by_file.values()):     # cases that name no listed source: a run of their own
        rest = [c for cs in by_file.values() for c in cs]
        out.append(_one_run(dict(session, merged_from=None), data.get("backends") or {}, rest, data, source, entry))
    return out
