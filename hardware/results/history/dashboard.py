"""history.html: one self-contained page generated from the history (no server, no file beside
it, so a CI artifact opens as it is): the family x device matrix over the last runs, the flaky
list and the open regressions with their last good and first bad runs. Every text from the
history is HTML-escaped; the one script only filters rows by what is typed in the box."""
from __future__ import annotations

import html
from datetime import datetime, timezone
from pathlib import Path

from accel_regress.results.history import questions as Q
from accel_regress.results.history.rows import BAD, GOOD
from accel_regress.results.history.store import History
from accel_regress.util.atomic import write_atomic

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .m td.c{width:18px;text-align:center;padding:0;font-size:11px}
.good{background:#3a3} .bad{background:#d33;color:#fff} .mixed{background:#e90} .none{background:#eee}
.skip{background:#aaa} .tl span{display:inline-block;width:10px;height:12px;margin-right:1px}
.muted{color:#777} #filter{margin:.5em 0;padding:3px;width:24em}
"""

_JS = """
document.getElementById('filter').addEventListener('input', function (e) {
  var q = e.target.value.toLowerCase();
  document.querySelectorAll('tr[data-row]').forEach(function (tr) {
    tr.style.display = tr.getAttribute('data-row').toLowerCase().indexOf(q) >= 0 ? '' : 'none';
  });
});
document.body.setAttribute('data-ready', '1');
"""


def _e(text) -> str:
    return html.escape("" if text is None else str(text))


def _cell_class(counts: dict) -> str:
    bad = sum(n for v, n in counts.items() if v in BAD)
    good = sum(n for v, n in counts.items() if v in GOOD)
    if bad and good:
        return "mixed"
    if bad:
        return "bad"
    if good:
        return "good"
    return "skip"


def _matrix(runs: list, cells: dict) -> list[str]:
    if not runs:
        return ["<p class=muted>No runs in the history yet.</p>"]
    out = ["<table class=m id=matrix><tr><th>family</th><th>device</th>"]
    out += [f"<th class=c title='{_e(r.label())}'>{i + 1}</th>" for i, r in enumerate(runs)]
    out.append("</tr>")
    for (family, device), per in sorted(cells.items()):
        row = [f"<tr data-row='{_e(family)} {_e(device)}'><td>{_e(family)}</td><td>{_e(device)}</td>"]
        for r in runs:
            counts = per.get(r.id)
            if not counts:
                row.append("<td class='c none'></td>")
                continue
            bad = sum(n for v, n in counts.items() if v in BAD)
            title = f"{r.label()}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
            row.append(f"<td class='c {_cell_class(counts)}' title='{_e(title)}'>{bad or ''}</td>")
        out.append("".join(row) + "</tr>")
    out.append("</table>")
    out.append("<p class=muted>Columns: the last runs, oldest first (hover for the run); a number is "
               "the failures in that run.</p>")
    return out


def _timeline(seq: list) -> str:
    spans = []
    for run, verdict in seq:
        cls = "bad" if verdict in BAD else "good" if verdict in GOOD else "skip"
        spans.append(f"<span class={cls} title='{_e(run.label())}: {_e(verdict)}'></span>")
    return f"<span class=tl>{''.join(spans)}</span>"


def render(history: History, runs: int = 30, window: int = 20, with_faults: bool = False) -> str:
    shown, cells = Q.matrix(history, runs, with_faults)
    flaky = Q.flaky(history, runs=window, with_faults=with_faults)
    regs, left = Q.regressions(history, with_faults=with_faults, window=window)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    faults = "fault runs included" if with_faults else "runs with an injected fault left out"
    out = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
           "<title>accel-regress history</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>accel-regress history</h1>",
           f"<p id=summary>{len(flaky)} flaky, {len(regs)} open regression(s), {len(shown)} run(s) shown</p>",
           f"<p class=muted>{_e(history.where)}; {faults}; generated {now}</p>",
           "<input id=filter placeholder='filter rows (test, family, device)' aria-label=filter>",
           "<h2>Family x device over time</h2>"]
    out += _matrix(shown, cells)
    out.append(f"<h2 id=flaky-head>Flaky ({len(flaky)})</h2>")
    if flaky:
        out.append("<table id=flaky><tr><th>test</th><th>device</th><th>flip rate</th><th>failed</th>"
                   "<th>runs, oldest first</th></tr>")
        for f in flaky:
            out.append(f"<tr data-row='{_e(f.test)} {_e(f.device)}'><td>{_e(f.test)}</td><td>{_e(f.device)}</td>"
                       f"<td>{f.rate:.2f} ({f.flips} flips in {f.runs} runs)</td><td>{f.failed}/{f.runs}</td>"
                       f"<td>{_timeline(f.timeline)}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p class=muted>No test flipped in the window.</p>")
    out.append(f"<h2 id=regressions-head>Open regressions ({len(regs)})</h2>")
    if regs:
        out.append("<table id=regressions><tr><th>test</th><th>device</th><th>now</th><th>last good</th>"
                   "<th>first bad</th><th>what changed</th></tr>")
        for r in regs:
            out.append(f"<tr data-row='{_e(r.test)} {_e(r.device)}'><td>{_e(r.test)}</td><td>{_e(r.device)}</td>"
                       f"<td>{_e(r.verdict)} ({r.bad_runs} failing run(s))</td><td>{_e(r.last_good.label())}</td>"
                       f"<td>{_e(r.first_bad.label())}</td><td>{_e('; '.join(r.changes) or 'nothing recorded')}</td></tr>")
        out.append("</table>")
    else:
        out.append("<p class=muted>No open regression.</p>")
    if left["flaky"] or left["never_green"]:
        out.append(f"<p class=muted>Failing now but not listed: {left['flaky']} known flaky, "
                   f"{left['never_green']} never green in the history.</p>")
    out.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(out) + "\n"


def write(history: History, path: Path, **kw) -> Path:
    write_atomic(Path(path), render(history, **kw))
    return Path(path)
