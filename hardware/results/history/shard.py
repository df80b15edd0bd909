"""``--shard I/N``: this runner's share of the selected tests, a pure function of the selection
(the node ids left after ``-k`` / ``-m``) and of a durations snapshot every runner reads from the
same file of the checkout (``--shard-durations``, default ``.test_durations`` in the rootdir:
pytest-split's file and format, ``{node id: seconds}``). Never from the results history: every
runner adds its durations there at its end, so a runner that starts after another has finished
would compute another split (issue 34 item 1).

The split is the longest-processing-time rule (pytest-split's ``least_duration``: longest first,
each to the shard with the least work so far, ties by node id), which ends within 4/3 of the best
possible makespan. A test the snapshot has no duration for counts as the median of the known ones
of the selection (1 s when none is known, so no snapshot is a split by count).

Each shard's record carries ``shard: [i, n]``, the digest of the whole selection and the digest of
the whole split (every node id with its shard), so ``merge`` and ``gate`` can tell shards of one
split that tile the selection from a lone shard, a missing one, or shards of different splits
(hardware/results/tiling.py). That is pytest-xdist's rule between its workers (every worker must
collect the same tests, or the run stops) carried across runners that never meet.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from pathlib import Path
from statistics import median
from typing import Optional, Sequence

# More shards than tests only makes empty shards; the bound keeps an absurd N (issue 34 item 9:
# 1/99999999999999999999 allocated one heap entry per shard) a usage error, said at once.
MAX_SHARDS = 1000
_SPEC = re.compile(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", re.ASCII)
DURATIONS_FILE = ".test_durations"


def parse(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N <= MAX_SHARDS, as (I, N); ValueError saying what is wrong."""
    m = _SPEC.fullmatch(text or "")
    if not m:
        raise ValueError(f"{text!r} is not I/N with I and N whole numbers (e.g. 2/4: the second of four shards)")
    # Never int() of a thousand digits: a number longer than MAX_SHARDS is out of range anyway.
    i, n = (int(g) if len(g.lstrip("0")) <= len(str(MAX_SHARDS)) else MAX_SHARDS + 1 for g in m.groups())
    if not 1 <= n <= MAX_SHARDS:
        raise ValueError(f"{text!r}: N must be between 1 and {MAX_SHARDS}")
    if not 1 <= i <= n:
        raise ValueError(f"{text!r}: the shard I must be between 1 and N")
    return i, n


def load_durations(path: Path) -> tuple[dict[str, float], str]:
    """A durations snapshot, ``{node id: seconds}`` (pytest-split's ``.test_durations``), and how
    the record names it (its path and digest). ValueError saying what is wrong with it."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if isinstance(doc, list):        # pytest-split's older format: [[node id, seconds], ...]
        if not all(isinstance(p, list) and len(p) == 2 for p in doc):
            raise ValueError(f"{path}: a list, but not of [node id, seconds] pairs")
        doc = dict(doc)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not an object of node id -> seconds")
    out = {}
    for k, v in doc.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, (int, float)) \
                or not math.isfinite(v) or v < 0:
            raise ValueError(f"{path}: {k!r}: {v!r} is not a number of seconds >= 0")
        out[k] = float(v)
    return out, f"{path} (sha256 {hashlib.sha256(raw).hexdigest()[:16]}, {len(out)} durations)"


def _costs(seconds: Sequence[Optional[float]]) -> list[float]:
    known = [s for s in seconds if s is not None and s >= 0]
    fill = median(known) if known else 1.0
    return [fill if s is None or s < 0 else s for s in seconds]


def assign(keys: Sequence[str], seconds: Sequence[Optional[float]], n: int) -> list[int]:
    """The shard (0-based) of each key; the same keys and seconds in any order give the same
    shard per key."""
    cost = _costs(seconds)
    order = sorted(range(len(keys)), key=lambda i: (-cost[i], keys[i]))
    heap = [(0.0, j) for j in range(min(n, len(keys)))]
    out = [0] * len(keys)
    for i in order:
        load, j = heapq.heappop(heap)
        out[i] = j
        heapq.heappush(heap, (load + cost[i], j))
    return out


def loads(seconds: Sequence[Optional[float]], shards: Sequence[int], n: int) -> list[float]:
    """The expected seconds of each shard (unknown durations as in assign)."""
    out = [0.0] * n
    for s, j in zip(_costs(seconds), shards):
        out[j] += s
    return out


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, separators=(",", ":")).encode()).hexdigest()


def selection_digest(keys: Sequence[str]) -> str:
    """The whole selection's digest: its node ids, in no particular order."""
    return _sha(sorted(keys))


def split_digest(keys: Sequence[str], shards: Sequence[int], n: int) -> str:
    """The whole split's digest: N and every node id with its shard (the same for every shard)."""
    return _sha([n, sorted(zip(keys, shards))])


def record(i: int, n: int, keys: Sequence[str], shards: Sequence[int], durations: str) -> dict:
    """What a shard's results.json session says about its split (hardware/results/tiling.py reads it)."""
    return {"shard": [i, n],
            "selection": {"sha256": selection_digest(keys), "tests": len(keys)},
            "split": {"sha256": split_digest(keys, shards, n), "tests": sum(1 for s in shards if s == i - 1),
                      "durations": durations}}
