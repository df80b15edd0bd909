"""Why a case did not run, as the rule that decided it rather than its message text (issue 37
item 4): the terminal, the gate and the reports count SKIP / NOT_APPLICABLE by these, so one rule
is one line whatever numbers its messages carry, and they agree on what "not attempted" is.

A rule is the message's first line with what varies per case (numbers, quoted names) written as
``N`` / ``'…'``; three rules have fixed wording: a known HANG / CRASH not attempted (an
expectations entry of that verdict), a case outside a simulator's default-run budget
(hardware/core/budget.py), and a backend that is unavailable (the reason is the backend's, so it
stays as written)."""
from __future__ import annotations

import re
from typing import Optional

from accel_regress.core import verdicts

NOT_ATTEMPTED = (verdicts.HANG, verdicts.CRASH)
BUDGET = "outside its default-run budget"
NEEDS_LARGE = "need `-m large` (outside a simulator's default-run budget)"
KNOWN_NOT_ATTEMPTED = "known HANG/CRASH not attempted (--run-known-hangs to try)"
# A number standing alone (not the 16 of bf16 or rv64), and shapes such as 64x64x128.
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", re.IGNORECASE)
_SHAPE = re.compile(r"(?<![\w.])\d+(?:x\d+)+(?![\w])")
_QUOTED = re.compile(r"'[^']*'")
_PATHLIKE = re.compile(r"\S+\.(?:py|json|toml|mlir|vmfb)(?::\d+)*")


def _first(text: Optional[str]) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def expectation(case: dict) -> dict:
    return (case.get("detail") or {}).get("expectation") or {}


def not_attempted(case: dict) -> bool:
    """A known HANG / CRASH left alone: a SKIP whose expectations entry expects HANG or CRASH (a
    budget SKIP of a case with a known-FAIL entry is a budget SKIP)."""
    return case["verdict"] == verdicts.SKIP and expectation(case).get("verdict") in NOT_ATTEMPTED


def over_budget(case: dict) -> bool:
    return case["verdict"] == verdicts.SKIP and BUDGET in (case.get("message") or "")


def rule(case: dict) -> str:
    """The rule a SKIP / NOT_APPLICABLE case was decided by, in words."""
    if not_attempted(case):
        return KNOWN_NOT_ATTEMPTED
    message = _first(case.get("message")) or "no reason given"
    if over_budget(case):
        return NEEDS_LARGE
    if message.startswith("backend ") and " unavailable: " in message:
        return message
    text = _PATHLIKE.sub("…", message)
    text = _QUOTED.sub("'…'", text)
    text = _SHAPE.sub(lambda m: "x".join("N" * (m.group().count("x") + 1)), text)
    return _NUMBER.sub("N", text)[:300]


def grouped(cases: list[dict], verdict: str) -> list[tuple[str, int, list[str]]]:
    """(rule, how many cases, backends) for the cases of ``verdict``, largest first."""
    out: dict[str, list] = {}
    for c in cases:
        if c["verdict"] == verdict:
            entry = out.setdefault(rule(c), [0, set()])
            entry[0] += 1
            entry[1].add(c.get("backend") or NO_BACKEND)
    return sorted(((r, n, sorted(b)) for r, (n, b) in out.items()), key=lambda t: (-t[1], t[0]))


# The row of checks that run no backend (a lint over artifacts, a host-side property): what they
# are, never a "-" that reads as a device.
NO_BACKEND = "no backend (host-side check)"
