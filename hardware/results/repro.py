"""The repros' shared set-up (repros/*.py): options, backend, fault, known bugs, exit status.

A repro is a plain script run from a checkout (``python repros/NAME.py --hw BACKEND``) against
the installed package; this module is what every one of them does before and after its own runs,
the way a pytest session does it:

- options: ``--hw``, ``--fault`` (also spelled ``--inject-fault``, pytest's name), ``--golden-seed``,
  ``--case-timeout``, ``--expectations DIR`` and ``--ignore-expectations`` (pytest's meanings);
- opening: an unknown backend or a fault that cannot be loaded is a usage error (exit 2, said on
  stderr); a backend whose piece is missing here is ``BACKEND: SKIP: reason`` (exit 2); then the
  runs are set up isolated, as in pytest (runner.standalone);
- known bugs: each verdict is judged against expectations/<backend>.toml under the node id of the
  pytest case that runs the same case (results/known.py): a listed bug as listed is XFAIL with
  the entry's reason, a listed bug that passed is XPASS;
- exit status: 0 when everything passed or failed only as known, 1 when anything failed, hung,
  crashed or XPASSed, 2 on bad usage or when nothing could run (``status``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterable, Optional

from accel_regress.core import registry, runner, verdicts
from accel_regress.core.isolation.bounds import seconds
from accel_regress.results import known
from accel_regress.results.expectations import Expectations, ExpectationsError, load_dir

OK, BUG, USAGE = 0, 1, 2


def seconds_argument(text: str) -> float:
    """argparse's type for --case-timeout: a usage error (exit 2) unless a positive, finite bound."""
    try:
        return seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_options(ap: argparse.ArgumentParser, *, default_hw: str,
                fault_help: str = "built-in fault name or FILE.py:NAME") -> argparse.ArgumentParser:
    """The options every repro takes (module docstring); ``default_hw``: the repro's own default
    backend (the core names none)."""
    ap.add_argument("--hw", default=default_hw, help=f"backend (default {default_hw})")
    ap.add_argument("--fault", "--inject-fault", dest="fault", default=None, metavar="NAME|FILE.py:NAME",
                    help=fault_help)
    ap.add_argument("--golden-seed", type=int, default=0, help="shift every case's input seed (as pytest's)")
    ap.add_argument("--case-timeout", type=seconds_argument, default=None, metavar="SECONDS",
                    help="bound for one run (default: the backend's own, per case)")
    return add_expectation_options(ap)


def add_expectation_options(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--expectations DIR and --ignore-expectations, as pytest's (for a parser that has the rest)."""
    ap.add_argument("--expectations", type=Path, default=None, metavar="DIR",
                    help="known-bug files, one per backend (default: the checkout's expectations/)")
    ap.add_argument("--ignore-expectations", action="store_true",
                    help="judge every run plainly: no XFAIL / XPASS")
    return ap


def parser(doc: str, **kw) -> argparse.ArgumentParser:
    """A repro's parser: its description is its docstring's first line, plus the common options."""
    return add_options(argparse.ArgumentParser(description=doc.strip().splitlines()[0]), **kw)


class Repro:
    """One repro's run: opened from its parsed options, then asked to judge each verdict."""

    def __init__(self, prog: str, args: argparse.Namespace):
        self.prog, self.args = prog, args
        self.hw, self.fault = args.hw, args.fault
        self._expectations: Optional[Expectations] = None

    def open(self) -> Optional[int]:
        """Check the backend, load the fault, set up isolated runs; the exit status when the
        repro cannot go on (module docstring), else None."""
        if self.hw not in registry.KNOWN:
            print(f"{self.prog}: unknown backend {self.hw!r}; known: {', '.join(registry.KNOWN)}", file=sys.stderr)
            return USAGE
        if self.args.expectations is not None and not self.args.ignore_expectations:
            try:
                self._expectations = load_dir(self.args.expectations)
            except ExpectationsError as exc:
                print(f"{self.prog}: --expectations: {exc}", file=sys.stderr)
                return USAGE
        if runner.standalone(self.prog, self.fault, self.hw, self.args.case_timeout) is not None:
            return USAGE
        reason = registry.availability(self.hw)
        if reason:
            print(f"{self.hw}: SKIP: {reason}")
            return USAGE
        return None

    def title(self, what: str) -> str:
        """The header's first line: what runs, where, with which fault and seed."""
        return (f"{what} on {self.hw}" + (f" with fault {self.fault}" if self.fault else "")
                + (f", golden seed {self.args.golden_seed}" if self.args.golden_seed else ""))

    def entry(self, nodeid: str, versions: Optional[dict] = None):
        """The expectations entry for the pytest case ``nodeid`` (without the backend), or None."""
        if self.args.ignore_expectations:
            return None
        if self._expectations is not None:
            return self._expectations.match(self.hw, nodeid, versions)
        return known.entry_for(self.hw, nodeid, versions)

    def judge(self, verdict: str, nodeids: Iterable[str], versions: Optional[dict] = None,
              reason_chars: Optional[int] = None) -> tuple[str, str]:
        """A run's verdict as a session would give it, and a note naming the known bug (or "").
        ``nodeids``: the pytest cases that run this same case (the first with an entry counts)."""
        entry = next((e for e in (self.entry(n, versions) for n in nodeids) if e is not None), None)
        judged = known.judged(verdict, entry)
        if judged == verdict:
            return verdict, ""
        return judged, f"known {entry.verdict} ({entry.file or 'expectations'}): {entry.reason[:reason_chars]}"


def status(verdicts_seen: Iterable[str]) -> int:
    """The exit status for these (judged) verdicts: 2 when nothing ran, 1 when any is bad, else 0."""
    seen = list(verdicts_seen)
    if all(v in verdicts.NOT_RUN for v in seen):
        return USAGE
    return BUG if any(v in verdicts.BAD for v in seen) else OK
