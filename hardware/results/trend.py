"""``python -m accel_regress trend DIR_OR_FILES... [--out DIR]``: history over a series of results.json
(several nights, several runners).

Prints, per test and device, every run where its verdict changed, with the toolchain / driver /
firmware versions on either side of the change (those that differ, else the ones that stayed), so
"FAIL since the night qemu went 7.2 -> 8.2" reads off directly. With ``--out`` it also writes
trend.md (the same) and trend.png, the pass rate per family and device over time, which the
report of that folder embeds (``python -m accel_regress report``).

Pass rate: PASS over the cases that ran (SKIP and NOT_APPLICABLE left out); a known bug that
failed as expected (XFAIL) is not a pass.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from accel_regress.results import record as results
from accel_regress.core import verdicts
from accel_regress.util.atomic import write_atomic
from accel_regress.results.keys import device_of, test_key

_SHOWN_SAME = 4       # versions listed when none changed


@dataclass
class Run:
    path: Path
    label: str           # when and where: "2026-11-21T02:00 on runner-a"
    started: str
    data: dict


def _files(args: list[str]) -> tuple[list[Path], list[str]]:
    files, notes = [], []
    for a in args:
        p = Path(a)
        if p.is_dir():
            found = sorted(p.rglob("results.json"))
            if not found:
                notes.append(f"{p}: no results.json under it")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            notes.append(f"{p}: no such file or directory")
    return files, notes


def load_runs(args: list[str]) -> tuple[list[Run], list[str]]:
    files, notes = _files(args)
    runs = []
    for path in files:
        try:
            data = results.load(path)
        except results.ResultsError as exc:
            notes.append(f"skipped: {exc}")
            continue
        s = data.get("session") or {}
        started = str(s.get("started") or "")
        runs.append(Run(path, f"{started or '?'} on {s.get('host') or '?'} ({path})", started, data))
    runs.sort(key=lambda r: (r.started, str(r.path)))
    return runs, notes


def _versions(c: dict) -> dict:
    v = c.get("versions")
    return {str(k): str(x) for k, x in v.items()} if isinstance(v, dict) else {}


def series(runs: list[Run]) -> dict[tuple[str, str], list[tuple[int, dict]]]:
    """(test key, device) -> [(run index, case)] in run order."""
    out: dict = defaultdict(list)
    for i, run in enumerate(runs):
        for c in run.data["cases"]:
            out[(test_key(c["nodeid"], c.get("backend")), device_of(c, run.data))].append((i, c))
    return dict(sorted(out.items()))


def _version_words(before: dict, after: dict) -> str:
    changed = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    if changed:
        return "; ".join(f"{k} {before.get(k, '-')} -> {after.get(k, '-')}" for k in changed)
    same = sorted(before)[:_SHOWN_SAME]
    return ("no version changed (" + ", ".join(f"{k} {before[k]}" for k in same)
            + (", ..." if len(before) > _SHOWN_SAME else "") + ")") if same else "no versions recorded"


def changes(runs: list[Run]) -> list[str]:
    lines = []
    for (key, device), seen in series(runs).items():
        for (i, a), (j, b) in zip(seen, seen[1:]):
            if a["verdict"] != b["verdict"]:
                lines.append(f"{key} on {device}: {a['verdict']} -> {b['verdict']} between {runs[i].label} and "
                             f"{runs[j].label}; {_version_words(_versions(a), _versions(b))}")
    return lines


def pass_rates(runs: list[Run]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """(family, device) -> [(run index, pass rate)] for every run where that pair ran a case."""
    out: dict = defaultdict(list)
    for i, run in enumerate(runs):
        counts: dict = defaultdict(lambda: [0, 0])
        for c in run.data["cases"]:
            if c["verdict"] in verdicts.NOT_RUN:
                continue
            cell = counts[(c.get("family") or "?", device_of(c, run.data))]
            cell[0] += c["verdict"] == verdicts.PASS
            cell[1] += 1
        for pair, (passed, ran) in counts.items():
            out[pair].append((i, passed / ran))
    return dict(sorted(out.items()))


def plot(runs: list[Run], png: Path) -> Optional[str]:
    """Write the pass-rate plot; returns why not when it cannot."""
    try:
        import matplotlib
        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError:
        return "trend.png not drawn: matplotlib is not installed (pip install matplotlib)"
    rates = pass_rates(runs)
    fig = Figure(figsize=(10, 5), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    for (family, device), points in rates.items():
        xs, ys = zip(*points)
        ax.plot(xs, [100 * y for y in ys], marker="o", label=f"{family} · {device}")
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([(r.started or "?")[:16] for r in runs], rotation=30, ha="right", fontsize=7)
    ax.set_ylim(-5, 105)
    ax.set_ylabel("pass rate, % of cases that ran")
    ax.set_title("pass rate per family and device over time", fontsize=10, loc="left")
    if rates:
        ax.legend(fontsize=7, loc="lower left")
    fig.subplots_adjust(bottom=0.22)
    png.parent.mkdir(parents=True, exist_ok=True)
    tmp = png.with_name(f".{png.name}.tmp.png")
    fig.savefig(tmp, format="png")
    tmp.replace(png)
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress trend",
                                description="When each test's verdict changed over a series of results.json, "
                                            "with the versions on either side; a pass-rate plot.")
    p.add_argument("inputs", nargs="+", metavar="DIR_OR_FILE", help="results.json files, or folders holding them")
    p.add_argument("--out", default=None, help="folder for trend.md and trend.png (a report folder embeds them)")
    args = p.parse_args(argv)
    runs, notes = load_runs(args.inputs)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if not runs:
        print("trend: no readable results.json among the inputs", file=sys.stderr)
        return 2
    lines = changes(runs)
    head = f"{len(runs)} run(s) from {runs[0].started or '?'} to {runs[-1].started or '?'}: {len(lines)} verdict change(s)"
    print(head)
    for line in lines:
        print(f"  {line}")
    if args.out:
        out = Path(args.out)
        write_atomic(out / "trend.md", "# Verdict changes\n\n" + head + "\n\n" + "".join(f"- {ln}\n" for ln in lines))
        why = plot(runs, out / "trend.png")
        print(why or f"wrote {out / 'trend.md'} and {out / 'trend.png'}")
    return 0
