"""The binary search over an ordered list of versions, with ``git bisect skip`` semantics, and the
journal that lets an interrupted bisect resume.

``classify(version) -> "good" | "bad" | "skip"``. The oldest version must be good and the newest
bad (the caller checks both ends first). A skipped version is never tried again; the next try is
the untried version nearest the middle of the open range, as ``git bisect`` moves off a skipped
commit. When only skipped versions are left between the last good and the first bad one, the
answer is that range (every version in it is a candidate).

The journal (one JSON file per bisect question: test, backend, seed, packages, the test file's
content) keeps every step's outcome as it finishes. A bisect that starts again reads it and
reruns nothing it holds, so a bisect killed half-way continues where it stopped; two bisects of
the same question at once read and extend it under an ``flock``, and each write is atomic.
"""
from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from accel_regress.util.atomic import write_atomic

GOOD, BAD, SKIP = "good", "bad", "skip"


@dataclass
class Found:
    last_good: str
    first_bad: str
    skipped: list = field(default_factory=list)       # untested (skipped) versions between the two
    tried: list = field(default_factory=list)         # (version, good/bad/skip) in the order run

    @property
    def exact(self) -> bool:
        return not self.skipped


def bisect(versions: Sequence[str], classify: Callable[[str], str]) -> Found:
    """``versions`` oldest first; versions[0] is known good and versions[-1] known bad."""
    lo, hi = 0, len(versions) - 1
    skipped: set[int] = set()
    tried = []
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            break
        mid = (lo + hi) / 2
        i = min(open_, key=lambda j: (abs(j - mid), j))
        verdict = classify(versions[i])
        tried.append((versions[i], verdict))
        if verdict == GOOD:
            lo = i
        elif verdict == BAD:
            hi = i
        else:
            skipped.add(i)
    return Found(versions[lo], versions[hi], [versions[i] for i in range(lo + 1, hi)], tried)


class Journal:
    """``{version: outcome dict}`` for one bisect question, kept in a JSON file."""

    def __init__(self, path: Path, question: dict):
        self.path = Path(path)
        self.question = question

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _load(self) -> dict:
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("question") != self.question or not isinstance(doc.get("steps"), dict):
            return {}                       # another question's file or a damaged one: start afresh
        return doc["steps"]

    def steps(self) -> dict:
        with self._locked():
            return self._load()

    def get(self, version: str) -> Optional[dict]:
        return self.steps().get(version)

    def record(self, version: str, outcome: dict) -> None:
        with self._locked():
            steps = self._load()
            steps[version] = outcome
            write_atomic(self.path, json.dumps({"question": self.question, "steps": steps}, indent=1,
                                               sort_keys=True) + "\n")
