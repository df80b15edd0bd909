"""``make gpu``: every family on every GPU backend present here, reports in reports/gpu/.

A GPU backend is one that declares its memory bounded by the device (Backend.memory_bound ==
"device"), is available, runs its cases here (not compile-only) and, where it says, has a real GPU
under it (``gpu_present()``: iree-vulkan on lavapipe has not). The session is bounded at 5 minutes
(``--session-timeout``); what was left is INTERRUPTED in the report. None present: says why, exit 0.

    python scripts/gpu_run.py [--report-dir DIR] [--seconds N] [pytest args...]
"""
from __future__ import annotations

import argparse
import subprocess
import sys


def gpu_backends() -> tuple[list[str], list[str]]:
    """(backends that run on a GPU here, why each other GPU backend does not)."""
    from accel_regress.core import registry
    chosen, why = [], []
    for name in registry.names():
        backend = registry.get(name)
        if getattr(backend, "memory_bound", "") != "device":
            continue
        reason = registry.availability(name) or backend.compile_only()
        if reason is None and not getattr(backend, "gpu_present", lambda: True)():
            reason = "its device is not a GPU"
        if reason:
            why.append(f"{name}: {reason}")
        else:
            chosen.append(name)
    return chosen, why


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report-dir", default="reports/gpu")
    ap.add_argument("--seconds", type=float, default=300.0, help="bound of the whole session (default 300)")
    args, rest = ap.parse_known_args(argv)
    chosen, why = gpu_backends()
    for line in why:
        print(f"gpu: not run: {line}")
    if not chosen:
        print("gpu: no GPU backend can run here; nothing to do")
        return 0
    print(f"gpu: running every family on {', '.join(chosen)} (at most {args.seconds:g} s)")
    cmd = [sys.executable, "-m", "pytest", "tests", "--ignore=tests/selftest", "--hw", ",".join(chosen),
           "--report-dir", args.report_dir, "--session-timeout", f"{args.seconds:g}", "-q", *rest]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
