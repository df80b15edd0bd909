"""The release gate: ``python -m accel_regress gate RESULTS.json [--baseline OLD.json] [--policy FILE]``.

Exit 0: ship. Exit 1: don't, with one line per reason. Exit 2: the inputs could not be read.

Blocking, always:
- a run with an injected fault (``--inject-fault``): it proves the checks, it is not a release
  run; ``--allow-fault`` gates it anyway (the fault is then a note);
- failures not in the known-bug list (FAIL, FLAKY, HANG, CRASH, COMPILE_ERROR); against a baseline each
  is worded as *new* (passed there), *still failing* or *not in the baseline*;
- XPASS: a known bug no longer happens; its expectation entry must go;
- backends the policy requires (default: every backend the session asked for) that did not run,
  or ran nothing but SKIPs: an unexpected SKIP is never silent;
- required markers / families with no case that ran on a required backend;
- an interrupted session (its results are incomplete);
- a record that is not whole (hardware/results/completeness.py): no session, no cases, a session that
  never finished (killed), an exit status that says a test failed while no case did.
Blocking when the policy says so (the default does): cases much slower than in the baseline.
Said but not blocking: new hangs and crashes are named first; other SKIPs are counted with
their reasons; known bugs (XFAIL, not attempted) are counted; bugs that are now fixed.

Policy file (TOML; see policy/release.toml)::

    [required]
    backends = ["emu", "iree-cpu"]   # backend ids or merged device labels ("npu/Phoenix")
    markers = ["large"]              # each required backend ran at least one such case
    families = ["gemm_partition_n"]
    [slowdown]
    factor = 2.0                     # slower than factor x baseline ...
    min_seconds = 1.0                # ... and by at least this much
    blocks = true
    [failures]
    pre_existing_block = true        # failures that also failed in the baseline still block
    [flaky]                          # with --baseline history (hardware/results/history/baseline.py)
    bound = 0.1                      # a failure whose flip rate is above this is known flaky ...
    window = 20                      # ... over the last N runs of its device
    blocks = false                   # known-flaky failures are reported with their rate, not blocking
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from accel_regress.results import completeness, record as results, schemas
from accel_regress.core import verdicts
from accel_regress.results.keys import device_of, test_key

FAILURES = (verdicts.FAIL, verdicts.FLAKY, verdicts.HANG, verdicts.CRASH, verdicts.COMPILE_ERROR,
            verdicts.INTERRUPTED)
_LIST = 5          # names shown per reason; the rest are counted


class PolicyError(ValueError):
    pass


@dataclass
class Policy:
    backends: Optional[list[str]] = None     # None: the session's own --hw list
    markers: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    slow_factor: float = 2.0
    slow_min_s: float = 1.0
    slow_blocks: bool = True
    pre_existing_block: bool = True
    flaky_bound: float = 0.1
    flaky_window: int = 20
    flaky_blocks: bool = False
    source: str = "default policy (every backend the session asked for must run)"


def load_policy(path: Path) -> Policy:
    path = Path(path)
    doc = schemas.load_toml(path, "policy", PolicyError)     # hardware/results/schemas/policy.schema.json
    req, slow, fail = doc.get("required", {}), doc.get("slowdown", {}), doc.get("failures", {})
    flaky = doc.get("flaky", {})
    p = Policy(backends=req.get("backends"), markers=req.get("markers", []), families=req.get("families", []),
               slow_factor=float(slow.get("factor", 2.0)), slow_min_s=float(slow.get("min_seconds", 1.0)),
               slow_blocks=slow.get("blocks", True), pre_existing_block=fail.get("pre_existing_block", True),
               flaky_bound=float(flaky.get("bound", 0.1)), flaky_window=int(flaky.get("window", 20)),
               flaky_blocks=flaky.get("blocks", False), source=str(path))
    return p


def _index(data: dict) -> dict[tuple[str, str], dict]:
    out = {}
    for c in data["cases"]:
        out[(test_key(c["nodeid"], c.get("backend")), device_of(c, data))] = c
    return out


def _name(key: tuple[str, str]) -> str:
    return f"{key[0]} on {key[1]}"


def _listing(keys: list, describe=None) -> str:
    shown = [describe(k) if describe else _name(k) for k in keys[:_LIST]]
    more = f"; and {len(keys) - _LIST} more" if len(keys) > _LIST else ""
    return "; ".join(shown) + more


def _on(name: str, device: str, case: dict) -> bool:
    """Does a policy's backend name cover this case? A backend id, a whole device column
    ("npu/Phoenix"), or a runner label (the part of a merged column before "/")."""
    return name in (case.get("backend"), device, device.split("/", 1)[0], device.rsplit("/", 1)[-1])


def _expected(c: dict) -> bool:
    return bool((c.get("detail") or {}).get("expectation"))


def _ran(c: dict) -> bool:
    return c["verdict"] not in verdicts.NOT_RUN


def faults_of(data: dict) -> list[str]:
    """The faults injected into a run (a merged run: into any of its sources)."""
    session = data.get("session") or {}
    found = [session.get("fault")] + [s.get("fault") for s in session.get("merged_from") or []
                                      if isinstance(s, dict)]
    return list(dict.fromkeys(str(f) for f in found if f))


def fault_banner(data: dict) -> Optional[str]:
    """The second line of every report of a run with an injected fault and of the gate's answer,
    right under SHIP / DON'T SHIP."""
    found = faults_of(data)
    if not found:
        return None
    return f"fault {', '.join(found)} injected: not a release run"


