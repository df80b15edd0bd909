"""The questions a fleet asks of its history, each one query (or a few) through SQLAlchemy Core.

Runs are ordered by their start time (then by when they were stored). A run with an injected
fault is left out of every answer unless ``with_faults`` (the selftests use faults as stand-ins
for a flaky or broken device). Windows are per device: "the last N runs" of a test on a device
are the last N runs that ran on that device.

- flaky: tests whose outcome flipped (good <-> bad, consecutive runs of the same device) at least
  twice in the window, or that were FLAKY under ``--repeat``; the rate is flips / (runs - 1).
- regressions: tests failing in their device's latest run that passed before: the last good run,
  the first bad run after it, and what changed between the two (versions, revision, host, fault).
- gate inputs: for a run being gated, each device's previous run as the baseline, and the flip
  rate of each of its failures over the window before it. Only *evidence* counts for that rate:
  sessions (never imports, unless the user counts them) of the same project and branch on the
  same device, never a fault run (unless the gated run is itself a fault run gated with
  --allow-fault: the selftests' stand-in for a flaky device), and only from MIN_EVIDENCE good or
  bad outcomes: fewer say nothing about a device's stability (three crafted files are no history).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Optional

import sqlalchemy as sa
from sqlalchemy import select

from accel_regress.core import verdicts
from accel_regress.results.history import schema as S
from accel_regress.results.history.rows import BAD, GOOD, IMPORT, SESSION, parse_time, run_key
from accel_regress.results.history.store import _CHUNK, History

R, C, T, D, RD, V = S.runs, S.cases, S.tests, S.devices, S.run_devices, S.run_versions
# Good or bad outcomes of a test on a device (within the window) before its flip rate says anything:
# a failure is known flaky only with at least 2 flips (baseline.from_history: it failed, recovered
# and failed again), and 2 flips need at least 3 outcomes; 5 asks for two more, so three crafted
# runs, or a pass-fail-pass that one bad day makes, are never a verdict on the device.
MIN_EVIDENCE = 5


@dataclass
class Run:
    id: int
    key: str
    started: Optional[datetime]
    host: Optional[str]
    runner: Optional[str]
    revision: Optional[str]
    fault: Optional[str]
    project: Optional[str] = None
    branch: Optional[str] = None
    entry: Optional[str] = None

    def label(self) -> str:
        when = self.started.strftime("%Y-%m-%d %H:%M:%S") if self.started else "?"
        bits = [self.key[:9], when]
        if self.revision:
            bits.append(f"rev {self.revision[:12]}")
        if self.fault:     # FILE.py:NAME said by the file's name alone
            bits.append(f"fault {self.fault.rsplit('/', 1)[-1]}")
        return " ".join(bits)


class Runs:
    """The runs a question may use, in order, and each device's runs."""

    def __init__(self, conn, with_faults: bool, days: Optional[float] = None,
                 before: Optional[datetime] = None, exclude: tuple = ()):
        q = select(R.c.id, R.c.run_key, R.c.started, R.c.host, R.c.runner, R.c.revision, R.c.fault,
                   R.c.project, R.c.branch, R.c.entry)
        if not with_faults:
            q = q.where(R.c.has_fault.is_(False))
        if before is not None:
            q = q.where(sa.or_(R.c.started.is_(None), R.c.started <= before))
        if exclude:
            q = q.where(R.c.run_key.not_in(list(exclude)))
        rows = [Run(*r) for r in conn.execute(q)]
        if days is not None:
            since = datetime.now(timezone.utc).replace(tzinfo=None) - timedelta(days=days)
            rows = [r for r in rows if r.started and r.started >= since]
        rows.sort(key=lambda r: (r.started or datetime.min, r.id))
        self.order = [r.id for r in rows]
        self.pos = {r.id: i for i, r in enumerate(rows)}
        self.by_id = {r.id: r for r in rows}
        self.devices: dict[str, tuple[int, list[int]]] = {}
        per: dict = defaultdict(list)
        ids: dict[str, int] = {}
        for run_id, dev_id, label in conn.execute(
                select(RD.c.run_id, RD.c.device_id, D.c.label).join(D, D.c.id == RD.c.device_id)):
            if run_id in self.pos:
                per[label].append(run_id)
                ids[label] = dev_id
        for label, run_ids in per.items():
            run_ids.sort(key=self.pos.__getitem__)
            self.devices[label] = (ids[label], run_ids)


def _flips(seq: list[str]) -> int:
    marks = [v in BAD for v in seq if v in GOOD or v in BAD]
    return sum(1 for a, b in zip(marks, marks[1:]) if a != b)


