"""``--shard I/N``: this runner's share of the selected tests, balanced by the durations the
history holds, so N runners that each run their share finish together.

Every runner computes the same split from the same inputs (the selected node ids, the durations),
so the shards are disjoint and cover the selection; ``merge`` of their results.json stays as it
is. The split is the longest-processing-time rule (longest first, each to the shard with the
least work so far), which ends within 4/3 of the best possible makespan. A test the history has
no duration for counts as the median of the known ones (1 s when none is known).
"""
from __future__ import annotations

import heapq
import re
from statistics import median
from typing import Sequence

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse(text: str) -> tuple[int, int]:
    """``I/N`` with 1 <= I <= N, as (I, N); ValueError saying what is wrong."""
    m = _SPEC.match(text or "")
    if not m:
        raise ValueError(f"{text!r} is not I/N (e.g. 2/4: the second of four shards)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= i <= n:
        raise ValueError(f"{text!r}: the shard I must be between 1 and N")
    return i, n


def assign(keys: Sequence[str], seconds: Sequence[float | None], n: int) -> list[int]:
    """The shard (0-based) of each key."""
    known = [s for s in seconds if s is not None and s >= 0]
    fill = median(known) if known else 1.0
    cost = [fill if s is None or s < 0 else s for s in seconds]
    order = sorted(range(len(keys)), key=lambda i: (-cost[i], keys[i]))
    heap = [(0.0, j) for j in range(n)]
    out = [0] * len(keys)
    for i in order:
        load, j = heapq.heappop(heap)
        out[i] = j
        heapq.heappush(heap, (load + cost[i], j))
    return out


def loads(seconds: Sequence[float | None], shards: Sequence[int], n: int) -> list[float]:
    """The expected seconds of each shard (unknown durations as in assign)."""
    known = [s for s in seconds if s is not None and s >= 0]
    fill = median(known) if known else 1.0
    out = [0.0] * n
    for s, j in zip(seconds, shards):
        out[j] += fill if s is None or s < 0 else s
    return out
