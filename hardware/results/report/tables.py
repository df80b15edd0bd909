"""What every report shows, computed once from a results.json: the test x device matrix, the
family x device counts, backends that did not run, and the failures with their census."""
from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict

from accel_regress.core import verdicts
from accel_regress.results import skip_rules
from accel_regress.results.keys import device_of, test_key

PROBLEMS = (verdicts.FAIL, verdicts.FLAKY, verdicts.HANG, verdicts.CRASH, verdicts.COMPILE_ERROR, verdicts.XPASS,
            verdicts.INTERRUPTED)
ORDER = (verdicts.PASS, verdicts.FAIL, verdicts.FLAKY, verdicts.HANG, verdicts.CRASH, verdicts.COMPILE_ERROR,
         verdicts.XPASS, verdicts.XFAIL, verdicts.SKIP, verdicts.INTERRUPTED, verdicts.NOT_APPLICABLE)
LABEL = {verdicts.NOT_APPLICABLE: "not applicable"}
NO_BACKEND = "(no backend)"      # the column of tests that run on no backend (harness checks)


def slug(case: dict) -> str:
    """A file name for a case's artifacts: readable, short, unique."""
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", case["nodeid"].split("::", 1)[-1])[:80].strip("_")
    digest = hashlib.sha1(f"{case['nodeid']}|{case.get('device') or ''}".encode()).hexdigest()[:8]
    return f"{text}-{digest}"


def with_devices(data: dict) -> list[dict]:
    out = []
    for c in data.get("cases", []):
        c = dict(c)
        c["device"] = device_of(c, data) if c.get("backend") or c.get("device") else NO_BACKEND
        c["key"] = test_key(c["nodeid"], c.get("backend"))
        out.append(c)
    return out


def not_run(data: dict) -> dict[str, str]:
    """Backends the session asked for that were unavailable: name -> reason."""
    hw = set((data.get("session") or {}).get("hw") or [])
    out = {}
    for name, info in (data.get("backends") or {}).items():
        if (info.get("selected") or name in hw) and not info.get("available", True):
            out[name] = info.get("reason") or "unavailable"
    return out


def counts_text(counts: Counter) -> str:
    return ", ".join(f"{counts[v]} {LABEL.get(v, v)}" for v in ORDER if counts.get(v))


def first_line(text, limit: int = 160) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


class Model:
    def __init__(self, data: dict, verdict=None):
        """``verdict``: the gate's answer for this run (accel_regress.results.gate.Verdict) that the reports
        open with; computed under the default policy when not given."""
        if verdict is None:
            from accel_regress.results import gate
            verdict = gate.evaluate(data)
        self.verdict = verdict
        self.data = data
        self.session = data.get("session") or {}
        # A record holding a case twice is judged by the worse, as the gate and merge judge it.
        self.cases = list(verdicts.worst_by(with_devices(data), lambda c: (c["key"], c["device"])).values())
        self.devices = sorted({c["device"] for c in self.cases})
        self.missing = not_run(data)
        for name in self.missing:
            if not any(c["backend"] == name for c in self.cases) and name not in self.devices:
                self.devices.append(name)
        self.totals = Counter(c["verdict"] for c in self.cases)
        fam: dict = defaultdict(lambda: defaultdict(Counter))
        grid: dict = defaultdict(dict)
        for c in self.cases:
            fam[c.get("family") or "?"][c["device"]][c["verdict"]] += 1
            grid[c["key"]][c["device"]] = c
        self.families = {f: dict(d) for f, d in sorted(fam.items())}
        self.grid = dict(sorted(grid.items()))
        self.problems = [c for c in self.cases if c["verdict"] in PROBLEMS]
        self.known = [c for c in self.cases if c["verdict"] == verdicts.XFAIL]
        # A backend that can never run a family: one line per family x device, not a SKIP per case.
        self.not_applicable: dict[tuple[str, str], str] = {}
        for c in self.cases:
            if c["verdict"] == verdicts.NOT_APPLICABLE:
                self.not_applicable.setdefault((c.get("family") or "?", c["device"]), first_line(c.get("message")))
        # SKIPs that matter (a device or toolchain missing, over budget ...), by reason, largest first.
        skips = Counter(skip_rules.rule(c) for c in self.cases if c["verdict"] == verdicts.SKIP)
        self.skips = skips.most_common()
        self.problems.sort(key=lambda c: (ORDER.index(c["verdict"]) if c["verdict"] in ORDER else 99, c["nodeid"]))

    def family_cell(self, family: str, device: str) -> str:
        counts = self.families[family].get(device)
        if counts and set(counts) == {verdicts.NOT_APPLICABLE}:
            return f"not applicable: {self.not_applicable.get((family, device), '')}".rstrip(": ")
        if counts:
            return counts_text(counts)
        if device in self.missing:
            return "not run"
        return "-"

    def verdict_lines(self) -> list[str]:
        """The gate's SHIP / DON'T SHIP line and fault banner, then its reasons: what a report opens with."""
        v = self.verdict
        return v.lines() + [f"- {r}" for r in v.reasons]

    def headline(self) -> str:
        devices = [d for d in self.devices if d != NO_BACKEND]     # the checks that run no backend
        host = sum(1 for c in self.cases if c["device"] == NO_BACKEND)
        checks = f" and {host} host-side check(s)" if host else ""
        return (f"{len(self.cases) - host} cases on {len(devices)} device(s){checks}: "
                f"{counts_text(self.totals) or 'none'}")


def census_lines(census: dict) -> list[str]:
    """The census of a failure in a few lines (same wording as golden/compare.py)."""
    if census.get("shape_error"):
        return [f"{census.get('name')}: {census['shape_error']}"]
    try:
        from accel_regress.golden.compare import Census
        fields = {k: v for k, v in census.items() if k in Census.__dataclass_fields__}
        fields["shape"] = tuple(fields.get("shape") or ())
        fields.setdefault("origin", (0, 0))
        for k in ("max_abs_index", "max_rel_index", "origin"):
            fields[k] = tuple(fields.get(k) or ())
        for k in ("max_abs", "mean_abs", "max_rel", "pearson", "max_abs_allowed"):
            fields[k] = float(fields.get(k, "nan"))
        return Census(**fields).describe().splitlines()
    except Exception as exc:   # a census from another version of the suite: show what is there
        return [f"{census.get('name')}: {census.get('over_tolerance')} / {census.get('elements')} over tolerance "
                f"(census not readable here: {type(exc).__name__})"]
