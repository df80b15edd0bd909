"""results.json: the machine-readable record of a session, rebuilt from a per-case JSON-lines log.

Schema ``accel-regress/results`` version 1::

    {"schema": "accel-regress/results", "schema_version": 1,
     "session": {"started", "finished", "host", "argv", "hw": [..], "fault", "golden_seed",
                 "interrupted": bool, "exit_status"},
     "backends": {name: {"available": bool, "reason", "kind", "versions": {..}}},
     "cases": [{"nodeid", "test", "family", "backend", "verdict", "stage", "message",
                "duration_s", "runs": [{"backend", "case": {"op","id","params","seed"},
                "inputs_sha256", "duration_s", "verdict"}], "census": [..], "detail": {..},
                "versions": {..}}],
     "summary": {family: {backend: {verdict: count}}}}

Every case is appended to ``results.jsonl`` as it finishes, so a killed session loses nothing;
``results.json`` is written atomically (temp file + rename) at the end from the records the
session kept in memory (never re-read by path: a case may delete the folder, another session
may share it). The session holds the report folder locked and marks results.json "in progress"
from its start (hardware/results/report_dir.py): a killed session leaves that mark, never the last
run's record.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional

from accel_regress.results import report_dir

from accel_regress.util import schemas, strict_json
from accel_regress.util.paths import PathRefused, member_path, read_member  # noqa: F401 (re-exported)
from accel_regress.util.atomic import write_atomic, write_atomic_bytes  # noqa: F401 (re-exported)

SCHEMA = "accel-regress/results"
SCHEMA_VERSION = 1


def _open_log(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def _write_line(fd: int, record: dict) -> None:
    """One whole line per write, unbuffered (in the file at once); readers skip a torn last line."""
    os.write(fd, (strict_json.dumps(record, sort_keys=True) + "\n").encode())


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(strict_json.loads(line))
        except (json.JSONDecodeError, RecursionError):
            continue   # a line torn by a kill mid-write
    return out


def summarize(cases: Iterable[dict]) -> dict:
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for c in cases:
        table[c.get("family") or "?"][c.get("backend") or "-"][c["verdict"]] += 1
    return {f: {b: dict(v) for b, v in sorted(bs.items())} for f, bs in sorted(table.items())}


def build(session: dict, backends: dict, cases: list[dict]) -> dict:
    # A case may appear twice (e.g. marked interrupted, then finished); the last word wins.
    by_id: dict[str, dict] = {}
    for c in cases:
        by_id[c["nodeid"]] = c
    ordered = list(by_id.values())
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "session": session,
            "backends": backends, "cases": ordered, "summary": summarize(ordered)}


class ResultsError(ValueError):
    pass


def load(path: Path) -> dict:
    """Read and check a results.json (hardware/util/schemas/results.schema.json); a bad file raises
    ResultsError naming the file, the place in it and what was expected."""
    path = Path(path)
    data = schemas.parse_json(path, ResultsError)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not an accel-regress results file (schema {data.get('schema') if isinstance(data, dict) else None!r})")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{path}: schema_version {data.get('schema_version')!r}, this tool reads {SCHEMA_VERSION}")
    # Restored first: what is checked is what the tools read (a listed string field turned number
    # is refused here, not a traceback in gate / report / merge).
    strict_json.restore(data)
    schemas.check(data, "results", path, ResultsError)
    return data


class Sink:
    """Where the controller process writes results as cases finish. It holds the report folder
    (``report_dir.Busy`` when another session does) until ``close``."""

    def __init__(self, directory: Path, session: dict, backends: dict):
        self.dir = Path(directory)
        self.jsonl = self.dir / "results.jsonl"
        self.json = self.dir / "results.json"
        self.session = session
        self.backends = backends
        self._cases: list[dict] = []
        self.problem: Optional[str] = None      # the first write that failed (a full disk ...)
        self._fd: Optional[int] = None
        self._lock: Optional[int] = report_dir.lock(self.dir)
        try:
            report_dir.clear(self.dir)
            write_atomic(self.json, strict_json.dumps(build(dict(session, in_progress=True), backends, []),
                                                      indent=1) + "\n")
            # Open for the whole session: a line per case is one write, not a mkdir, open and close.
            self._fd = _open_log(self.jsonl)
            _write_line(self._fd, {"session": session})
        except BaseException:
            self.close()
            raise

    def add(self, case: dict) -> None:
        self._cases.append(case)
        if self._fd is None:
            return
        try:
            _write_line(self._fd, case)
        except OSError as exc:       # kept in memory; results.json is tried at the end all the same
            self._failed(self.jsonl, exc)
            os.close(self._fd)
            self._fd = None

    def _failed(self, path: Path, exc: OSError) -> None:
        if self.problem is None:
            self.problem = f"cannot write {path}: {exc.strerror or exc}"

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def cases(self) -> list[dict]:
        return list(self._cases)

    def finish(self, **session_updates: Any) -> dict:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.session.update(session_updates)
        data = build(self.session, self.backends, self._cases)
        try:
            write_atomic(self.json, strict_json.dumps(data, indent=1) + "\n")
        except OSError as exc:
            self._failed(self.json, exc)
        return data       # the folder stays locked until close(): the reports are written next


def recover(jsonl: Path, out: Optional[Path] = None) -> dict:
    """Rebuild results.json from a results.jsonl left by a session that never finished. A log with
    no session line is not one (ResultsError); a finished record at ``out`` is never overwritten."""
    lines = [r for r in read_lines(jsonl) if isinstance(r, dict)]
    session = next((r["session"] for r in lines if isinstance(r.get("session"), dict)), None)
    if session is None:
        raise ResultsError(f"{jsonl}: not a session's results.jsonl (no session line)")
    cases = [r for r in lines if isinstance(r.get("nodeid"), str) and isinstance(r.get("verdict"), str)]
    target = Path(out or jsonl.with_suffix(".json"))
    if target.exists() or target.is_symlink():
        try:
            old = schemas.parse_json(target, ResultsError)
        except ResultsError as exc:
            raise ResultsError(f"{target} exists and is not a record in progress ({exc}): not overwritten; "
                               f"give another -o") from None
        in_progress = isinstance(old, dict) and isinstance(old.get("session"), dict) \
            and old["session"].get("in_progress") is True
        if not in_progress:
            raise ResultsError(f"{target} is a finished record (or not a results record): not overwritten; "
                               f"give another -o")
    session["interrupted"] = True
    session.pop("in_progress", None)
    data = build(session, {}, cases)
    write_atomic(target, strict_json.dumps(data, indent=1) + "\n")
    return data


def recover_main(argv=None) -> int:
    """``python -m accel_regress recover reports/results.jsonl``: the record of a killed session (whose
    results.json still says "in progress"), rebuilt from its log and marked interrupted. Exit 2, with
    the reason, for a log that is not a session's or a finished record in the way."""
    import argparse
    import sys
    p = argparse.ArgumentParser(prog="python -m accel_regress recover",
                                description="Rebuild a killed session's results.json from its results.jsonl.")
    p.add_argument("jsonl", help="the killed session's results.jsonl")
    p.add_argument("-o", "--output", help="where the record goes (default: results.json beside the log)")
    args = p.parse_args(argv)
    jsonl = Path(args.jsonl)
    if not jsonl.is_file():
        print(f"recover: {jsonl}: no such file", file=sys.stderr)
        return 2
    try:
        data = recover(jsonl, Path(args.output) if args.output else None)
    except ResultsError as exc:
        print(f"recover: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"recover: cannot write the record: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"recovered {len(data['cases'])} finished case(s) of the session started {data['session'].get('started', '?')}"
          f" -> {args.output or jsonl.with_suffix('.json')} (marked interrupted)")
    return 0
