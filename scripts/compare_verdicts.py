#!/usr/bin/env python3
"""Compare the per-case verdicts of two results.json files (e.g. before and after a change).

    python scripts/compare_verdicts.py BEFORE/results.json AFTER/results.json

Cases are matched by node id (which names the backend). Prints every case whose verdict differs,
and every case only one file has; exits 1 if there is any, 0 if every verdict is the same, 2 when a
file cannot be read as a results.json.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def verdicts(path: str) -> dict[str, str]:
    data = json.loads(Path(path).read_text())
    cases = data["cases"]
    out: dict[str, str] = {}
    for c in cases:
        if c["nodeid"] in out:
            raise ValueError(f"{path}: {c['nodeid']} is recorded twice")
        out[c["nodeid"]] = c["verdict"]
    return out


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    lines = []
    for nodeid in sorted(set(before) | set(after)):
        b, a = before.get(nodeid), after.get(nodeid)
        if b == a:
            continue
        if b is None:
            lines.append(f"only after:  {nodeid}: {a}")
        elif a is None:
            lines.append(f"only before: {nodeid}: {b}")
        else:
            lines.append(f"changed:     {nodeid}: {b} -> {a}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        before, after = verdicts(argv[0]), verdicts(argv[1])
    except (OSError, ValueError, KeyError, TypeError) as exc:   # JSONDecodeError is a ValueError
        print(f"compare_verdicts: cannot read the results: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    lines = differences(before, after)
    for line in lines:
        print(line)
    tally = lambda v: ", ".join(f"{k} {n}" for k, n in sorted(Counter(v.values()).items()))
    print(f"{len(before)} cases before ({tally(before)}); {len(after)} after ({tally(after)}); "
          f"{len(lines)} differ")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