def release_refusal(data: dict, allow_fault: bool = False) -> Optional[str]:
    """Why ``data`` may not go into a release matrix (merge, gate), or None. A run with an injected
    fault is refused unless the caller was asked explicitly (``allow_fault``)."""
    banner = fault_banner(data)
    if banner and not allow_fault:
        return f"{banner} (pass --allow-fault to use it anyway)"
    return None


@dataclass
class Verdict:
    ship: bool
    reasons: list[str]       # blocking
    notes: list[str]         # said, not blocking
    banner: Optional[str] = None     # the injected fault, said right after the verdict
    policy: str = Policy.source

    @property
    def head(self) -> str:
        return "SHIP" if self.ship else f"DON'T SHIP: {len(self.reasons)} reason{'s' if len(self.reasons) != 1 else ''}"

    def lines(self) -> list[str]:
        """What every output opens with: SHIP / DON'T SHIP, then the fault banner (if any). The
        verdict first: a release manager reads one line, and it must be the answer."""
        return [self.head] + ([self.banner] if self.banner else [])

    def text(self) -> str:
        return "\n".join(self.lines() + [f"  - {r}" for r in self.reasons] + [f"  . {n}" for n in self.notes])


def evaluate(data: dict, baseline: Optional[dict] = None, policy: Optional[Policy] = None,
             allow_fault: bool = False, known_flaky: Optional[dict] = None) -> Verdict:
    """``known_flaky``: {(test key, device): why} of failures the history knows as flaky."""
    policy = policy or Policy()
    now = _index(data)
    base = _index(baseline) if baseline else {}
    reasons, notes = [], []
    session = data.get("session") or {}
    banner = fault_banner(data)
    refusal = release_refusal(data, allow_fault)
    if refusal:
        reasons.append(refusal)
    elif banner:
        notes.append(f"{banner}; gated anyway (--allow-fault)")

    if session.get("interrupted"):
        reasons.append(f"the session was interrupted ({session.get('stop_reason') or 'stopped early'}): "
                       f"its results are incomplete")
    reasons += completeness.refusals(data)       # empty, sessionless, never finished, lost a failure

    # Failures, split by what the baseline said.
    failing = sorted(k for k, c in now.items() if c["verdict"] in FAILURES)
    known = [k for k in failing if k in (known_flaky or {})]
    if known:
        line = (f"{len(known)} failure(s) known flaky in the history (flip rate above {policy.flaky_bound:g} "
                f"over the last {policy.flaky_window} runs): " +
                _listing(known, lambda k: f"{now[k]['verdict']} {_name(k)}: {known_flaky[k]}"))
        (reasons if policy.flaky_blocks else notes).append(line)
        failing = [k for k in failing if k not in known]
    flaky = [k for k in failing if now[k]["verdict"] == verdicts.FLAKY
             and (base.get(k) or {}).get("verdict") != verdicts.FLAKY]
    if flaky:
        reasons.append(f"{len(flaky)} new FLAKY (mixed outcomes over --repeat): " +
                       _listing(flaky, lambda k: f"FLAKY {_rate(now[k])} {_name(k)}"))
    failing = [k for k in failing if k not in flaky]
    new_hc = [k for k in failing if now[k]["verdict"] in (verdicts.HANG, verdicts.CRASH)
              and (base.get(k) or {}).get("verdict") not in (verdicts.HANG, verdicts.CRASH)]
    if new_hc:
        reasons.append(f"{len(new_hc)} new hang/crash: " +
                       _listing(new_hc, lambda k: f"{now[k]['verdict']} {_name(k)}"))
    rest = [k for k in failing if k not in new_hc]
    if baseline is not None:
        new = [k for k in rest if (base.get(k) or {}).get("verdict") == verdicts.PASS]
        changed = [k for k in rest if (base.get(k) or {}).get("verdict") == verdicts.XFAIL]
        old = [k for k in rest if (base.get(k) or {}).get("verdict") in FAILURES]
        unseen = [k for k in rest if k not in new and k not in old and k not in changed]
        if new:
            reasons.append(f"{len(new)} new failure(s), passed in the baseline: " +
                           _listing(new, lambda k: f"{now[k]['verdict']} {_name(k)}"))
        if changed:
            reasons.append(f"{len(changed)} known bug(s) now fail another way (XFAIL in the baseline): " +
                           _listing(changed, lambda k: f"{now[k]['verdict']} {_name(k)}"))
        if unseen:
            reasons.append(f"{len(unseen)} failure(s) of cases not in the baseline: " +
                           _listing(unseen, lambda k: f"{now[k]['verdict']} {_name(k)}"))
        if old:
            line = (f"{len(old)} failure(s) also in the baseline, not in the known-bug list: " +
                    _listing(old, lambda k: f"{now[k]['verdict']} {_name(k)}"))
            (reasons if policy.pre_existing_block else notes).append(line)
    elif rest:
        reasons.append(f"{len(rest)} failure(s) not in the known-bug list: " +
                       _listing(rest, lambda k: f"{now[k]['verdict']} {_name(k)}"))

    xpass = sorted(k for k, c in now.items() if c["verdict"] == verdicts.XPASS)
    if xpass:
        def fixed(k):
            exp = (now[k].get("detail") or {}).get("expectation") or {}
            where = f" (remove {exp.get('test')!r} from {exp.get('file')})" if exp else ""
            return f"{_name(k)}{where}"
        reasons.append(f"{len(xpass)} XPASS, known bug(s) fixed: un-list them: " + _listing(xpass, fixed))

    # Backends that were required but did not run.
    required = policy.backends if policy.backends is not None else list(session.get("hw") or [])
    info = data.get("backends") or {}
    for name in required:
        if any(_on(name, d, c) and _ran(c) for (k, d), c in now.items()):
            continue
        skips = [c for (k, d), c in now.items() if _on(name, d, c)]
        if name in info and not info[name].get("available", True):
            why = info[name].get("reason") or "unavailable"
        elif skips:
            why = f"all {len(skips)} case(s) SKIP: " + (skips[0].get("message") or "no reason given").splitlines()[0]
        else:
            why = "no case ran on it (not selected?)"
        reasons.append(f"backend {name} is required by {policy.source} but did not run: {why}")

    for marker in policy.markers:
        missing = [b for b in required if not any(
            _on(b, d, c) and _ran(c)
            and marker in ((c.get("detail") or {}).get("markers") or []) for (k, d), c in now.items())]
        if missing:
            reasons.append(f"marker {marker!r} is required but no {marker} case ran on {', '.join(missing)} "
                           f"(run with -m {marker})")
    for family in policy.families:
        if not any(c.get("family") == family and _ran(c) for c in now.values()):
            reasons.append(f"family {family!r} is required but none of its cases ran")

    # Slowdowns against the baseline.
    if baseline is not None:
        slow = []
        for k, c in now.items():
            b = base.get(k)
            if not b or c["verdict"] not in (verdicts.PASS, verdicts.XFAIL) or b["verdict"] not in (verdicts.PASS, verdicts.XFAIL):
                continue
            t, t0 = float(c.get("duration_s") or 0), float(b.get("duration_s") or 0)
            if t0 > 0 and t > policy.slow_factor * t0 and t - t0 >= policy.slow_min_s:
                slow.append((t / t0, k, t0, t))
        slow.sort(reverse=True)
        if slow:
            line = (f"{len(slow)} case(s) more than {policy.slow_factor:g}x slower than the baseline: " +
                    "; ".join(f"{_name(k)} {t0:.2f} s -> {t:.2f} s ({r:.1f}x)" for r, k, t0, t in slow[:_LIST]) +
                    (f"; and {len(slow) - _LIST} more" if len(slow) > _LIST else ""))
            (reasons if policy.slow_blocks else notes).append(line)
        fixed_now = [k for k, c in now.items() if c["verdict"] == verdicts.PASS
                     and (base.get(k) or {}).get("verdict") in FAILURES]
        if fixed_now:
            notes.append(f"{len(fixed_now)} case(s) failed in the baseline and pass now: " + _listing(sorted(fixed_now)))
        gone = [k for k in base if k not in now and _ran(base[k])]
        if gone:
            notes.append(f"{len(gone)} case(s) of the baseline did not run now: " + _listing(sorted(gone)))

    # Skips: never silent.
    skips = [c for c in now.values() if c["verdict"] == verdicts.SKIP]
    known = [c for c in skips if _expected(c)]
    other = Counter(((c.get("message") or "no reason given").splitlines() or ["?"])[0][:120]
                    for c in skips if not _expected(c))
    if other:
        notes.append(f"{sum(other.values())} SKIP: " + "; ".join(f"{n} x {why}" for why, n in other.most_common(3))
                     + (f"; and {len(other) - 3} other reason(s)" if len(other) > 3 else ""))
    na = {(c.get("family") or "?", d) for (k, d), c in now.items() if c["verdict"] == verdicts.NOT_APPLICABLE}
    if na:
        notes.append(f"{len(na)} family x backend pair(s) not applicable (the backend can never run the family)")
    xfail = sum(1 for c in now.values() if c["verdict"] == verdicts.XFAIL)
    if xfail or known:
        notes.append(f"known bugs: {xfail} XFAIL, {len(known)} known HANG/CRASH not attempted")
    notes.append(f"{len(now)} cases: " + (", ".join(f"{n} {v}" for v, n in
                                                     Counter(c['verdict'] for c in now.values()).most_common()) or "none"))
    return Verdict(not reasons, reasons, notes, banner, policy.source)


