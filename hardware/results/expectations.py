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
    facts = { onednn-bf16-matmul = "*amx*" }   # a kernel path the backend recorded (AMX, not AVX-512)

Such an entry is decided per case once the backend's versions are known (at set-up); where it
does not hold the case runs plainly. An entry whose range matched none of the versions seen is
*stale*, reported with those versions (in a run, and by ``... expectations stale RESULTS.json``).

In a run: accel_regress.plugin.expectations (XFAIL / strict XPASS, known hangs not attempted,
stale entries).

Upkeep: ``python -m accel_regress expectations update reports/results.json [--apply]`` prints the
sorted, minimal diff that makes the files agree with a run and applies it with tomlkit, so
comments stay where they are; ``... check`` validates the files and that entries are sorted by
``test`` (comments between entries are welcome).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional


from accel_regress.util import schemas
from accel_regress.core import verdicts
from accel_regress.util.globs import Glob, PatternError
from accel_regress.results.version_range import Conditions, RangeError

EXPECTABLE = (verdicts.FAIL, verdicts.COMPILE_ERROR, verdicts.HANG, verdicts.CRASH)
NOT_ATTEMPTED = (verdicts.HANG, verdicts.CRASH)
_KEYS = ("test", "verdict", "reason", "issue")
_OPTIONAL = ("versions", "devices", "facts", "exact")
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
    doc = schemas.parse_toml(text, path, "expectations", ExpectationsError)   # hardware/util/schemas/expectations.schema.json
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
            conditions = Conditions.parse(item.get("versions"), item.get("devices"), item.get("facts"))
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
    if e.conditions.facts:
        lines.append("facts = { " + ", ".join(f"{_toml_string(k)} = {_toml_string(v)}"
                                              for k, v in e.conditions.facts.items()) + " }")
    if e.literal:
        lines.append("exact = true")
    return "[[expect]]\n" + "\n".join(lines) + "\n"


def render(entries: Iterable[Entry], header: str = "") -> str:
    """The text of a new backend file: header comments, then entries sorted by test."""
    parts = [header.rstrip() + "\n"] if header.strip() else []
    for e in sorted(entries, key=lambda e: e.test):
        parts.append("\n" + entry_text(e))
    return "".join(parts).lstrip("\n")
