"""Reports a person reads: ``summary.md`` and ``index.html`` (opens from disk, no server), with a
PNG heatmap of |got - expected| / allowed for every failure that has a census; ``matrix.csv`` and
``matrix-<device>.csv``; ``pr-comment.md`` for a pull request. Every one opens with the gate's
verdict (accel_regress.results.gate.evaluate, the code of ``python -m accel_regress gate``) and, for a run with an
injected fault, the banner that says it is not a release run.

Written into the report directory at the end of every session (hardware/plugin/reports.py), and
by ``python -m accel_regress report RESULTS.json [--out DIR]`` for any results.json, merged ones too.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path
from typing import Optional

from accel_regress.results import gate, record as results
from accel_regress.results.report import csv_export, heatmap, html, markdown, pr_comment
from accel_regress.results.report.tables import Model, slug
from accel_regress.core import own_folder

MAX_HEATMAPS = 100
MAX_KNOWN_HEATMAPS = 12


def _heatmaps(m: Model, base: Path, out: Path, notes: list[str]) -> dict[str, str]:
    """Render a PNG for every FAIL / XFAIL whose record points at a saved ratio map."""
    done: dict[str, str] = {}
    # Every failure (up to MAX_HEATMAPS); known bugs (XFAIL) fail the same way every run, so a few.
    has = [c for c in m.problems if (c.get("detail") or {}).get("heatmap")]
    known = [c for c in m.known if (c.get("detail") or {}).get("heatmap")][:MAX_KNOWN_HEATMAPS]
    wanted = has + known
    if not wanted:
        return done
    if not heatmap.can_draw():
        notes.append("heatmaps not drawn: matplotlib is not installed (pip install matplotlib)")
        return done
    try:
        own_folder.own_subdir(out, "heatmaps")       # never written through a planted link
    except OSError as exc:
        notes.append(f"heatmaps not drawn: {exc.strerror or exc}")
        return done
    for c in wanted[:MAX_HEATMAPS]:
        info = c["detail"]["heatmap"]
        src = f"{base}/{info.get('array')}"
        png_rel = f"heatmaps/{slug(c)}.png"
        try:
            ratio = heatmap.load(io.BytesIO(results.read_member(base, info.get("array"))))
            over = int((ratio > 1.0).sum())
            census = (c.get("census") or [{}])[0]
            where = ""
            if census.get("over_tolerance"):
                from accel_regress.results.report.tables import census_lines
                where = next((ln for ln in census_lines(census) if ln.startswith("Where:")), "")
            heatmap.render(ratio, out / png_rel,
                           title=f"{c['verdict']} {c['device']}  {c['key']}\n{info.get('name', '')}: "
                                 f"{info['shape'][0]} x {info['shape'][1]}",
                           subtitle=where or f"{over} block(s) over tolerance",
                           shape=info.get("shape"), block=info.get("block", (1, 1)))
            done[slug(c)] = png_rel
        except (OSError, ValueError, KeyError, TypeError) as exc:   # PathRefused is a ValueError
            notes.append(f"no heatmap for {c['nodeid']}: {src}: {exc}")
    if len(wanted) > MAX_HEATMAPS:
        notes.append(f"heatmaps drawn for the first {MAX_HEATMAPS} of {len(wanted)} failures")
    if len(m.known) > MAX_KNOWN_HEATMAPS:
        notes.append(f"heatmaps drawn for {len(known)} of {len(m.known)} known bugs (XFAIL)")
    return done


def write_all(data: dict, out: Path, base: Optional[Path] = None, expectations: Optional[dict] = None,
              verdict: Optional[gate.Verdict] = None, baseline: Optional[dict] = None,
              policy: Optional[gate.Policy] = None, allow_fault: bool = False, link_base: str = "",
              pending: tuple = ()) -> dict:
    """Write summary.md, index.html, heatmaps/, the CSV matrices and pr-comment.md into ``out``.

    ``verdict`` is the gate's answer; when not given it is computed here from ``baseline``,
    ``policy`` and ``allow_fault`` exactly as ``python -m accel_regress gate`` computes it. ``pending``:
    names of files in ``base`` that are written just after (junit.xml), linked all the same."""
    out = Path(out)
    base = Path(base or out)
    if expectations is None and (base / "expectations.json").is_file():
        try:
            expectations = json.loads((base / "expectations.json").read_text())
        except (OSError, json.JSONDecodeError):
            expectations = None
    if verdict is None:
        verdict = gate.evaluate(data, baseline, policy, allow_fault=allow_fault)
    m = Model(data, verdict)
    notes: list[str] = []
    maps = _heatmaps(m, base, out, notes)
    trend_md, trend_html = _trend(out)
    md = markdown.render(m, maps, expectations, extra=trend_md)
    if notes:
        md += "\n" + "\n".join(f"- note: {markdown.md_text(n)}" for n in notes) + "\n"
    results.write_atomic(out / "summary.md", md)
    csvs = csv_export.write(m, out)
    results.write_atomic(out / "pr-comment.md", pr_comment.render(m, baseline, link_base))
    links = [("summary.md", "summary.md"), ("matrix.csv", "matrix.csv"), ("pr-comment.md", "pr-comment.md")]
    for name in ("results.json", "junit.xml", "expectations.json"):
        if (base / name).is_file() or name in pending:
            links.append((name, os.path.relpath(base / name, out)))
    results.write_atomic(out / "index.html", html.render(m, maps, links, expectations, extra=trend_html))
    return {"summary": out / "summary.md", "index": out / "index.html", "pr_comment": out / "pr-comment.md",
            "csv": csvs, "heatmaps": [out / p for p in maps.values()], "notes": notes, "verdict": verdict}


def _trend(out: Path) -> tuple[list[str], list[str]]:
    """The pass-rate plot of ``python -m accel_regress trend`` when it was written into this folder."""
    if not (out / "trend.png").is_file():
        return [], []
    md = ["## Trend", "", "![pass rate per family and device over time](trend.png)", ""]
    if (out / "trend.md").is_file():
        md.insert(3, "Verdict changes: [trend.md](trend.md)")
    page = ["<h2>Trend</h2><p><a href='trend.md'>verdict changes</a></p>",
            "<img src='trend.png' alt='pass rate per family and device over time'>"]
    return md, page


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress report",
                                description="Write summary.md, index.html and heatmaps for a results.json.")
    p.add_argument("results", help="a results.json (one runner's or a merged one)")
    p.add_argument("--out", default=None, help="output directory (default: the results file's directory)")
    p.add_argument("--baseline", help="an earlier results.json: the verdict says what is new (as gate --baseline)")
    p.add_argument("--policy", help="release policy TOML for the verdict (as gate --policy)")
    p.add_argument("--allow-fault", action="store_true", help="as gate --allow-fault")
    p.add_argument("--link-base", default="", help="URL the links of pr-comment.md start with (a CI artifact)")
    args = p.parse_args(argv)
    path = Path(args.results)
    try:
        data = results.load(path)
        baseline = results.load(Path(args.baseline)) if args.baseline else None
        policy = gate.load_policy(Path(args.policy)) if args.policy else None
    except (results.ResultsError, gate.PolicyError) as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    written = write_all(data, Path(args.out) if args.out else path.parent, base=path.parent,
                        baseline=baseline, policy=policy, allow_fault=args.allow_fault, link_base=args.link_base)
    for line in written["verdict"].lines():
        print(line)
    for note in written["notes"]:
        print(f"note: {note}")
    print(f"{written['index']}  {written['summary']}  {written['pr_comment']}  "
          f"({len(written['heatmaps'])} heatmap(s), {len(written['csv'])} CSV file(s))")
    print(Model(data, written["verdict"]).headline())
    return 0      # a report is written whatever the verdicts; `python -m accel_regress gate` decides
