"""The release gate: ``python -m accel_regress gate RESULTS.json [--baseline OLD.json] [--policy FILE]``.

Exit 0: ship. Exit 1: don't, with one line per reason. Exit 2: the inputs could not be read.

Blocking, always:
- a run with an injected fault (``--inject-fault``): it proves the checks, it is not a release
  run; ``--allow-fault`` gates it anyway (the fault is then a note);
- cases that got no verdict on the device (a FAIL at stage ``harness``, ``family`` or ``setup``: a
  full or read-only cache root, a family's program that raised, an exception of the test's own
  code), whatever the baseline or the known bugs say;
- failures not in the known-bug list (FAIL, FLAKY, HANG, CRASH, COMPILE_ERROR); against a baseline each
  is worded as *new* (passed there), *still failing* or *not in the baseline*;
- XPASS: a known bug no longer happens; its expectation entry must go;
- backends the policy requires (default: every backend the session asked for) that did not run,
  or ran nothing but SKIPs: an unexpected SKIP is never silent;
- required markers / families with no case that ran on a required backend;
- an interrupted session (its results are incomplete);
- a record that is not whole (hardware/results/completeness.py): no session, no cases, a session that
  never finished (killed), an exit status that says a test failed while no case did, one shard of a
  ``--shard`` split alone, a merge whose shards do not tile their selection (hardware/results/tiling.py).
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
from typing import Iterator, Optional

from accel_regress.results import completeness, record as results, skip_rules

from accel_regress.util import schemas
from accel_regress.core import verdicts
from accel_regress.results.keys import device_of, test_key
from accel_regress.util.escape import term_text

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
    doc = schemas.load_toml(path, "policy", PolicyError)     # hardware/util/schemas/policy.schema.json
    req, slow, fail = doc.get("required", {}), doc.get("slowdown", {}), doc.get("failures", {})
    flaky = doc.get("flaky", {})
    p = Policy(backends=req.get("backends"), markers=req.get("markers", []), families=req.get("families", []),
               slow_factor=float(slow.get("factor", 2.0)), slow_min_s=float(slow.get("min_seconds", 1.0)),
               slow_blocks=slow.get("blocks", True), pre_existing_block=fail.get("pre_existing_block", True),
               flaky_bound=float(flaky.get("bound", 0.1)), flaky_window=int(flaky.get("window", 20)),
               flaky_blocks=flaky.get("blocks", False), source=str(path))
    return p


def _index(data: dict) -> dict[tuple[str, str], dict]:
    """Each (test, device) of a record once: by its worse verdict when the record holds it twice
    (as merge does), never the last one's."""
    return verdicts.worst_by(data["cases"], lambda c: (test_key(c["nodeid"], c.get("backend")), device_of(c, data)))


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


@dataclass
class _Run:
    """What every rule reads: this run, the baseline, the policy, indexed once."""
    data: dict
    baseline: Optional[dict]
    policy: Policy
    allow_fault: bool
    known_flaky: dict

    def __post_init__(self):
        self.now = _index(self.data)
        self.base = _index(self.baseline) if self.baseline else {}
        self.session = self.data.get("session") or {}
        self.required = (self.policy.backends if self.policy.backends is not None
                         else list(self.session.get("hw") or []))
        self.failures = _Failures(self)

    def was(self, k) -> Optional[str]:
        """The verdict of test key ``k`` in the baseline, None where it has none."""
        return (self.base.get(k) or {}).get("verdict")

    def worded(self, keys: list) -> str:
        return _listing(keys, lambda k: f"{self.now[k]['verdict']} {_name(k)}")


class _Failures:
    """This run's failures, each in the first of these groups it belongs to: known flaky in the
    history, new FLAKY, new hang/crash, the rest (worded against the baseline)."""

    def __init__(self, r: _Run):
        failing = sorted(k for k, c in r.now.items() if c["verdict"] in FAILURES)
        # No verdict on the device at all: never flaky, never "also in the baseline" (issue 47 defect 2).
        self.harness = [k for k in failing if verdicts.the_harness(r.now[k])]
        failing = [k for k in failing if k not in self.harness]
        hc = (verdicts.HANG, verdicts.CRASH)
        # A hang or crash is never downgraded as flaky: a device that sometimes hangs is not shippable.
        self.known_flaky = [k for k in failing if k in r.known_flaky and r.now[k]["verdict"] not in hc]
        failing = [k for k in failing if k not in r.known_flaky]
        self.flaky = [k for k in failing if r.now[k]["verdict"] == verdicts.FLAKY and r.was(k) != verdicts.FLAKY]
        failing = [k for k in failing if k not in self.flaky]
        self.new_hang_crash = [k for k in failing if r.now[k]["verdict"] in hc and r.was(k) not in hc]
        self.rest = [k for k in failing if k not in self.new_hang_crash]


