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
``results.json`` is written atomically (temp file + rename) from that log.
"""
from __future__ import annotations

import json
import os
import stat
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Optional

from hardware.atomic import write_atomic, write_atomic_bytes  # noqa: F401 (re-exported)

SCHEMA = "accel-regress/results"
SCHEMA_VERSION = 1


def append_line(path: Path, record: dict) -> None:
    """One whole line per write, flushed at once; readers skip a torn last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, sort_keys=True, default=str) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def read_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
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
    """Read and check a results.json; a bad file is named with what is wrong with it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path}: not an accel-regress results file (schema {data.get('schema') if isinstance(data, dict) else None!r})")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{path}: schema_version {data.get('schema_version')!r}, this tool reads {SCHEMA_VERSION}")
    if not isinstance(data.get("cases"), list):
        raise ResultsError(f"{path}: 'cases' is missing or not a list")
    for i, c in enumerate(data["cases"]):
        missing = [k for k in ("nodeid", "backend", "verdict") if k not in c]
        if missing:
            raise ResultsError(f"{path}: case {i} lacks {', '.join(missing)}")
    return data


def member_path(results_dir: Path, rel: Any) -> Path:
    """The file a results file names by ``rel``, which must lie under the results file's own folder.

    A results file travels between machines and gets published, so a path in it is untrusted: an
    absolute path, a ``..`` step or any symlink on the way is refused (never followed), and the
    target must be a regular file. Raises ResultsError saying why.
    """
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise ResultsError(f"path {rel!r} is not a relative file name")
    parts = Path(rel).parts
    if Path(rel).is_absolute() or "\\" in rel or any(p == ".." for p in parts):
        raise ResultsError(f"path {rel!r} leaves {results_dir} (absolute or '..'); refused")
    here = Path(results_dir)
    for part in parts:
        if part == ".":
            continue
        here = here / part
        try:
            st = os.lstat(here)
        except OSError as exc:
            raise ResultsError(f"path {rel!r}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise ResultsError(f"path {rel!r}: {here} is a symlink; refused")
    if not stat.S_ISREG(st.st_mode):
        raise ResultsError(f"path {rel!r} is not a regular file; refused")
    return here


def read_member(results_dir: Path, rel: Any) -> bytes:
    """The bytes of ``member_path(results_dir, rel)``, opened without following a last-moment symlink."""
    path = member_path(results_dir, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ResultsError(f"path {rel!r}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        return f.read()


class Sink:
    """Where the controller process writes results as cases finish."""

    def __init__(self, directory: Path, session: dict, backends: dict):
        self.dir = Path(directory)
        self.jsonl = self.dir / "results.jsonl"
        self.json = self.dir / "results.json"
        self.session = session
        self.backends = backends
        self.dir.mkdir(parents=True, exist_ok=True)
        self.jsonl.unlink(missing_ok=True)
        append_line(self.jsonl, {"session": session})

    def add(self, case: dict) -> None:
        append_line(self.jsonl, case)

    def cases(self) -> list[dict]:
        return [r for r in read_lines(self.jsonl) if "nodeid" in r]

    def finish(self, **session_updates: Any) -> dict:
        self.session.update(session_updates)
        data = build(self.session, self.backends, self.cases())
        write_atomic(self.json, json.dumps(data, indent=1, sort_keys=False, default=str) + "\n")
        return data


def recover(jsonl: Path, out: Optional[Path] = None) -> dict:
    """Rebuild results.json from a results.jsonl left by a session that never finished."""
    lines = read_lines(jsonl)
    session = next((r["session"] for r in lines if "session" in r), {})
    session["interrupted"] = True
    data = build(session, {}, [r for r in lines if "nodeid" in r])
    write_atomic(out or jsonl.with_suffix(".json"), json.dumps(data, indent=1, default=str) + "\n")
    return data
