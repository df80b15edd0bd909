"""The full IREE bisects of the findings, over every iree-base-compiler / iree-base-runtime release
on the index (2.9.0 .. 3.13.0): the erf(-0) and bf16 arith.mulf findings on iree-cpu.

    python benchmarks/bench_bisect_iree.py [--fresh] [--only erf|mulf]

Each bisect runs `python -m accel_regress bisect ... --json` (environments from the shared cache
~/.cache/accel-regress/bisect-envs; IREE wheels ~100 MB each from the uv cache). Prints each
bisect's answer and time, and the ratio to checking every release one by one (the mean step time
measured here times the number of releases). Not part of any test run: it downloads ~3 GB cold.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGES = "iree-base-compiler,iree-base-runtime"
FINDINGS = {
    "erf": "tests/test_f32_reduction.py::test_f32_reduction[iree-cpu-erf-64-v-vlen256-specials]",
    "mulf": "tests/test_rowexpandmul_fillpad.py::test_tile[iree-cpu-R8-C64-vr3-vc48-bf16-padmin-fused-reuse-ties]",
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fresh", action="store_true", help="ignore the bisects' journals (rerun every step)")
    p.add_argument("--only", choices=sorted(FINDINGS))
    p.add_argument("--good", default="2.9.0")
    p.add_argument("--bad", default="3.13.0")
    a = p.parse_args()
    for name, test in FINDINGS.items():
        if a.only and name != a.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "result.json"
            argv = [sys.executable, "-m", "accel_regress", "bisect", test, "--package", PACKAGES, "--good", a.good,
                    "--bad", a.bad, "--json", str(out)] + (["--fresh"] if a.fresh else [])
            start = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True)
            wall = time.perf_counter() - start
            print(proc.stdout)
            if proc.returncode != 0:
                print(f"{name}: bisect failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
                continue
            doc = json.loads(out.read_text())
        ran = doc["steps"]
        cost = sum(s["seconds"] + s["build_s"] for s in ran)      # as run, also when read from the journal now
        linear = cost / max(1, len(ran)) * len(doc["versions"])
        dated = (f"first bad {doc['first_bad']}" if doc.get("first_bad") else
                 f"no first bad (already in the oldest tried, {doc.get('oldest_tried')})")
        print(f"{name}: last good {doc['last_good']}, {dated}; {len(ran)} of "
              f"{len(doc['versions'])} releases run, {cost:.1f} s of steps ({wall:.1f} s wall this time); "
              f"every release one by one ~{linear:.0f} s: {linear / max(cost, 1e-9):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
