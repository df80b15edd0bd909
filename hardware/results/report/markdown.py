"""summary.md: the family x device counts, the test x device matrix, then every failure with its
census and heatmap. Plain GitHub markdown, so it can be pasted into a job summary or a PR; every
text that comes from the run goes through hardware/util/escape.py (it can be chosen by anyone)."""
from __future__ import annotations

from accel_regress.util.escape import md_code, md_text
from accel_regress.results.report.tables import Model, census_lines, slug
from accel_regress.results.summary import rerun_line



def _session_line(m: Model) -> str:
    s = m.session
    if s.get("merged_from"):
        srcs = "; ".join(md_text(f"{x.get('label') or x.get('host') or '?'}: {x.get('file')} "
                                 f"({', '.join(map(str, x.get('devices') or []))}"
                                 + (f", fault {x['fault']}" if x.get("fault") else "") + ")")
                         for x in s["merged_from"])
        return f"Merged from {len(s['merged_from'])} runner(s): {srcs}"
    return md_text(f"Session {s.get('started', '?')} on {s.get('host', '?')} · hw: {', '.join(s.get('hw') or []) or '?'} · "
                   f"fault: {s.get('fault') or 'none'} · golden seed {s.get('golden_seed', 0)} · "
                   f"exit status {s.get('exit_status', '?')}" + (" · INTERRUPTED" if s.get("interrupted") else ""))


def verdict_block(m: Model) -> list[str]:
    """The first lines: the gate's SHIP / DON'T SHIP, the fault banner, the gate's reasons."""
    v = m.verdict
    out = [f"# {v.head}", ""]
    out += [f"**{md_text(v.banner)}**", ""] if v.banner else []
    out += [f"- {md_text(r)}" for r in v.reasons]
    if v.reasons:
        out.append("")
    out += [f"The gate's verdict under {md_text(v.policy)} (`python -m accel_regress gate`).", ""]
    return out


def render(m: Model, heatmaps: dict[str, str], expectations: dict | None = None, max_failures: int = 50,
           extra: list[str] = ()) -> str:
    out = verdict_block(m)
    out += ["## accel-regress report", "", f"**{m.headline()}**", "", _session_line(m), ""]
    devs = m.devices
    out += ["## Family × device", "", "| family | " + " | ".join(map(md_text, devs)) + " |",
            "|---|" + "---|" * len(devs)]
    for fam in m.families:
        out.append(f"| {md_text(fam)} | " + " | ".join(md_text(m.family_cell(fam, d)) for d in devs) + " |")
    if not m.families:
        out.append("| (no cases) |" + " |" * len(devs))
    out.append("")
    for name, reason in m.missing.items():
        out.append(f"- **not run on {md_text(name)}**: {md_text(reason)}")
    if m.missing:
        out.append("")
    if m.skips:
        out += [f"## SKIP ({sum(n for _, n in m.skips)})", "", "| cases | reason |", "|---|---|"]
        out += [f"| {n} | {md_text(why)} |" for why, n in m.skips] + [""]
    out += list(extra)
    out += ["## Test × device", "", f"<details><summary>{len(m.grid)} tests</summary>", "",
            "| test | " + " | ".join(map(md_text, devs)) + " |", "|---|" + "---|" * len(devs)]
    for key, row in m.grid.items():
        out.append(f"| {md_code(key, table=True)} | " + " | ".join(_verdict(row[d]["verdict"]) if d in row else "" for d in devs) + " |")
    out += ["", "</details>", ""]
    out += [f"## Failures ({len(m.problems)})", ""]
    if not m.problems:
        out += ["None.", ""]
    for c in m.problems[:max_failures]:
        out += _case(c, heatmaps, m.session)
    if len(m.problems) > max_failures:
        out += [f"... and {len(m.problems) - max_failures} more: see results.json", ""]
    if m.known:
        out += [f"## Known bugs seen (XFAIL, {len(m.known)})", ""]
        for c in m.known:
            exp = (c.get("detail") or {}).get("expectation") or {}
            line = (f"- {md_text(c['device'])} · {md_code(c['key'])} — {md_text(exp.get('reason', ''))} "
                    f"({md_text(exp.get('issue', ''))})")
            if slug(c) in heatmaps:
                line += f" · [heatmap]({heatmaps[slug(c)]})"
            out.append(line)
        out.append("")
    if expectations:
        na, stale = expectations.get("not_attempted") or [], expectations.get("stale") or []
        if na or stale:
            out += ["## Expectations", ""]
            if na:
                out.append(f"- {len(na)} known HANG/CRASH case(s) not attempted (`--run-known-hangs` to try)")
            for e in stale:
                out.append(f"- stale entry in {md_code(e.get('file'))}: {md_code(e.get('test'))} "
                           + md_text(e.get("why") or "matches no collected test"))
            out.append("")
    return "\n".join(out) + "\n"


def _verdict(v: str) -> str:
    return "n/a" if v == "NOT_APPLICABLE" else v


def _case(c: dict, heatmaps: dict[str, str], session: dict) -> list[str]:
    out = [f"### {c['verdict']} · {md_text(c['device'])} · {md_code(c['nodeid'])}", "",
           md_text(f"stage {c.get('stage') or '-'} · {float(c.get('duration_s') or 0):.2f} s" +
                   (f" · family {c['family']}" if c.get("family") else "")), ""]
    lines = [ln for ln in (c.get("message") or "").rstrip().splitlines()][:14]
    for census in c.get("census") or []:
        text = census_lines(census)
        if text and text[0] not in lines:
            lines += [""] + text
    if lines:
        out += ["```text"] + [ln.replace("```", "'''") for ln in lines] + ["```", ""]
    out += [f"rerun: {md_code(rerun_line(c, session))}", ""]
    if slug(c) in heatmaps:
        out += [f"![|got - expected| / allowed]({heatmaps[slug(c)]})", ""]
    return out
