#!/usr/bin/env python3
"""`make test`: every tier of the project's own check, in order, each timed, with a table at the end.

Tiers: set-up (scripts/setup.sh), lint and types (ruff, scripts/typecheck.py), the docs (`make
docs`: sphinx-build -W), the default run (the suite on the embedded default backends, as `make
suite`), the selftests (hermetic, so under pytest-xdist: -n from $ACCEL_TEST_WORKERS, default 2;
the `slow` ones only with --slow, as the nightly job runs them), and the wheel check (scripts/wheel_check.sh). A tier that fails does not
stop the later ones (CI's log then shows every failure of the run, not the first); the exit status
is that of the first tier that failed. The last line counts the tests of both pytest tiers, as
pytest words it.

    python3 scripts/test_tiers.py [--slow] [--only TIER[,TIER...]]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
JUNIT = REPO / "reports" / "tiers"


def tiers(slow: bool) -> list[tuple[str, list[list[str]], str | None]]:
    """(name, commands, junit file of a pytest tier)."""
    workers = os.environ.get("ACCEL_TEST_WORKERS", "2")
    selftest = [PY, "-m", "pytest", "tests/selftest", "-n", workers, "-p", "no:cacheprovider",
                "--junitxml", str(JUNIT / "selftests.xml"), "--report-dir", str(JUNIT / "selftest-session")]
    if not slow:
        selftest += ["-m", "not slow"]
    return [
        ("set-up", [["bash", "scripts/setup.sh"]], None),
        ("lint and types", [[PY, "-m", "ruff", "check", "."], [PY, "scripts/typecheck.py"]], None),
        ("docs", [["make", "--no-print-directory", "docs", f"PYTHON={PY}"]], None),
        ("default run", [[PY, "-m", "pytest", "tests", "--ignore=tests/selftest"]], str(REPO / "reports" / "junit.xml")),
        ("selftests", [selftest], str(JUNIT / "selftests.xml")),
        ("wheel check", [["bash", "scripts/wheel_check.sh"]], None),
    ]


def counts(junit: str) -> tuple[int, int, int]:
    """(passed, failed, skipped) of a junit file (0s when it is missing or unreadable)."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return 0, 0, 0
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - failed - skipped, failed, skipped


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow", action="store_true", help="also the selftests marked slow (the nightly job)")
    ap.add_argument("--only", help="comma-separated tier names to run (e.g. 'selftests')")
    args = ap.parse_args(argv)
    only = {t.strip() for t in args.only.split(",")} if args.only else None
    JUNIT.mkdir(parents=True, exist_ok=True)
    rows, first_bad = [], 0
    for name, commands, junit in tiers(args.slow):
        if only is not None and name not in only:
            continue
        print(f"\n=== tier: {name} ===", flush=True)
        start, rc = time.monotonic(), 0
        for argv_ in commands:
            rc = subprocess.run(argv_, cwd=REPO, stdin=subprocess.DEVNULL).returncode
            if rc != 0:
                break
        rows.append((name, time.monotonic() - start, rc, junit))
        first_bad = first_bad or rc
    print("\n=== make test: time per tier ===")
    total_p = total_f = total_s = 0
    for name, seconds, rc, junit in rows:
        p, f, s = counts(junit) if junit else (0, 0, 0)
        total_p, total_f, total_s = total_p + p, total_f + f, total_s + s
        tests = f"  {p} passed, {f} failed, {s} skipped" if junit else ""
        print(f"{name:<16} {seconds:8.1f} s  {'ok' if rc == 0 else f'FAILED (exit {rc})':<16}{tests}")
    print(f"{'total':<16} {sum(r[1] for r in rows):8.1f} s")
    print(f"tests: {total_p} passed, {total_f} failed, {total_s} skipped")
    return first_bad


if __name__ == "__main__":
    sys.exit(main())
