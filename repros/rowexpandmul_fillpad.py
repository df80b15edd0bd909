#!/usr/bin/env python3
"""Seed 002, standalone: trowexpandmul + set_validshape + tfillpad and its controls.

    python repros/rowexpandmul_fillpad.py --hw emu|a2a3|a2a3sim [--fault NAME]
        [--variant fused,fused-noreuse,split,loaded,mul] [--valid-rows 1] [--golden-seed N]

Runs the seed's kernel (a [16, 256] f32 tile, valid_row = min(16, valid_rows), zero pad) once per
variant and prints, per variant, PASS / FAIL / CRASH / HANG / COMPILE_ERROR / SKIP with the census
(how many elements are wrong, which rows and column ranges, whether the padded region is right).
When the fused variant fails and the controls pass it prints the seed's conclusion. Exit 0 when
every variant passed, 1 when any did not, 2 when nothing could run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.families.rowexpandmul_fillpad import golden as tiles  # noqa: E402
from accel_regress.golden.compare import Mismatch  # noqa: E402
from accel_regress.core import registry, runner  # noqa: E402
from accel_regress.core.errors import VerdictError  # noqa: E402
from accel_regress.core.runner import run_case  # noqa: E402
from accel_regress.core.isolation.bounds import seconds  # noqa: E402

VARIANTS = {"fused": ("fused", True), "fused-noreuse": ("fused", False), "split": ("split", True),
            "loaded": ("loaded", True), "mul": ("mul", True)}
WHAT = {"fused": "row_expand_mul + set_validshape + fillpad in one block (memory reuse on)",
        "fused-noreuse": "the same, memory reuse off (distinct tile addresses)",
        "split": "row_expand_mul, round trip through GM, then set_validshape + fillpad",
        "loaded": "a loaded tile narrowed and padded (no multiply)",
        "mul": "plain mul with a [16, 256] scale instead of row_expand_mul"}
def conclusion(verdicts: dict) -> str:
    """Seed 002's conclusion, with only the clauses the variants that ran support."""
    bad = lambda v: verdicts.get(v) not in (None, "PASS", "SKIP")    # noqa: E731
    ok = lambda v: verdicts.get(v) == "PASS"                          # noqa: E731
    text = ["Conclusion (seed 002): the trigger is trowexpandmul writing a freshly alloc_tile'd output "
            "tile in the same kernel block as set_validshape + tfillpad (ptoas emits that tile as a bare "
            "`Tile<...> vN;` whose valid shape TROWEXPANDMUL reads uninitialized)."]
    if bad("fused") and bad("fused-noreuse"):
        text.append("Memory reuse is not the cause: fused fails with reuse on and off.")
    if ok("loaded"):
        text.append("Nor are set_validshape / tfillpad per se: the loaded control passes.")
    if ok("mul"):
        text.append("Nor is mul: the plain-mul control passes.")
    if ok("split"):
        text.append("Splitting into two blocks (a round trip through GM) works around it.")
    text.append("Check the emitted C++ with `python -m accel_regress lint-pto <build_output>`.")
    return "\n".join(text)


def run_variant(hw: str, name: str, valid_rows: int, fault, seed: int) -> dict:
    variant, reuse = VARIANTS[name]
    cfg = tiles.seed_config(valid_rows, variant, reuse)
    case = tiles.make_case(cfg, seed)
    inputs = tiles.make_inputs(case)
    run = run_case(hw, case, inputs, fault=fault)
    row = {"variant": name, "verdict": "PASS", "lines": []}
    if run.skip:
        row.update(verdict="SKIP", lines=[run.skip])
        return row
    try:
        got = run["out"]
        c = tiles.assert_tile_close(got, tiles.reference(inputs, cfg), cfg)
        row["lines"] = [f"{c.elements} / {c.elements} elements within tolerance",
                        tiles.padded_region_report(got, cfg)[1]]
    except tiles.TileMismatch as exc:
        c = exc.census
        row.update(verdict="FAIL", lines=[f"{c.over_tolerance} / {c.elements} elements over tolerance "
                                          f"({c.differ} differ at all); worst at {c.max_abs_index}"]
                   + exc.findings)
    except Mismatch as exc:
        row.update(verdict="FAIL", lines=str(exc).splitlines()[:3])
    except VerdictError as exc:
        row.update(verdict=exc.verdict, lines=[f"stage {exc.stage}: {exc.message}"])
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="emu", choices=["emu", "a2a3", "a2a3sim"])
    ap.add_argument("--fault", default=None, metavar="NAME|FILE.py:NAME",
                    help="inject a fault (e.g. pto-bare-tile-validshape, pto-bare-tile-validshape-sim)")
    ap.add_argument("--variant", default=",".join(VARIANTS),
                    help=f"comma-separated, from {', '.join(VARIANTS)} (default: all)")
    ap.add_argument("--valid-rows", type=int, default=1, help="the kernel's valid_rows (default 1, the seed's)")
    ap.add_argument("--golden-seed", type=int, default=0)
    ap.add_argument("--case-timeout", type=seconds, default=None, metavar="SECONDS",
                    help="bound for one run (default: the backend's own, per case)")
    args = ap.parse_args(argv)
    names = [v.strip() for v in args.variant.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    if runner.standalone("rowexpandmul_fillpad.py", args.fault, args.hw, args.case_timeout) is not None:   # isolated, as in pytest
        return 2
    reason = registry.availability(args.hw)
    if reason:
        print(f"{args.hw}: SKIP: {reason}")
        return 2
    cfg = tiles.seed_config(args.valid_rows)
    print(f"seed 002 on {args.hw}: [{cfg.rows}, {cfg.cols}] {cfg.dtype} tile, valid_rows={args.valid_rows} "
          f"-> valid_row={cfg.valid_row}, pad zero" + (f", fault {args.fault}" if args.fault else ""))
    rows = []
    for name in names:
        row = run_variant(args.hw, name, args.valid_rows, args.fault, args.golden_seed)
        rows.append(row)
        print(f"\n{name:<14} {row['verdict']:<13} {WHAT[name]}")
        for line in row["lines"]:
            print(f"    {line}")
    verdicts = {r["variant"]: r["verdict"] for r in rows}
    fused_bad = any(verdicts.get(v) not in (None, "PASS", "SKIP") for v in ("fused", "fused-noreuse"))
    controls = [v for v in ("split", "loaded", "mul") if v in verdicts]
    print()
    if fused_bad and controls and all(verdicts[v] == "PASS" for v in controls):
        print(conclusion(verdicts))
    elif all(v == "PASS" for v in verdicts.values()):
        print("Every variant passed: seed 002's bug is not present here.")
    if all(v == "SKIP" for v in verdicts.values()):
        return 2
    return 0 if all(v == "PASS" for v in verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