@dataclass
class Flaky:
    test: str
    family: Optional[str]
    device: str
    runs: int            # good or bad outcomes in the window
    failed: int
    flips: int
    repeat_flaky: int    # FLAKY verdicts (mixed outcomes within one --repeat run)
    timeline: list = field(default_factory=list)     # (Run, verdict), oldest first

    def evidence(self) -> str:
        """The runs the rate is from: how many, on which hosts, at which revisions."""
        runs = [r for r, _ in self.timeline]
        hosts = sorted({r.host or "?" for r in runs})
        revs = sorted({(r.revision or "?")[:12] for r in runs})
        return (f"evidence: {len(runs)} run(s) on {len(hosts)} host(s) ({', '.join(hosts[:4])}"
                f"{', ...' if len(hosts) > 4 else ''}), {len(revs)} revision(s) ({', '.join(revs[:4])}"
                f"{', ...' if len(revs) > 4 else ''})")

    @property
    def rate(self) -> float:
        return self.flips / (self.runs - 1) if self.runs > 1 else 0.0

    def describe(self) -> str:
        return (f"flip rate {self.rate:.2f} ({self.flips} flips in {self.runs} runs, failed {self.failed} "
                f"of {self.runs}{f', FLAKY under --repeat {self.repeat_flaky}x' if self.repeat_flaky else ''})")


def flaky(history: History, runs: int = 20, days: Optional[float] = None, with_faults: bool = False,
          device: Optional[str] = None) -> list[Flaky]:
    out: list[Flaky] = []
    with history.read() as conn:
        rs = Runs(conn, with_faults, days)
        for label, (dev_id, run_ids) in sorted(rs.devices.items()):
            if device and device != label:
                continue
            window = run_ids[-runs:]
            if len(window) < 2:
                continue
            # Only a test that failed in the window can have flipped: those first (one indexed scan
            # of the window's runs), then their timelines, small, in order.
            failed = [tid for (tid,) in conn.execute(
                select(C.c.test_id).where(C.c.run_id.in_(window), C.c.device_id == dev_id,
                                          C.c.verdict.in_(BAD)).distinct())]
            if not failed:
                continue
            names, lines = _timelines(conn, rs, dev_id, window, failed)
            for tid in failed:
                seq = [v for _, v in lines.get(tid, [])]
                flips, repeat = _flips(seq), seq.count(verdicts.FLAKY)
                if flips >= 2 or repeat:
                    marks = [v for v in seq if v in GOOD or v in BAD]
                    key, family = names[tid]
                    out.append(Flaky(key, family, label, len(marks), sum(v in BAD for v in marks), flips,
                                     repeat, lines[tid]))
    out.sort(key=lambda f: (-f.rate, -f.failed, f.test, f.device))
    return out


def _timelines(conn, rs: Runs, dev_id: int, run_ids: Optional[list], test_ids: list):
    """(test id -> (key, family), test id -> [(Run, verdict)] oldest first) on one device."""
    names, lines = {}, defaultdict(list)
    for i in range(0, len(test_ids), _CHUNK):
        chunk = test_ids[i:i + _CHUNK]
        q = (select(C.c.test_id, T.c.key, T.c.family, C.c.run_id, C.c.verdict)
             .join(T, T.c.id == C.c.test_id)
             .where(C.c.device_id == dev_id, C.c.test_id.in_(chunk)))
        if run_ids is not None:
            q = q.where(C.c.run_id.in_(run_ids))
        for tid, key, family, run_id, verdict in conn.execute(q):
            names[tid] = (key, family)
            if run_id in rs.pos:
                lines[tid].append((rs.by_id[run_id], verdict))
    for seq in lines.values():
        seq.sort(key=lambda rv: rs.pos[rv[0].id])
    return names, lines


@dataclass
class Regression:
    test: str
    family: Optional[str]
    device: str
    verdict: str
    last_good: Run
    first_bad: Run
    latest: Run
    bad_runs: int            # failing runs since the last good one
    changes: list[str]


def _versions(conn, run_ids: list[int]) -> dict[int, dict]:
    out: dict[int, dict] = defaultdict(dict)
    for run_id, backend, name, value in conn.execute(
            select(V.c.run_id, V.c.backend, V.c.name, V.c.value).where(V.c.run_id.in_(run_ids))):
        out[run_id][f"{backend}:{name}"] = value
    return out


