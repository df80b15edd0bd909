"""``pr-comment.md``: a short markdown summary fit for a pull-request comment: the gate's verdict,
the fault banner, the verdict's reasons, counts per device, the new failures (against the baseline
when one is given), and links to the full report."""
from __future__ import annotations

from collections import Counter
from typing import Optional

from accel_regress.util.escape import md_code, md_text
from accel_regress.results.report.tables import LABEL, ORDER, Model, first_line

MAX_LISTED = 10


def render(m: Model, baseline: Optional[dict] = None, link_base: str = "",
           links: tuple = ("index.html", "summary.md", "results.json", "matrix.csv")) -> str:
    v = m.verdict
    out = [f"### {v.head}", ""]
    out += [f"**{md_text(v.banner)}**", ""] if v.banner else []
    out += [f"- {md_text(r)}" for r in v.reasons] + ([""] if v.reasons else [])
    out += [f"accel-regress: {md_text(m.headline())} · gate policy: {md_text(v.policy)}", ""]
    used = [x for x in ORDER if m.totals.get(x)]
    if used and m.devices:
        out += ["| device | " + " | ".join(LABEL.get(x, x) for x in used) + " |", "|---|" + "---|" * len(used)]
        for d in m.devices:
            counts = Counter(c["verdict"] for c in m.cases if c["device"] == d)
            out.append(f"| {md_text(d)} | " + " | ".join(str(counts.get(x, 0)) for x in used) + " |")
        out.append("")
    bad = m.problems
    title = "Failures"
    if baseline is not None:
        from accel_regress.results.gate import _index
        before = _index(baseline)
        bad = [c for c in bad if (before.get((c["key"], c["device"])) or {}).get("verdict") != c["verdict"]]
        title = "New failures (not so in the baseline)"
    if bad:
        out += [f"**{title} ({len(bad)})**", ""]
        for c in bad[:MAX_LISTED]:
            out.append(f"- {c['verdict']} {md_code(c['key'])} on {md_text(c['device'])}: "
                       f"{md_text(first_line(c.get('message'), 120))}")
        if len(bad) > MAX_LISTED:
            out.append(f"- ... and {len(bad) - MAX_LISTED} more")
        out.append("")
    base = link_base.rstrip("/") + "/" if link_base else ""
    out.append(" · ".join(f"[{name}]({base}{name})" for name in links))
    return "\n".join(out) + "\n"
