"""A pipeline case's per-step errors (compare mode, ``detail['steps']``) as a table and an inline
SVG bar chart: max_rel per step on a log scale, steps over tolerance in red, so the first divergent
step stands out in the HTML report."""
from __future__ import annotations

import math
from html import escape

_W, _ROW, _LEFT = 560, 16, 130
_FLOOR = 1e-6    # max_rel below this (exact steps: 0) is drawn at the axis


def svg(steps: list[dict], first: str | None) -> str:
    raw = [float(s.get("max_rel") or 0.0) for s in steps]
    vals = [max(v, _FLOOR) if math.isfinite(v) else math.inf for v in raw]   # inf / nan: off the chart
    top = max([v for v in vals if math.isfinite(v)] + [1.0])
    decades = max(math.log10(top / _FLOOR), 1.0)
    h = _ROW * len(steps) + 24
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{_W}' height='{h}' font-size='11' "
           f"font-family='monospace' role='img' aria-label='per-step max_rel'>"]
    for i, (s, v) in enumerate(zip(steps, vals)):
        y = 4 + i * _ROW
        full = _W - _LEFT - 10
        width = full if not math.isfinite(v) else full * math.log10(v / _FLOOR) / decades
        color = "#c62828" if not s.get("ok", True) else "#90a4ae"
        weight = " font-weight='bold'" if s.get("step") == first else ""
        out.append(f"<text x='0' y='{y + 11}'{weight}>{escape(str(s.get('step')))}</text>"
                   f"<rect x='{_LEFT}' y='{y + 2}' width='{width:.1f}' height='{_ROW - 4}' fill='{color}'>"
                   f"<title>{escape(str(s.get('step')))}: max_rel {raw[i]:.3g}</title></rect>")
    out.append(f"<text x='{_LEFT}' y='{h - 4}'>max_rel, log scale from {_FLOOR:g} to {top:.3g}</text></svg>")
    return "".join(out)


def table(steps: list[dict], first: str | None) -> str:
    rows = ["<table class='steps'><tr><th>step</th><th>op</th><th>max_abs</th><th>mean_abs</th><th>max_rel</th>"
            "<th>over tolerance</th></tr>"]
    for s in steps:
        cls = " class='FAIL'" if not s.get("ok", True) else ""
        mark = " (first divergent)" if s.get("step") == first else ""
        rows.append(f"<tr{cls}><td>{escape(str(s.get('step')))}{mark}</td><td>{escape(str(s.get('op')))}</td>"
                    f"<td>{float(s.get('max_abs') or 0):.3g}</td><td>{float(s.get('mean_abs') or 0):.3g}</td>"
                    f"<td>{float(s.get('max_rel') or 0):.3g}</td><td>{s.get('over')}/{s.get('elements')}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def html(detail: dict) -> str:
    steps = detail.get("steps") or []
    if not steps:
        return ""
    first = detail.get("first_divergent_step")
    head = f"<p>first divergent step: <b>{escape(str(first))}</b></p>" if first else ""
    return head + svg(steps, first) + table(steps, first)
