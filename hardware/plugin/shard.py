"""``--shard I/N`` in a session (the split itself: hardware/results/history/shard.py).

The snapshot is read once, in the controller, and handed to xdist workers (each worker deselects
the same way, so xdist's check that its workers collected the same tests holds). The session's
results.json gets ``shard``, ``selection`` and ``split`` (from the worker that collected, under
xdist: the controller collects nothing)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest


@dataclass
class _Split:
    i: int
    n: int
    durations: dict = field(default_factory=dict)     # node id -> seconds, the snapshot
    source: str = "no durations snapshot: balanced by test count"
    record: Optional[dict] = None                     # shard.record(...) once collected


_SPLIT = pytest.StashKey[Optional[_Split]]()


def _snapshot(config) -> tuple[dict, str]:
    from accel_regress.results.history import shard
    given = config.getoption("accel_shard_durations", None)
    path = Path(given) if given else config.rootpath / shard.DURATIONS_FILE
    if not given and not path.is_file():
        return {}, f"no {shard.DURATIONS_FILE} in {config.rootpath}: balanced by test count"
    try:
        return shard.load_durations(path)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard-durations: {exc}") from None


def pytest_configure(config):
    from accel_regress.results.history import shard
    spec = config.getoption("accel_shard", None)
    config.stash[_SPLIT] = None
    if config.getoption("accel_shard_durations", None) and not spec:
        raise pytest.UsageError("--shard-durations: it is read only with --shard I/N")
    if not spec:
        return
    try:
        i, n = shard.parse(spec)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard: {exc}") from None
    split = config.stash[_SPLIT] = _Split(i, n)
    if hasattr(config, "workerinput"):
        split.durations = dict(config.workerinput.get("accel_shard_durations") or {})
        split.source = config.workerinput.get("accel_shard_source", split.source)
    else:
        split.durations, split.source = _snapshot(config)


def _split(config) -> Optional[_Split]:
    return config.stash.get(_SPLIT, None)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist: every worker splits with the controller's snapshot."""
    split = _split(node.config)
    if split:
        node.workerinput["accel_shard_durations"] = split.durations
        node.workerinput["accel_shard_source"] = split.source


@pytest.hookimpl(trylast=True)      # after -k / -m and the other plugins have deselected
def pytest_collection_modifyitems(session, config, items):
    split = _split(config)
    if not split:
        return
    from accel_regress.results.history import shard
    keys = [item.nodeid for item in items]
    shards = shard.assign(keys, [split.durations.get(k) for k in keys], split.n)
    split.record = shard.record(split.i, split.n, keys, shards, split.source)
    keep = [it for it, s in zip(items, shards) if s == split.i - 1]
    drop = [it for it, s in zip(items, shards) if s != split.i - 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    if hasattr(config, "workeroutput"):
        config.workeroutput["accel_shard"] = split.record
    else:
        _into_record(config, split.record)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    split = _split(node.config)
    found = (getattr(node, "workeroutput", None) or {}).get("accel_shard")
    if split and found and split.record is None:
        split.record = found
        _into_record(node.config, found)


def _into_record(config, found: dict) -> None:
    from accel_regress.plugin import recording
    sink = recording.sink(config)
    if sink is not None:
        sink.session.update(found)


def pytest_report_header(config):
    split = _split(config)
    if split:
        return [f"accel-regress: shard {split.i}/{split.n}, {split.source}"]
    return []