def changes_between(conn, a: Run, b: Run) -> list[str]:
    """What differs between two runs: their versions, revision, host, runner and fault."""
    out = []
    for what in ("revision", "host", "runner", "fault"):
        x, y = getattr(a, what), getattr(b, what)
        if x != y:
            out.append(f"{what} {x or '-'} -> {y or '-'}")
    vs = _versions(conn, [a.id, b.id])
    va, vb = vs.get(a.id, {}), vs.get(b.id, {})
    for name in sorted(set(va) | set(vb)):
        if va.get(name) != vb.get(name):
            out.append(f"{name} {va.get(name) or '-'} -> {vb.get(name) or '-'}")
    return out


def regressions(history: History, with_faults: bool = False, window: int = 20,
                device: Optional[str] = None) -> tuple[list[Regression], dict]:
    """Open regressions, and counts of the failures left out: known flaky, never green."""
    out: list[Regression] = []
    left = {"flaky": 0, "never_green": 0}
    with history.read() as conn:
        rs = Runs(conn, with_faults)
        for label, (dev_id, run_ids) in sorted(rs.devices.items()):
            if device and device != label:
                continue
            latest = run_ids[-1]
            failing = [tid for (tid,) in conn.execute(
                select(C.c.test_id).where(C.c.run_id == latest, C.c.device_id == dev_id, C.c.verdict.in_(BAD)))]
            if not failing:
                continue
            names, lines = _timelines(conn, rs, dev_id, None, failing)
            for tid in failing:
                seq = lines.get(tid) or []
                verdicts_seen = [v for _, v in seq]
                if _flips(verdicts_seen[-window:]) >= 2:
                    left["flaky"] += 1
                    continue
                good = [i for i, (_, v) in enumerate(seq) if v == verdicts.PASS]
                if not good:
                    left["never_green"] += 1
                    continue
                g = good[-1]
                bad = next(i for i in range(g + 1, len(seq)) if seq[i][1] in BAD)
                key, family = names[tid]
                out.append(Regression(key, family, label, seq[-1][1], seq[g][0], seq[bad][0], seq[-1][0],
                                      sum(1 for _, v in seq[g + 1:] if v in BAD),
                                      changes_between(conn, seq[g][0], seq[bad][0])))
    out.sort(key=lambda r: (r.device, r.test))
    return out, left


@dataclass
class GateInputs:
    baseline: Optional[dict]          # a results dict: each device's previous run of its line (None: none)
    rates: dict                       # (test key, device) -> Flaky, for this run's failures
    note: str


def _evidence(run: Run, project, branch, with_imports: bool) -> bool:
    """Whether ``run`` may count towards a flip rate of the gated run (same project and branch;
    a session, or an import when the user counts them). Fault runs are already left out of ``Runs``
    unless asked for."""
    entries = (SESSION, IMPORT) if with_imports else (SESSION,)
    return run.entry in entries and run.project == project and run.branch == branch


