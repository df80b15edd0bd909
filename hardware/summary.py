"""The compact terminal table at the end of a session: family x backend -> verdict counts."""
from __future__ import annotations

from hardware import verdicts

_ORDER = [v for v in verdicts.ALL]


def table(summary: dict) -> list[str]:
    used = {v for bs in summary.values() for counts in bs.values() for v in counts}
    cols = [v for v in _ORDER if v in used or v == verdicts.PASS]
    rows = [["family", "backend"] + cols]
    for family, backends in summary.items():
        for backend, counts in backends.items():
            rows.append([family, backend] + [str(counts.get(v, 0)) for v in cols])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for n, r in enumerate(rows):
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1])] + [c.rjust(w) for c, w in zip(r[2:], widths[2:])]
        out.append("  ".join(cells))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def problems(cases: list[dict], limit: int = 30) -> list[str]:
    bad = [c for c in cases if c["verdict"] in verdicts.BAD]
    lines = []
    for c in bad[:limit]:
        first = (c.get("message") or "").strip().splitlines()
        lines.append(f"{c['verdict']:<13} {c['nodeid']}" + (f"  -- {first[0][:160]}" if first else ""))
    if len(bad) > limit:
        lines.append(f"... and {len(bad) - limit} more (see results.json)")
    return lines