def _rate(c: dict) -> str:
    rep = (c.get("detail") or {}).get("repeat") or {}
    return f"{rep.get('failed', '?')}/{rep.get('runs', '?')}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress gate",
                                description="Ship (exit 0) or not (exit 1), and why.")
    p.add_argument("results", help="this run's results.json (one runner's, or merged)")
    p.add_argument("--baseline", help="an earlier results.json to compare with, or 'history': each device's "
                                      "previous run in the results history, and its known-flaky failures")
    p.add_argument("--history", default=None, metavar="PATH|URL",
                   help="the history --baseline history reads (default: $ACCEL_HISTORY, else the user data folder's)")
    p.add_argument("--policy", help="release policy TOML (default: every backend the session asked for must run)")
    p.add_argument("--allow-fault", action="store_true",
                   help="gate a run with an injected fault anyway (default: such a run is refused)")
    args = p.parse_args(argv)
    try:
        data = results.load(Path(args.results))
        from_history = args.baseline == "history" and not Path(args.baseline).exists()
        baseline = results.load(Path(args.baseline)) if args.baseline and not from_history else None
        policy = load_policy(Path(args.policy)) if args.policy else None
    except (results.ResultsError, PolicyError) as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 2
    known, note = None, None
    if from_history:
        from accel_regress.results.history.baseline import HistoryError, from_history as history_inputs
        p0 = policy or Policy()
        try:    # --allow-fault: the history's fault runs count too (they stand for a flaky or broken device)
            baseline, known, note = history_inputs(data, args.history, FAILURES, p0.flaky_bound, p0.flaky_window,
                                                   with_faults=args.allow_fault)
        except HistoryError as exc:
            print(f"gate: {exc}", file=sys.stderr)
            return 2
    verdict = evaluate(data, baseline, policy, allow_fault=args.allow_fault, known_flaky=known)
    if note:
        verdict.notes.insert(0, note)
    print(verdict.text())
    return 0 if verdict.ship else 1
