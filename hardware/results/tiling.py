"""Do shard records tile their selection? ``merge`` refuses shards that do not, and the gate
refuses a lone shard or a merge of shards that do not, as a release decision (issue 34 item 1).

A shard's session says ``shard: [i, n]``, ``selection`` (the digest and count of the whole
selection) and ``split`` (the digest of the whole assignment, the count of its own share); see
hardware/results/history/shard.py. Shards of one device column (a merge label, else the devices
the record's cases ran on) must be: all shards (no whole run beside them), of one split of one
selection, each index 1..N exactly once, their shares adding up to the selection, and (where the
cases are at hand) no test in two of them, each holding the tests its split gives it (a record
with cases removed or added is not its share), and all run with the same golden seed, revision
and fault: shards of different inputs or code are not one run (issue 47 defect 8).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional

SHARD_FIELDS = ("shard", "selection", "split")


def shard_of(session: dict) -> Optional[tuple[int, int]]:
    s = session.get("shard") if isinstance(session, dict) else None
    if isinstance(s, list) and len(s) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in s):
        return s[0], s[1]
    return None


def _digest(source: dict, what: str) -> Optional[str]:
    d = source.get(what)
    return d.get("sha256") if isinstance(d, dict) else None


def _count(source: dict, what: str) -> Optional[int]:
    d = source.get(what)
    n = d.get("tests") if isinstance(d, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _name(source: dict) -> str:
    sh = shard_of(source)
    return f"{source.get('file') or 'the record'}" + (f" (shard {sh[0]}/{sh[1]})" if sh else " (a whole run)")


def _group_key(source: dict) -> tuple:
    label = source.get("label")
    return (label,) if label else tuple(sorted(source.get("devices") or ()))


def problems(sources: Iterable[dict], nodeids: Optional[dict] = None) -> list[str]:
    """Why these runs (merge inputs, or a merged record's ``merged_from``) do not tile their
    selections, one line per problem; [] when no source is a shard or the shards tile exactly.
    ``nodeids``: {file: the node ids its cases ran}, to name a test run by two shards."""
    sources = list(sources)
    if not any(shard_of(s) for s in sources):
        return []
    groups: dict[tuple, list] = defaultdict(list)
    for s in sources:
        groups[_group_key(s)].append(s)
    # A shard with no case has no device: it belongs with the shards of its split.
    for key in [k for k in groups if k == ()]:
        for s in groups.pop(key):
            home = next((k for k, g in groups.items() if any(_digest(x, "split") == _digest(s, "split") for x in g)), ())
            groups[home].append(s)
    out = []
    for key, group in sorted(groups.items()):
        where = f"on {', '.join(key)}: " if key else ""
        out += [where + p for p in _group_problems(group, nodeids or {})]
    return out


def _group_problems(group: list[dict], nodeids: dict) -> list[str]:
    shards = [s for s in group if shard_of(s)]
    if not shards:
        return []
    whole = [s for s in group if not shard_of(s)]
    out = []
    if whole:
        out.append(f"{', '.join(_name(s) for s in whole)} beside shards of the same device(s) "
                   f"({', '.join(_name(s) for s in shards)}): a test would count twice")
    splits = defaultdict(list)
    for s in shards:
        splits[(shard_of(s)[1], _digest(s, "selection"), _digest(s, "split"))].append(s)
    if len(splits) > 1:
        said = "; ".join(f"{', '.join(_name(s) for s in ss)}: {n} shards of selection {(sel or '?')[:12]} "
                         f"({_count(ss[0], 'selection')} tests), split {(sp or '?')[:12]}"
                         for (n, sel, sp), ss in sorted(splits.items(), key=lambda kv: str(kv[0])))
        out.append(f"shards of different splits (each runner must split the same selection the same way: "
                   f"same tests, same N, same --shard-durations): {said}")
        return out
    (n, _, _), = splits
    # The same split run on other inputs or other code is not one run either.
    for field_name, what in (("golden_seed", "golden seeds (--golden-seed)"), ("revision", "revisions"),
                             ("fault", "injected faults")):
        values = {str(s.get(field_name)) for s in shards}
        if len(values) > 1:
            out.append(f"shards of different {what}: " + "; ".join(f"{_name(s)}: {s.get(field_name)}" for s in shards))
    for s in shards:
        held, share = nodeids.get(s.get("file")), _count(s, "split")
        if held is not None and share is not None and not s.get("interrupted") and len(set(held)) != share:
            out.append(f"{_name(s)} holds {len(set(held))} test(s), its split gives it {share}: "
                       "the record is not its shard's (cases removed or added)")
    by_index = defaultdict(list)
    for s in shards:
        by_index[shard_of(s)[0]].append(s)
    for i, ss in sorted(by_index.items()):
        if len(ss) > 1:
            out.append(f"shard {i}/{n} given {len(ss)} times: {', '.join(str(s.get('file')) for s in ss)}")
    missing = [i for i in range(1, n + 1) if i not in by_index]
    total = _count(shards[0], "selection")
    if missing:
        have = sum(_count(ss[0], "split") or 0 for ss in by_index.values())
        lack = f": {total - have} of the selection's {total} tests never ran" if total is not None else ""
        out.append(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing{lack}")
    elif total is not None and sum(_count(ss[0], "split") or 0 for ss in by_index.values()) != total:
        out.append(f"the shards' shares add up to {sum(_count(ss[0], 'split') or 0 for ss in by_index.values())} "
                   f"tests, the selection has {total}: the records do not match their split")
    seen: dict[str, str] = {}
    twice = []
    for s in shards:
        for nid in nodeids.get(s.get("file"), ()):
            if nid in seen and seen[nid] != s.get("file"):
                twice.append(f"{nid} ({seen[nid]} and {s.get('file')})")
            seen.setdefault(nid, s.get("file"))
    if twice:
        out.append(f"{len(twice)} test(s) ran in two shards: {'; '.join(twice[:5])}"
                   + (f"; and {len(twice) - 5} more" if len(twice) > 5 else ""))
    return out


def lone_shard(session: dict) -> Optional[str]:
    """The gate's refusal of a shard's own record (not a merge of all its shards), or None."""
    sh = shard_of(session)
    if sh is None or session.get("merged_from"):
        return None
    i, n = sh
    total = _count(session, "selection")
    share = _count(session, "split")
    counts = f" ({share} of the selection's {total} tests)" if total is not None and share is not None else ""
    return (f"this record is shard {i}/{n} alone{counts}: not a release decision; gate the merge of all {n} "
            f"shards (python -m accel_regress merge ... -o merged/results.json)")
