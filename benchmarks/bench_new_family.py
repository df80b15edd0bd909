#!/usr/bin/env python3
"""The outside-team path's machine time, scaffold to green (issue 37 item 3; goal: a team's own
operator green within 10 minutes of opening the README, installs not counted).

    python benchmarks/bench_new_family.py [--repeat N]

In a fresh folder each time: a package as a team starts it (src/<pkg>/__init__.py and a
pyproject.toml), ``accel-regress new-family swiglu``, its entry points made visible as
``pip install -e .`` makes them (a .dist-info on the path; the install itself is not timed), the
first run on emu and iree-cpu (cold: the golden store and IREE's compile cache are in the fresh
folder), and the fault run. Prints each step's seconds, the total, and the total as a share of
the 10 minutes (the person's reading and editing time is what is left of them).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

GOAL_S = 600.0


def step(argv, cwd, env) -> float:
    t = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return took


def once(repo: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "src" / "swiglu_ops").mkdir(parents=True)
        (root / "src" / "swiglu_ops" / "__init__.py").write_text("")
        (root / "pyproject.toml").write_text('[project]\nname = "swiglu-ops"\nversion = "0.1"\n')
        env = dict(os.environ, ACCEL_CACHE_DIR=str(root / "cache"), ACCEL_GOLDEN_CACHE=str(root / "golden"),
                   PYTHONPATH=os.pathsep.join([str(root / "src"), str(root / "site"), str(repo)]))
        out = {"scaffold": step([sys.executable, "-m", "accel_regress", "new-family", "swiglu"], root, env)}
        eps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"]
        info = root / "site" / "swiglu_ops-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: swiglu-ops\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text("".join(
            f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in names.items()) + "\n" for g, names in eps.items()))
        pytest = [sys.executable, "-m", "pytest", "tests/test_swiglu.py", "--hw", "emu,iree-cpu", "--history", "none",
                  "-p", "no:cacheprovider", "-q"]
        out["first green run"] = step(pytest, root, env)
        out["fault run"] = step(pytest + ["--inject-fault", "swiglu-drops-bias"], root, env)
        return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    repo = Path(__file__).resolve().parents[1]
    runs = [once(repo) for _ in range(args.repeat)]
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"{name:<16} median {statistics.median(values):6.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    totals = [sum(r.values()) for r in runs]
    total = statistics.median(totals)
    print(f"{'scaffold->green':<16} median {total:6.2f} s = {total / GOAL_S:.3f} of the 10-minute goal "
          f"({GOAL_S - total:.0f} s left for reading and editing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
