"""index.html: the same report as summary.md for a browser, opened straight from disk (no server,
no script, no network): relative links to every artifact, heatmaps inline."""
from __future__ import annotations

import html
from pathlib import Path

from accel_regress.results.report import steps
from accel_regress.results.report.tables import Model, census_lines, slug
from accel_regress.results.summary import rerun_line

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em;margin:0 0 .3em} h2{font-size:1.2em;margin-top:1.4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
th{background:#f2f2f2} td.t{font-family:monospace;font-size:12px}
.PASS{background:#d9f2d9}.FAIL,.CRASH,.HANG,.COMPILE_ERROR,.XPASS,.INTERRUPTED{background:#f8c8c8;font-weight:bold}
.XFAIL{background:#fde9b6}.SKIP,.notrun{background:#e6e6e6;color:#555}
.headline{font-size:1.1em;font-weight:bold} pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
.case{margin:1em 0 2em} img{max-width:100%;border:1px solid #ccc} nav a{margin-right:1em}
.FLAKY{background:#f8c8c8;font-weight:bold}.NOT_APPLICABLE,.na{background:#f4f4f4;color:#888}
#fault{background:#b00020;color:#fff;font-size:1.3em;font-weight:bold;padding:.4em .6em;margin:0 0 .4em}
#verdict{font-size:1.6em;margin:0 0 .2em} #verdict.ship{color:#1a7f37} #verdict.noship{color:#b00020}
ul.reasons li{margin:.15em 0} .rerun{font-family:monospace;font-size:12px;background:#eef;padding:2px 6px}
"""


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _rel(path: str) -> str:
    return "/".join(_e(p) for p in Path(path).parts)


def _worst(counts_text: str) -> str:
    for v in ("HANG", "CRASH", "COMPILE_ERROR", "XPASS", "FAIL", "INTERRUPTED", "XFAIL", "PASS", "SKIP"):
        if f" {v}" in f" {counts_text}":
            return v
    return "notrun"


def render(m: Model, heatmaps: dict[str, str], links: list[tuple[str, str]], expectations: dict | None = None,
           extra: list[str] = ()) -> str:
    devs = m.devices
    v = m.verdict
    h = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
         f"<title>{_e(' · '.join(v.lines()))} · accel-regress report</title>",
         f"<style>{_CSS}</style></head><body>"]
    # What a release manager must read first: the gate's verdict, then the fault banner.
    h.append(f"<h1 id='verdict' class='{'ship' if v.ship else 'noship'}'>{_e(v.head)}</h1>")
    if v.banner:
        h.append(f"<div id='fault'>{_e(v.banner)}</div>")
    if v.reasons:
        h.append("<ul class='reasons' id='reasons'>" + "".join(f"<li>{_e(r)}</li>" for r in v.reasons) + "</ul>")
    h.append(f"<p>The gate's verdict under {_e(v.policy)}, as <code>python -m accel_regress gate</code> gives it.</p>")
    if v.notes:
        h.append("<details><summary>gate notes</summary><ul>" + "".join(f"<li>{_e(n)}</li>" for n in v.notes)
                 + "</ul></details>")
    h.append(f"<h2>accel-regress report</h2><p class='headline' id='headline'>{_e(m.headline())}</p>")
    h.append("<nav>" + "".join(f"<a href='{_rel(href)}'>{_e(label)}</a>" for label, href in links) + "</nav>")
    s = m.session
    if s.get("merged_from"):
        h.append("<p>merged from: " + "; ".join(
            f"{_e(x.get('label') or x.get('host') or '?')} ({_e(', '.join(x.get('devices') or []))}, "
            f"host {_e(x.get('host') or '?')}, fault {_e(x.get('fault') or 'none')}, started {_e(x.get('started') or '?')})"
            for x in s["merged_from"]) + "</p>")
    else:
        h.append(f"<p>hw: {_e(', '.join(s.get('hw') or []))} · fault: {_e(s.get('fault') or 'none')} · "
                 f"golden seed {_e(s.get('golden_seed', 0))} · started {_e(s.get('started') or '?')} on "
                 f"{_e(s.get('host') or '?')}</p>")
    h.append("<h2>Family × device</h2><table id='families'><tr><th>family</th>" +
             "".join(f"<th>{_e(d)}</th>" for d in devs) + "</tr>")
    for fam in m.families:
        cells = []
        for d in devs:
            text = m.family_cell(fam, d)
            cls = "na" if text.startswith("not applicable") else _worst(text)
            cells.append(f"<td class='{cls}'>{_e(text)}</td>")
        h.append(f"<tr><td>{_e(fam)}</td>{''.join(cells)}</tr>")
    h.append("</table>")
    if m.missing:
        h.append("<ul>" + "".join(f"<li class='notrun'><b>not run on {_e(n)}</b>: {_e(r)}</li>"
                                   for n, r in m.missing.items()) + "</ul>")
    if m.skips:
        h.append(f"<h2>SKIP ({sum(n for _, n in m.skips)})</h2><table id='skips'><tr><th>cases</th><th>reason</th></tr>"
                 + "".join(f"<tr><td>{n}</td><td>{_e(why)}</td></tr>" for why, n in m.skips) + "</table>")
    h += list(extra)
    h.append(f"<h2>Failures ({len(m.problems)})</h2>")
    if not m.problems:
        h.append("<p>None.</p>")
    for c in m.problems[:100]:
        h.append(_case(c, heatmaps, m.session))
    if m.known:
        h.append(f"<h2>Known bugs seen (XFAIL, {len(m.known)})</h2>")
        for c in m.known:
            h.append(_case(c, heatmaps, m.session))
    if expectations and expectations.get("stale"):
        h.append("<h2>Stale expectation entries</h2><ul>" + "".join(
            f"<li><code>{_e(e['file'])}</code>: <code>{_e(e['test'])}</code>"
            + (f": {_e(e['why'])}" if e.get("why") else "") + "</li>" for e in expectations["stale"]) + "</ul>")
    h.append(f"<h2>Test × device ({len(m.grid)})</h2><table id='matrix'><tr><th>test</th>" +
             "".join(f"<th>{_e(d)}</th>" for d in devs) + "</tr>")
    for key, row in m.grid.items():
        cells = "".join(_matrix_cell(row[d]["verdict"]) if d in row else "<td class='notrun'></td>" for d in devs)
        h.append(f"<tr><td class='t'>{_e(key)}</td>{cells}</tr>")
    h.append("</table></body></html>")
    return "\n".join(h) + "\n"


def _matrix_cell(verdict: str) -> str:
    text = "n/a" if verdict == "NOT_APPLICABLE" else verdict
    return f"<td class='{_e(verdict)}'>{_e(text)}</td>"


def _case(c: dict, heatmaps: dict[str, str], session: dict) -> str:
    lines = (c.get("message") or "").rstrip().splitlines()[:14]
    for census in c.get("census") or []:
        text = census_lines(census)
        if text and text[0] not in lines:
            lines += [""] + text
    out = [f"<div class='case'><h3><span class='{_e(c['verdict'])}'>{_e(c['verdict'])}</span> · {_e(c['device'])} · "
           f"<code>{_e(c['nodeid'])}</code></h3>",
           f"<p>stage {_e(c.get('stage') or '-')} · {float(c.get('duration_s') or 0):.2f} s</p>"]
    if lines:
        out.append("<pre>" + _e("\n".join(lines)) + "</pre>")
    out.append(f"<p>rerun: <span class='rerun'>{_e(rerun_line(c, session))}</span></p>")
    out.append(steps.html(c.get("detail") or {}))
    if slug(c) in heatmaps:
        src = _rel(heatmaps[slug(c)])
        out.append(f"<a href='{src}'><img src='{src}' alt='heatmap of |got - expected| / allowed'></a>")
    out.append("</div>")
    return "\n".join(out)
