"""history.html: a release manager's page, generated from the history as one self-contained file
(no server, no file beside it, so a CI artifact opens as it is).

First the newest run and its verdict, read from the history the way ``gate --baseline history``
reads it with the default policy: a failure that did not fail in its device's previous run is
*new*, one that did is *still failing* (both block), one whose outcome flips in the window is
*flaky* (reported, blocks only when it is a HANG or CRASH), an XPASS blocks (a known bug is fixed:
un-list it), an interrupted run blocks; a run with an injected fault is not a release run, and one
shard of a ``--shard`` split is not a release decision alone (merge all its shards, gate the merge).
The gate, with the project's policy and expectations, remains the authority: the page says so.

Then the known bugs of the newest run (XFAIL, with the expectation's reason and issue), the
family x device matrix over the runs, newest first, each column with its run, date, revision and
verdict, each cell's word and colour telling new / still failing / flaky / known / fault / ok /
skip apart (the word is on the page, not only in hover text), then the flaky list and the open
regressions. Every text from the history is HTML-escaped; the one script only filters rows.
"""
from __future__ import annotations

import html
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from sqlalchemy import func, select

from accel_regress.core import verdicts
from accel_regress.results.history import questions as Q
from accel_regress.results.history import schema as S
from accel_regress.results.history.rows import BAD, GOOD
from accel_regress.results.history.store import _CHUNK, History
from accel_regress.util.atomic import write_atomic

# A cell's kind, worst first: its word on the page and its colour (CSS class of the same name).
KINDS = ("fault", "new", "failing", "xpass", "flaky", "known", "ok", "skip")
WORDS = {"fault": "fault", "new": "new", "failing": "still failing", "xpass": "XPASS", "flaky": "flaky",
         "known": "known", "ok": "ok", "skip": "skip"}