# A rule yields (blocks, line): a reason not to ship, or a note said beside the verdict.
Line = tuple[bool, str]


def _fault(r: _Run) -> Iterator[Line]:
    banner, refusal = fault_banner(r.data), release_refusal(r.data, r.allow_fault)
    if refusal:
        yield True, refusal
    elif banner:
        yield False, f"{banner}; gated anyway (--allow-fault)"


def _interrupted(r: _Run) -> Iterator[Line]:
    if r.session.get("interrupted"):
        yield True, (f"the session was interrupted ({r.session.get('stop_reason') or 'stopped early'}): "
                     f"its results are incomplete")


def _incomplete(r: _Run) -> Iterator[Line]:
    for refusal in completeness.refusals(r.data):     # empty, sessionless, never finished, lost a failure
        yield True, refusal


def _harness(r: _Run) -> Iterator[Line]:
    cases = r.failures.harness
    if cases:
        yield True, (f"{len(cases)} case(s) got no verdict on the device: the suite's own files or a family's "
                     "code failed (fix it and run again): " +
                     _listing(cases, lambda k: f"{_name(k)}: {_first_line(r.now[k].get('message'))}"))


def _first_line(text: Optional[str]) -> str:
    return next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")[:200]


def _known_flaky(r: _Run) -> Iterator[Line]:
    known, p = r.failures.known_flaky, r.policy
    if known:
        yield p.flaky_blocks, (f"{len(known)} failure(s) known flaky in the history (flip rate above "
                               f"{p.flaky_bound:g} over the last {p.flaky_window} runs): " +
                               _listing(known, lambda k: f"{r.now[k]['verdict']} {_name(k)}: {r.known_flaky[k]}"))


def _new_flaky(r: _Run) -> Iterator[Line]:
    flaky = r.failures.flaky
    if flaky:
        yield True, (f"{len(flaky)} new FLAKY (mixed outcomes over --repeat): " +
                     _listing(flaky, lambda k: f"FLAKY {_rate(r.now[k])} {_name(k)}"))


def _new_hang_crash(r: _Run) -> Iterator[Line]:
    new_hc = r.failures.new_hang_crash
    if new_hc:
        yield True, f"{len(new_hc)} new hang/crash: " + r.worded(new_hc)


def _failures(r: _Run) -> Iterator[Line]:
    """The other failures; against a baseline, each worded by what the baseline said."""
    rest = r.failures.rest
    if r.baseline is None:
        if rest:
            yield True, f"{len(rest)} failure(s) not in the known-bug list: " + r.worded(rest)
        return
    new = [k for k in rest if r.was(k) == verdicts.PASS]
    changed = [k for k in rest if r.was(k) == verdicts.XFAIL]
    old = [k for k in rest if r.was(k) in FAILURES]
    unseen = [k for k in rest if k not in new and k not in old and k not in changed]
    if new:
        yield True, f"{len(new)} new failure(s), passed in the baseline: " + r.worded(new)
    if changed:
        yield True, f"{len(changed)} known bug(s) now fail another way (XFAIL in the baseline): " + r.worded(changed)
    if unseen:
        yield True, f"{len(unseen)} failure(s) of cases not in the baseline: " + r.worded(unseen)
    if old:
        yield r.policy.pre_existing_block, (f"{len(old)} failure(s) also in the baseline, not in the known-bug "
                                            f"list: " + r.worded(old))


def _xpass(r: _Run) -> Iterator[Line]:
    xpass = sorted(k for k, c in r.now.items() if c["verdict"] == verdicts.XPASS)

    def fixed(k):
        exp = (r.now[k].get("detail") or {}).get("expectation") or {}
        where = f" (remove {exp.get('test')!r} from {exp.get('file')})" if exp else ""
        return f"{_name(k)}{where}"
    if xpass:
        yield True, f"{len(xpass)} XPASS, known bug(s) fixed: un-list them: " + _listing(xpass, fixed)


