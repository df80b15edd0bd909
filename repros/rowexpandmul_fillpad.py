#!/usr/bin/env python3
"""Seed 002, standalone: trowexpandmul + set_validshape + tfillpad and its controls.

    python repros/rowexpandmul_fillpad.py --hw emu|a2a3|a2a3sim|iree-cpu [--fault NAME]
        [--variant fused,fused-noreuse,split,loaded,mul] [--valid-rows 1] [--golden-seed N]
        [--expectations DIR | --ignore-expectations]

Runs the seed's kernel (a [16, 256] f32 tile, valid_row = min(16, valid_rows), zero pad) once per
variant and prints, per variant, PASS / FAIL / CRASH / HANG / COMPILE_ERROR / SKIP with the census
(how many elements are wrong, which rows and column ranges, whether the padded region is right).
When the fused variant fails and the controls pass it prints the seed's conclusion.

Each variant is the two pytest cases of tests/test_rowexpandmul_fillpad.py that run the same case
(test_tile[seed-ID]: the whole tile, through the family's assert_tile_close, its failure message
pytest's word for word; test_padded_region[seed-ID]: the padded region exactly), each judged
with the same expectations (a2a3's wrong fused tile and a2a3sim's crash are known: XFAIL, with
the entry's reason). Exit 0 when every check passed or failed only as known, 1 when any did not,
2 on bad usage or when nothing could run.
"""
from __future__ import annotations

import sys

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.compare import Mismatch
from accel_regress.core import verdicts
from accel_regress.core.errors import VerdictError
from accel_regress.core.runner import run_case
from accel_regress.results import repro

TESTS = "tests/test_rowexpandmul_fillpad.py"

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


def _tile(run, cfg, inputs) -> tuple[str, list[str]]:
    """test_tile: the whole tile against the reference, in the family's error model."""
    try:
        c = tiles.assert_tile_close(run["out"], tiles.tile_reference(inputs, cfg), cfg, name=f"out ({cfg.variant})")
    except Mismatch as exc:                       # a TileMismatch: the census and the tile's findings
        return verdicts.FAIL, str(exc).splitlines()
    except VerdictError as exc:
        return exc.verdict, [f"stage {exc.stage}: {exc.message}"]
    return verdicts.PASS, [f"{c.elements} / {c.elements} elements within tolerance"]


def _padded(run, cfg) -> tuple[str, list[str]]:
    """test_padded_region: every element outside the valid region holds the pad value."""
    try:
        got = run["out"]
    except VerdictError as exc:
        return exc.verdict, [f"stage {exc.stage}: {exc.message}"]
    if got.shape != (cfg.rows, cfg.cols):
        return verdicts.FAIL, [f"out has shape {got.shape}, expected {(cfg.rows, cfg.cols)}"]
    ok, words = tiles.padded_region_report(got, cfg)
    return (verdicts.PASS if ok else verdicts.FAIL), [words]


def run_variant(session: repro.Repro, name: str, valid_rows: int) -> dict:
    variant, reuse = VARIANTS[name]
    cfg = tiles.seed_config(valid_rows, variant, reuse)
    case = tiles.make_case(cfg, session.args.golden_seed)
    inputs = tiles.make_inputs(case)
    run = run_case(session.hw, case, inputs, fault=session.fault)
    if run.skip:
        checks = {test: (verdicts.SKIP, [run.skip]) for test in ("test_tile", "test_padded_region")}
    else:
        checks = {"test_tile": _tile(run, cfg, inputs), "test_padded_region": _padded(run, cfg)}
    lines, judged = [], {}
    for test, (verdict, words) in checks.items():
        nodeid = f"{TESTS}::{test}[seed-{cfg.test_id}]"
        judged[test], why = session.judge(verdict, [nodeid], run.versions)
        if test == "test_padded_region" and verdict == checks["test_tile"][0] and words == checks["test_tile"][1]:
            words = []                            # the same SKIP / CRASH / HANG: said once
        elif test == "test_padded_region" and verdict == verdicts.PASS and checks["test_tile"][0] == verdicts.FAIL:
            words = []                            # the tile's findings end with the padded region's state
        lines += words + [f"{test}: {judged[test]}" + (f" ({why})" if why else "") + f"  [{nodeid}]"]
    raw = [v for v, _ in checks.values()]
    worst = next((v for v in raw if v != verdicts.PASS), verdicts.PASS)
    return {"variant": name, "verdict": worst, "judged": list(judged.values()), "lines": lines}


def main(argv=None) -> int:
    ap = repro.parser(__doc__, default_hw="emu", fault_help="inject a fault (e.g. pto-bare-tile-validshape, "
                      "pto-bare-tile-validshape-sim)")
    ap.add_argument("--variant", default=",".join(VARIANTS),
                    help=f"comma-separated, from {', '.join(VARIANTS)} (default: all)")
    ap.add_argument("--valid-rows", type=int, default=1, help="the kernel's valid_rows (default 1, the seed's)")
    args = ap.parse_args(argv)
    names = [v.strip() for v in args.variant.split(",") if v.strip()]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    session = repro.Repro("rowexpandmul_fillpad.py", args)
    failed = session.open()
    if failed is not None:
        return failed
    cfg = tiles.seed_config(args.valid_rows)
    print(session.title("seed 002") + f": [{cfg.rows}, {cfg.cols}] {cfg.dtype} tile, valid_rows={args.valid_rows} "
          f"-> valid_row={cfg.valid_row}, pad zero")
    rows = []
    for name in names:
        row = run_variant(session, name, args.valid_rows)
        rows.append(row)
        print(f"\n{name:<14} {row['verdict']:<13} {WHAT[name]}")
        for line in row["lines"]:
            print(f"    {line}")
    seen = {r["variant"]: r["verdict"] for r in rows}
    fused_bad = any(seen.get(v) not in (None, "PASS", "SKIP") for v in ("fused", "fused-noreuse"))
    controls = [v for v in ("split", "loaded", "mul") if v in seen]
    print()
    if fused_bad and controls and all(seen[v] == "PASS" for v in controls):
        print(conclusion(seen))
    elif all(v == "PASS" for v in seen.values()):
        print("Every variant passed: seed 002's bug is not present here.")
    return repro.status(v for r in rows for v in r["judged"])


if __name__ == "__main__":
    sys.exit(main())