def gate_inputs(history: History, data: dict, failing: list[tuple[str, str]], window: int = 20,
                with_faults: bool = False, with_imports: bool = False) -> GateInputs:
    """The baseline and the flip rates the gate needs for ``data``: ``failing`` its failing
    (test key, device) cells. The run itself (if already stored) and later runs are left out.
    ``with_faults``: fault runs count (for gating a fault run only); ``with_imports``: imported
    runs count as evidence of flakiness too."""
    session = data.get("session") or {}
    sources = [s for s in session.get("merged_from") or [] if isinstance(s, dict)] or [session]
    keys = tuple(run_key(s) for s in sources)
    starts = [t for t in (parse_time(s.get("started")) for s in sources) if t]
    before = max(starts) if starts else None
    project, branch = session.get("project"), session.get("branch")
    if session.get("merged_from"):      # a merged run: its sources' (merge keeps no top-level project)
        project = project or next((s.get("project") for s in sources if s.get("project")), None)
        branch = branch or next((s.get("branch") for s in sources if s.get("branch")), None)
    devices = {d for _, d in failing}
    from accel_regress.results.keys import device_of
    devices |= {device_of(c, data) for c in data.get("cases") or []}
    cases, rates, used, thin = [], {}, [], []
    with history.read() as conn:
        rs = Runs(conn, with_faults, before=before, exclude=keys)
        for label in sorted(devices):
            if label not in rs.devices:
                continue
            dev_id, all_ids = rs.devices[label]
            # The baseline has the evidence's provenance: the same project's and branch's sessions
            # (imports with --flaky-imports), never another project's run or an import that a
            # record anyone can write put there (issue 47 defect 4).
            run_ids = [r for r in all_ids if _evidence(rs.by_id[r], project, branch, with_imports)]
            if not run_ids:
                continue
            prev = rs.by_id[run_ids[-1]]
            used.append(f"{label}: {prev.label()}")
            for key, verdict, duration in conn.execute(
                    select(T.c.key, C.c.verdict, C.c.duration).join(T, T.c.id == C.c.test_id)
                    .where(C.c.run_id == prev.id, C.c.device_id == dev_id)):
                cases.append({"nodeid": key, "backend": None, "device": label, "verdict": verdict,
                              "duration_s": duration})
            want = [k for k, d in failing if d == label]
            ids = {}
            for i in range(0, len(want), _CHUNK):
                ids.update((t, k) for t, k in conn.execute(select(T.c.id, T.c.key).where(T.c.key.in_(want[i:i + _CHUNK]))))
            if not ids:
                continue
            window_ids = run_ids[-window:]
            _, lines = _timelines(conn, rs, dev_id, window_ids, list(ids))
            for tid, key in ids.items():
                seq = [v for _, v in lines.get(tid, [])]
                marks = [v for v in seq if v in GOOD or v in BAD]
                if len(marks) < MIN_EVIDENCE:
                    thin.append(f"{key} on {label} ({len(marks)})")
                    continue
                rates[(key, label)] = Flaky(key, None, label, len(marks), sum(v in BAD for v in marks),
                                            _flips(seq), seq.count(verdicts.FLAKY), lines.get(tid, []))
    line = (f"{'sessions and imports' if with_imports else 'sessions'} of project {project or '?'}, "
            f"branch {branch or '?'}")
    baseline = {"session": {"history": history.where}, "backends": {}, "cases": cases} if used else None
    scope = (f"flakiness evidence: {line}, on the failing case's device"
             + (", fault runs included (a fault run gated with --allow-fault)" if with_faults else ", no fault runs")
             + f", at least {MIN_EVIDENCE} outcomes")
    if thin:
        scope += (f"; too few to tell a flaky failure for {len(thin)}: " + "; ".join(thin[:5])
                  + ("; ..." if len(thin) > 5 else ""))
    note = (f"baseline from the history {history.where} ({line}): " + "; ".join(used) if used else
            f"no baseline: the history {history.where} holds no earlier {line} on these devices") + f"; {scope}"
    return GateInputs(baseline, rates, note)




@dataclass
class Timeline:
    test: str
    family: Optional[str]
    device: str
    rows: list        # (Run, verdict, duration, message, changes since the row before)


def show(history: History, test: str, device: Optional[str] = None, with_faults: bool = False,
         limit: int = 50) -> tuple[list[Timeline], list[str]]:
    """The verdict timeline of a test (an exact key, else every key containing ``test``), per
    device; and the other keys matched when there are too many."""
    out = []
    with history.read() as conn:
        found = list(conn.execute(select(T.c.id, T.c.key, T.c.family).where(T.c.key == test)))
        if not found:
            like = test.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            found = list(conn.execute(select(T.c.id, T.c.key, T.c.family)
                                      .where(T.c.key.like(f"%{like}%", escape="\\")).order_by(T.c.key).limit(21)))
        more = [k for _, k, _ in found[10:]]
        rs = Runs(conn, with_faults)
        for tid, key, family in found[:10]:
            q = (select(D.c.label, C.c.run_id, C.c.verdict, C.c.duration, C.c.message)
                 .join(D, D.c.id == C.c.device_id).where(C.c.test_id == tid))
            if device:
                q = q.where(D.c.label == device)
            per = defaultdict(list)
            for label, run_id, verdict, duration, message in conn.execute(q):
                if run_id in rs.pos:
                    per[label].append((rs.by_id[run_id], verdict, duration, message))
            for label, rows in sorted(per.items()):
                rows.sort(key=lambda r: rs.pos[r[0].id])
                rows = rows[-limit:]
                vs = _versions(conn, [r[0].id for r in rows])
                shown, prev = [], None
                for run, verdict, duration, message in rows:
                    changed = []
                    if prev is not None:
                        for what in ("revision", "fault"):
                            if getattr(prev, what) != getattr(run, what):
                                changed.append(f"{what} {getattr(prev, what) or '-'} -> {getattr(run, what) or '-'}")
                        a, b = vs.get(prev.id, {}), vs.get(run.id, {})
                        changed += [f"{n} {a.get(n) or '-'} -> {b.get(n) or '-'}" for n in sorted(set(a) | set(b))
                                    if a.get(n) != b.get(n)]
                    shown.append((run, verdict, duration, message, changed))
                    prev = run
                out.append(Timeline(key, family, label, shown))
    return out, more