_NEVER_DOWNGRADED = (verdicts.HANG, verdicts.CRASH)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em} h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse} td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f4f4f4} .m td.c{text-align:center;font-size:11px;white-space:nowrap}
.m th.c{font-size:11px;font-weight:normal;white-space:nowrap}
.ok{background:#3a3;color:#fff} .new{background:#d33;color:#fff;font-weight:bold} .failing{background:#922;color:#fff}
.flaky{background:#f2b01e;color:#222} .known{background:#6a5acd;color:#fff} .xpass{background:#0aa;color:#fff}
.fault{background:repeating-linear-gradient(45deg,#555,#555 4px,#888 4px,#888 8px);color:#fff}
.skip{background:#ccc;color:#222} .none{background:#f6f6f6}
#verdict{font-size:1.3em;font-weight:bold;padding:.3em .6em;display:inline-block}
#verdict.ship{background:#3a3;color:#fff} #verdict.noship{background:#d33;color:#fff}
#verdict.notrelease{background:#555;color:#fff} b.v.ship{color:#282} b.v.noship{color:#c22} b.v.notrelease{color:#555}
.tl span{display:inline-block;width:10px;height:12px;margin-right:1px}
.tl .good{background:#3a3} .tl .bad{background:#d33} .tl .skip{background:#aaa}
.legend span{display:inline-block;padding:0 .4em;margin-right:.3em;font-size:12px}
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


@dataclass
class RunView:
    """One run as the page shows it: its place, its cells' kinds, and its verdict."""
    run: Q.Run
    shard: Optional[str] = None               # "I/N" of --shard, from its argv
    interrupted: bool = False
    cells: dict = field(default_factory=lambda: defaultdict(Counter))   # (family, device) -> kind -> n
    lists: dict = field(default_factory=lambda: defaultdict(list))      # kind -> ["test on device (VERDICT)"]
    known: list = field(default_factory=list)                            # (test, device, expectation dict)

    def verdict(self) -> tuple[str, str, list[str]]:
        """(css class, the head line, the reasons)."""
        if self.run.fault:
            return "notrelease", "NOT A RELEASE RUN", [f"fault {self.run.fault.rsplit('/', 1)[-1]} injected: it "
                                                       f"proves the checks, it is not a release run"]
        if self.shard:
            n = self.shard.split("/")[-1]
            return "notrelease", "NOT A RELEASE DECISION", [
                f"shard {self.shard} alone: merge the results.json of all {n} shards and gate the merge"]
        reasons = []
        for kind, what in (("new", "new failure(s), not failing in the device's previous run"),
                           ("failing", "failure(s) also failing in the device's previous run"),
                           ("xpass", "XPASS: known bug(s) fixed, un-list them"),
                           ("flaky-hang", "flaky HANG/CRASH (never downgraded)")):
            items = self.lists.get(kind) or []
            if items:
                reasons.append(f"{len(items)} {what}: " + "; ".join(items[:5])
                               + (f"; and {len(items) - 5} more" if len(items) > 5 else ""))
        if self.interrupted:
            reasons.append("the session was interrupted: its results are incomplete")
        if reasons:
            return "noship", f"DON'T SHIP: {len(reasons)} reason{'s' if len(reasons) != 1 else ''}", reasons
        return "ship", "SHIP", []

    def short(self) -> str:
        cls, head, _ = self.verdict()
        return {"ship": "SHIP", "noship": "DON'T SHIP"}.get(cls, "fault run" if self.run.fault else f"shard {self.shard}")


def _shard_of(argv_text: Optional[str]) -> Optional[str]:
    try:
        argv = json.loads(argv_text or "[]")
    except ValueError:
        return None
    if not isinstance(argv, list):
        return None
    for i, a in enumerate(argv):
        a = str(a)
        if a == "--shard" and i + 1 < len(argv):
            return str(argv[i + 1]).strip()
        if a.startswith("--shard="):
            return a.split("=", 1)[1].strip()
    return None


def _expectation(stats: Optional[str]) -> dict:
    try:
        doc = json.loads(stats or "{}")
    except ValueError:
        return {}
    exp = doc.get("expectation") if isinstance(doc, dict) else None
    return exp if isinstance(exp, dict) else {}


def _views(history: History, runs: int, flaky: set, with_faults: bool) -> list[RunView]:
    """The last ``runs`` runs, newest first, every case of theirs classified."""
    R, C, T, D = S.runs, S.cases, S.tests, S.devices
    with history.read() as conn:
        rs = Q.Runs(conn, with_faults)
        window = rs.order[-runs:]
        if not window:
            return []
        views = {i: RunView(rs.by_id[i]) for i in window}
        for i in range(0, len(window), _CHUNK):
            for run_id, argv, interrupted in conn.execute(
                    select(R.c.id, R.c.argv, R.c.interrupted).where(R.c.id.in_(window[i:i + _CHUNK]))):
                views[run_id].shard, views[run_id].interrupted = _shard_of(argv), bool(interrupted)
        # Each device's run before each shown run: where a failure was (not) failing already.
        previous: dict[tuple[int, str], int] = {}
        for label, (_, run_ids) in rs.devices.items():
            for before, run_id in zip(run_ids, run_ids[1:]):
                if run_id in views:
                    previous[(run_id, label)] = before
        # Passes and skips only counted (most of a run); the rest, few, one by one.
        told = (*BAD, verdicts.XFAIL, verdicts.XPASS)
        plain = []
        for i in range(0, len(window), _CHUNK):
            plain += conn.execute(
                select(T.c.family, D.c.label, C.c.run_id, C.c.verdict, func.count())
                .join(T, T.c.id == C.c.test_id).join(D, D.c.id == C.c.device_id)
                .where(C.c.run_id.in_(window[i:i + _CHUNK]), C.c.verdict.not_in(told))
                .group_by(T.c.family, D.c.label, C.c.run_id, C.c.verdict)).all()
        wanted = sorted(set(window) | set(previous.values()))
        failed_in: set = set()        # (run id, test key, device) that failed
        rows = []
        for i in range(0, len(wanted), _CHUNK):
            q = (select(C.c.run_id, T.c.key, T.c.family, D.c.label, C.c.verdict, C.c.stats)
                 .join(T, T.c.id == C.c.test_id).join(D, D.c.id == C.c.device_id)
                 .where(C.c.run_id.in_(wanted[i:i + _CHUNK]), C.c.verdict.in_(told)))
            for run_id, key, family, label, verdict, stats in conn.execute(q):
                if verdict in BAD:
                    failed_in.add((run_id, key, label))
                if run_id in views:
                    rows.append((run_id, key, family, label, verdict, stats))
    for family, label, run_id, verdict, n in plain:
        kind = "ok" if verdict in GOOD else "skip"
        views[run_id].cells[(family or "?", label)][kind] += int(n)
    for run_id, key, family, label, verdict, stats in rows:
        view = views[run_id]
        where = f"{key} on {label}"
        if view.run.fault and verdict in BAD:
            kind = "fault"
        elif verdict in BAD:
            if (key, label) in flaky:
                kind = "flaky"
                if verdict in _NEVER_DOWNGRADED:
                    view.lists["flaky-hang"].append(f"{verdict} {where}")
            else:
                before = previous.get((run_id, label))
                kind = "failing" if before is not None and (before, key, label) in failed_in else "new"
            view.lists[kind].append(f"{verdict} {where}")
        elif verdict == verdicts.XFAIL:
            kind = "known"
            view.known.append((key, label, _expectation(stats)))
        else:
            kind = "xpass"
            view.lists[kind].append(where)
        view.cells[(family or "?", label)][kind] += 1
    return [views[i] for i in reversed(window)]


def _column_head(v: RunView) -> str:
    r = v.run
    when = r.started.strftime("%Y-%m-%d %H:%M") if r.started else "date ?"
    rev = f"rev {r.revision[:10]}" if r.revision else "rev ?"
    cls, _, _ = v.verdict()
    return (f"<th class=c title='{_e(r.label())}'>{_e(r.key[:9])}<br>{_e(when)}<br>{_e(rev)}<br>"
            f"<b class='v {cls}'>{_e(v.short())}</b></th>")


def _cell(counts: Counter) -> str:
    if not counts:
        return "<td class='c none'></td>"
    worst = next(k for k in KINDS if counts.get(k))
    text = f"{WORDS[worst]} {counts[worst]}" if worst not in ("ok", "skip") else WORDS[worst]
    title = ", ".join(f"{counts[k]} {WORDS[k]}" for k in KINDS if counts.get(k))
    return f"<td class='c {worst}' data-kind='{worst}' title='{_e(title)}'>{_e(text)}</td>"


def _matrix(views: list[RunView]) -> list[str]:
    if not views:
        return ["<p class=muted>No runs in the history yet.</p>"]
    legend = "".join(f"<span class={k}>{WORDS[k]}</span>" for k in KINDS)
    out = [f"<p class=legend>Cells, worst first: {legend} (the word and its count are the worst kind in the "
           f"cell; hover for every count)</p>",
           "<table class=m id=matrix><tr><th>family</th><th>device</th>"]
    out += [_column_head(v) for v in views]
    out.append("</tr>")
    rows = sorted({k for v in views for k in v.cells})
    for family, device in rows:
        row = [f"<tr data-row='{_e(family)} {_e(device)}'><td>{_e(family)}</td><td>{_e(device)}</td>"]
        row += [_cell(v.cells.get((family, device), Counter())) for v in views]
        out.append("".join(row) + "</tr>")
    out.append("</table>")
    out.append("<p class=muted>Columns: the last runs, newest first: run, start (UTC), revision under test, "
               "verdict.</p>")
    return out


def _latest(views: list[RunView]) -> list[str]:
    if not views:
        return []
    v = views[0]
    cls, head, reasons = v.verdict()
    flaky = v.lists.get("flaky") or []
    out = ["<section id=latest>", f"<h2>Newest run: {_e(v.run.label())}</h2>",
           f"<div id=verdict class={cls}>{_e(head)}</div>", "<ul id=reasons>"]
    out += [f"<li>{_e(r)}</li>" for r in reasons]
    out.append("</ul>")
    if flaky and cls != "notrelease":
        out.append(f"<p id=flaky-now>Known flaky, not blocking: {len(flaky)}: {_e('; '.join(flaky[:10]))}</p>")
    out.append("<p class=muted>Read from the history with the default policy (a device's previous run as the "
               "baseline); <code>python -m accel_regress gate RESULTS.json --baseline history --policy ...</code> "
               "is the release decision.</p></section>")
    return out


def _known_bugs(views: list[RunView]) -> list[str]:
    known = views[0].known if views else []
    out = [f"<h2 id=known-head>Known bugs in the newest run ({len(known)})</h2>"]
    if not known:
        return out + ["<p class=muted>No known bug (XFAIL) in the newest run.</p>"]
    out.append("<table id=known><tr><th>test</th><th>device</th><th>reason</th><th>issue</th></tr>")
    for test, device, exp in sorted(known, key=lambda k: (k[1], k[0])):
        out.append(f"<tr data-row='{_e(test)} {_e(device)}'><td>{_e(test)}</td><td>{_e(device)}</td>"
                   f"<td>{_e(exp.get('reason') or '')}</td><td>{_e(exp.get('issue') or '')}</td></tr>")
    out.append("</table>")
    return out


def _timeline(seq: list) -> str:
    spans = []
    for run, verdict in seq:
        cls = "bad" if verdict in BAD else "good" if verdict in GOOD else "skip"
        spans.append(f"<span class={cls} title='{_e(run.label())}: {_e(verdict)}'></span>")
    return f"<span class=tl>{''.join(spans)}</span>"


def _projects(views: list) -> str:
    """The project(s) whose runs the page shows, for its heading: a history a fleet shares (or the
    user-wide one) holds several, and the page says whose runs these are."""
    names = sorted({v.run.project for v in views if v.run.project})
    return f": {_e(', '.join(names))}" if names else ""


def render(history: History, runs: int = 30, window: int = 20, with_faults: bool = False,
           show_faults: bool = False) -> str:
    """``with_faults``: runs with an injected fault count as evidence too (flaky, regressions);
    ``show_faults``: they are columns of the matrix all the same (a fault session's own page shows
    its run, issue 48), never counted."""
    flaky = Q.flaky(history, runs=window, with_faults=with_faults)
    views = _views(history, runs, {(f.test, f.device) for f in flaky}, with_faults or show_faults)
    regs, left = Q.regressions(history, with_faults=with_faults, window=window)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    faults = ("fault runs included" if with_faults else
              "runs with an injected fault shown, left out of the flaky and regression counts" if show_faults else
              "runs with an injected fault left out")
    known = len(views[0].known) if views else 0
    out = ["<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
           "<title>accel-regress history</title>", f"<style>{_CSS}</style></head><body>",
           f"<h1>accel-regress history{_projects(views)}</h1>",
           f"<p id=summary>{len(flaky)} flaky, {len(regs)} open regression(s), {known} known bug(s), "
           f"{len(views)} run(s) shown</p>",
           f"<p class=muted>{_e(history.where)}; {faults}; generated {now}</p>"]
    out += _latest(views)
    out += _known_bugs(views)
    out += ["<input id=filter placeholder='filter rows (test, family, device)' aria-label=filter>",
            "<h2>Family x device, newest run first</h2>"]
    out += _matrix(views)
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