def _required_backends(r: _Run) -> Iterator[Line]:
    info = r.data.get("backends") or {}
    for name in r.required:
        if any(_on(name, d, c) and _ran(c) for (k, d), c in r.now.items()):
            continue
        skips = [c for (k, d), c in r.now.items() if _on(name, d, c)]
        if skips and all(c["verdict"] == verdicts.NOT_APPLICABLE for c in skips):
            # A fact about the families (no program for this backend, say), not about this run: the
            # session's cases leave it nothing to run, which blocks nothing (issue 48).
            families = sorted({c.get("family") or "?" for c in skips})
            yield False, f"backend {name} has nothing to run: not applicable to {', '.join(families)}"
            continue
        if name in info and not info[name].get("available", True):
            why = info[name].get("reason") or "unavailable"
        elif skips:
            why = f"all {len(skips)} case(s) SKIP: " + (skips[0].get("message") or "no reason given").splitlines()[0]
        else:
            why = "no case ran on it (not selected?)"
        yield True, f"backend {name} is required by {r.policy.source} but did not run: {why}"


def _required_markers(r: _Run) -> Iterator[Line]:
    for marker in r.policy.markers:
        missing = [b for b in r.required if not any(
            _on(b, d, c) and _ran(c)
            and marker in ((c.get("detail") or {}).get("markers") or []) for (k, d), c in r.now.items())]
        if missing:
            yield True, (f"marker {marker!r} is required but no {marker} case ran on {', '.join(missing)} "
                         f"(run with -m {marker})")


def _required_families(r: _Run) -> Iterator[Line]:
    for family in r.policy.families:
        if not any(c.get("family") == family and _ran(c) for c in r.now.values()):
            yield True, f"family {family!r} is required but none of its cases ran"


def _slowdowns(r: _Run) -> Iterator[Line]:
    if r.baseline is None:
        return
    timed = (verdicts.PASS, verdicts.XFAIL)
    slow = []
    for k, c in r.now.items():
        b = r.base.get(k)
        if not b or c["verdict"] not in timed or b["verdict"] not in timed:
            continue
        t, t0 = float(c.get("duration_s") or 0), float(b.get("duration_s") or 0)
        if t0 > 0 and t > r.policy.slow_factor * t0 and t - t0 >= r.policy.slow_min_s:
            slow.append((t / t0, k, t0, t))
    slow.sort(reverse=True)
    if slow:
        yield r.policy.slow_blocks, (
            f"{len(slow)} case(s) more than {r.policy.slow_factor:g}x slower than the baseline: " +
            "; ".join(f"{_name(k)} {t0:.2f} s -> {t:.2f} s ({x:.1f}x)" for x, k, t0, t in slow[:_LIST]) +
            (f"; and {len(slow) - _LIST} more" if len(slow) > _LIST else ""))


def _fixed_since_baseline(r: _Run) -> Iterator[Line]:
    if r.baseline is None:
        return
    fixed_now = [k for k, c in r.now.items() if c["verdict"] == verdicts.PASS and r.was(k) in FAILURES]
    if fixed_now:
        yield False, f"{len(fixed_now)} case(s) failed in the baseline and pass now: " + _listing(sorted(fixed_now))


def _gone_since_baseline(r: _Run) -> Iterator[Line]:
    if r.baseline is None:
        return
    gone = [k for k in r.base if k not in r.now and _ran(r.base[k])]
    if gone:
        yield False, f"{len(gone)} case(s) of the baseline did not run now: " + _listing(sorted(gone))


def _skips(r: _Run) -> Iterator[Line]:
    """SKIPs are never silent: counted by rule (hardware/results/skip_rules.py), the known HANG /
    CRASH not attempted apart (the known-bugs line counts them)."""
    other = Counter(skip_rules.rule(c) for c in r.now.values()
                    if c["verdict"] == verdicts.SKIP and not skip_rules.not_attempted(c))
    if other:
        known = sum(1 for c in r.now.values() if skip_rules.not_attempted(c))
        besides = f" (besides {known} known HANG/CRASH not attempted)" if known else ""
        yield False, (f"{sum(other.values())} SKIP{besides}: " + "; ".join(f"{n} x {why}" for why, n in other.most_common(3))
                      + (f"; and {len(other) - 3} other rule(s)" if len(other) > 3 else ""))


def _not_applicable(r: _Run) -> Iterator[Line]:
    na = {(c.get("family") or "?", d) for (k, d), c in r.now.items() if c["verdict"] == verdicts.NOT_APPLICABLE}
    if na:
        yield False, f"{len(na)} family x backend pair(s) not applicable (the backend can never run the family)"


