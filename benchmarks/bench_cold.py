#!/usr/bin/env python3
"""A CI job on a fresh runner against a warm one (issue 39), from one invocation.

    python benchmarks/bench_cold.py [-- PYTEST_ARGS...]
    (default PYTEST_ARGS: tests --ignore=tests/selftest, the default run; give a subset, e.g.
    ``-- tests/test_fused_decode.py``, for a short run: the table then says it measured a subset)

Back to back, each run a child of benchmarks/bench_default_run.py (timers around golden, the
backends' runs and compare), every cache under one fresh cache root (``$ACCEL_CACHE_DIR``, every
per-cache variable unset) with a signing key of its own:

1. cold: the root empty (what a runner with no kept cache pays);
2. warm: the same root, as the cold run left it (the pair: cold / warm, goal <= 2x);
3. restored: the root packed with tar and unpacked at another path, as a CI cache step restores
   it, with the same key file (a CI secret); goal restored / warm <= 1.2x;
4. pytest's floor: plain pytest over a file of as many trivial tests as the run has, right after
   the warm run; the plugin's own cost is warm wall / (golden + backends + compare + floor),
   goal <= 1.2x (benchmarks/bench_harness.py measures the same in rounds).

Compiler starts: the IREE cache entries and batch links a run added (one entry per successful
``iree-compile``), and the qemu-rvv executables it linked. Compile share of the cold run: what the
caches save, less the golden store's share ((cold - warm - golden_cold + golden_warm) / cold).
The load average is printed with every run: the machine is shared; compare only within one
invocation.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_default_run  # noqa: E402
import bench_harness  # noqa: E402

DEFAULT_RUN = ["tests", "--ignore=tests/selftest"]
CACHE_VARS = ("ACCEL_IREE_CACHE", "ACCEL_GOLDEN_CACHE", "ACCEL_HEATMAP_CACHE", "ACCEL_RVV_SCAN_CACHE",
              "ACCEL_GOLDEN_CACHE_KEY_FILE", "ACCEL_CACHE_DIR")


def counts(root: Path) -> dict:
    iree, qemu = root / "iree", root / "qemu-rvv"
    entries = [p for p in iree.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "batched"] \
        if iree.is_dir() else []
    links = list((iree / "batched").glob("*.json")) if (iree / "batched").is_dir() else []
    exes = list(qemu.glob("*/harness")) if qemu.is_dir() else []
    return {"iree-compile": len(entries), "batch links": len(links), "harness links": len(exes),
            "bytes": sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink())}


def run(tmp: Path, name: str, args: list[str], root: Path, key: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARS}
    # The root is also where $XDG_CACHE_HOME puts it, so a checkout from before $ACCEL_CACHE_DIR (run
    # with its own venv: ``--python``) measures against the same folders.
    env.update(ACCEL_CACHE_DIR=str(root), XDG_CACHE_HOME=str(root.parent), ACCEL_GOLDEN_CACHE_KEY_FILE=str(key),
               PYTHONPATH=str(ROOT))
    load = bench_harness._load()
    before = counts(root) if root.is_dir() else {"iree-compile": 0, "batch links": 0, "harness links": 0}
    d = bench_default_run.run_child(tmp, name, args, env)
    after = counts(root)
    d["added"] = {k: after[k] - before.get(k, 0) for k in ("iree-compile", "batch links", "harness links")}
    d["root_bytes"] = after["bytes"]
    print(f"  {name} ({load}): {d['wall']:.1f} s wall; golden {d['spent']['golden']:.1f} s, backends "
          f"{d['spent']['backend']:.1f} s, compare {d['spent']['compare']:.1f} s; added {d['added']}", flush=True)
    return d, load


def main(argv: list[str]) -> int:
    args = argv[argv.index("--") + 1:] if "--" in argv else DEFAULT_RUN
    subset = args != DEFAULT_RUN
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as t:
        tmp = Path(t)
        key = tmp / "secret" / "golden-store.key"
        root, restored = tmp / "cloneA" / "accel-regress", tmp / "runnerB" / "accel-regress"
        cold, l1 = run(tmp, "cold", args, root, key)
        warm, l2 = run(tmp, "warm", args, root, key)
        plain = bench_harness.PlainPytest(tmp, {k: v for k, v in os.environ.items() if k not in CACHE_VARS})
        plain.round(warm["items"])
        restored.parent.mkdir(parents=True)
        start = time.perf_counter()
        pack = subprocess.run(["tar", "-C", str(root.parent), "-cf", "-", root.name], capture_output=True, check=True)
        subprocess.run(["tar", "-C", str(restored.parent), "-xf", "-"], input=pack.stdout, check=True)
        print(f"  cache root packed and unpacked: {len(pack.stdout) / 2**20:.0f} MiB in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        rest, l3 = run(tmp, "restored", args, restored, key)

    def work(d):
        return sum(d["spent"][k] for k in ("golden", "backend", "compare"))

    row = bench_harness._row
    print(f"\nissue 39's measures on {os.cpu_count()} cores; load average before each run: cold {l1}, warm {l2}, "
          f"restored {l3}")
    if subset:
        print(f"  a SUBSET: pytest {' '.join(args)}")
    print(row("measure", "value", "goal", ""))
    c, w, r = cold["wall"], warm["wall"], rest["wall"]
    compile_s = c - w - (cold["spent"]["golden"] - warm["spent"]["golden"])
    print(row(f"cold run (empty cache root), {cold['items']} tests", f"{c:.1f} s"))
    print(row("          compiler starts: iree-compile, batch links, harness links",
              f"{cold['added']['iree-compile']}, {cold['added']['batch links']}, {cold['added']['harness links']}"))
    print(row("          compile share ((cold - warm - golden saved) / cold)", f"{compile_s / c:.2f}"))
    print(row("warm run (the same root)", f"{w:.1f} s"))
    print(row("cold / warm, wall", f"{c / w:.2f}x", "<= 2x", "met" if c / w <= 2 else "MISSED"))
    print(row("restored root (tar, another path, the same key) / warm", f"{r / w:.2f}x", "<= 1.2x",
              "met" if r / w <= 1.2 else "MISSED"))
    print(row("          compiles in the restored run", str(rest["added"]["iree-compile"])))
    floor = plain.wall[-1]
    beyond = w / (work(warm) + floor)
    print(row(f"pytest's floor ({plain.items} trivial tests)", f"{floor:.2f} s"))
    print(row("plugin's own cost: warm / (golden + backends + compare + floor)", f"{beyond:.2f}x", "<= 1.2x",
              "met" if beyond <= 1.2 else "MISSED"))
    print(row("cache root size after the cold run", f"{cold['root_bytes'] / 2**20:.0f} MiB"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