def _known_bugs(r: _Run) -> Iterator[Line]:
    xfail = sum(1 for c in r.now.values() if c["verdict"] == verdicts.XFAIL)
    not_attempted = sum(1 for c in r.now.values() if skip_rules.not_attempted(c))
    if xfail or not_attempted:
        yield False, f"known bugs: {xfail} XFAIL, {not_attempted} known HANG/CRASH not attempted"


def _counts(r: _Run) -> Iterator[Line]:
    yield False, f"{len(r.now)} cases: " + (", ".join(
        f"{n} {v}" for v, n in Counter(c['verdict'] for c in r.now.values()).most_common()) or "none")


# In the order their lines are said (reasons and notes each keep it).
RULES = (_fault, _interrupted, _incomplete, _harness, _known_flaky, _new_flaky, _new_hang_crash, _failures, _xpass,
         _required_backends, _required_markers, _required_families, _slowdowns, _fixed_since_baseline,
         _gone_since_baseline, _skips, _not_applicable, _known_bugs, _counts)


def evaluate(data: dict, baseline: Optional[dict] = None, policy: Optional[Policy] = None,
             allow_fault: bool = False, known_flaky: Optional[dict] = None) -> Verdict:
    """``known_flaky``: {(test key, device): why} of failures the history knows as flaky. Every line of
    the answer comes from one rule of RULES."""
    policy = policy or Policy()
    run = _Run(data, baseline, policy, allow_fault, known_flaky or {})
    reasons, notes = [], []
    for rule in RULES:
        for blocks, line in rule(run):
            (reasons if blocks else notes).append(line)
    return Verdict(not reasons, reasons, notes, fault_banner(data), policy.source)


def _rate(c: dict) -> str:
    rep = (c.get("detail") or {}).get("repeat") or {}
    return f"{rep.get('failed', '?')}/{rep.get('runs', '?')}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m accel_regress gate",
                                description="Ship (exit 0) or not (exit 1), and why.")
    p.add_argument("results", help="this run's results.json (one runner's, or merged)")
    p.add_argument("--baseline", help="an earlier results.json to compare with, or 'history': each device's "
                                      "previous run in the results history, and its known-flaky failures "
                                      "(a file named history: ./history)")
    p.add_argument("--history", default=None, metavar="PATH|URL",
                   help="the history --baseline history reads (default: $ACCEL_HISTORY, else the project's own, .accel-regress/history.sqlite)")
    p.add_argument("--policy", help="release policy TOML (default: every backend the session asked for must run)")
    p.add_argument("--allow-fault", action="store_true",
                   help="gate a run with an injected fault anyway (default: such a run is refused)")
    p.add_argument("--flaky-imports", action="store_true",
                   help="with --baseline history: runs brought in by `history import` count as evidence of "
                        "flakiness too (default: only sessions that stored themselves)")
    args = p.parse_args(argv)
    try:
        data = results.load(Path(args.results))
        from_history = args.baseline == "history"      # always the history: a file so named is ./history
        baseline = results.load(Path(args.baseline)) if args.baseline and not from_history else None
        policy = load_policy(Path(args.policy)) if args.policy else None
    except (results.ResultsError, PolicyError) as exc:
        print(term_text(f"gate: {exc}", keep_newlines=True), file=sys.stderr)
        return 2
    known, note = None, None
    if from_history:
        from accel_regress.results.history.baseline import HistoryError, from_history as history_inputs
        p0 = policy or Policy()
        # Fault runs count as evidence only for a fault run gated with --allow-fault (the selftests'
        # stand-in for a flaky device): never for a clean run.
        try:
            baseline, known, note = history_inputs(data, args.history, FAILURES, p0.flaky_bound, p0.flaky_window,
                                                   with_faults=args.allow_fault and bool(faults_of(data)),
                                                   with_imports=args.flaky_imports)
        except HistoryError as exc:
            print(term_text(f"gate: {exc}", keep_newlines=True), file=sys.stderr)
            return 2
    verdict = evaluate(data, baseline, policy, allow_fault=args.allow_fault, known_flaky=known)
    if note:
        verdict.notes.insert(0, note)
    # Test ids, messages and history revisions are the run's words: inert on a terminal (issue 47 S3).
    print(term_text(verdict.text(), keep_newlines=True))
    return 0 if verdict.ship else 1
