#!/usr/bin/env python3
"""Seed 004, standalone: the f32-reduction micro-test sweep, printed as the seed's table.

    python repros/f32_reduction_hang.py --hw emu|qemu-rvv|firesim|iree-cpu [--fault NAME]
        [--variants v,novec] [--vlen 256] [--golden-seed N]

One row per micro-test and flag variant: test, variant, verdict (PASS, FAIL, HANG, CRASH,
COMPILE_ERROR, SKIP), cycles (summed [dc] cycles where the backend reports them; host ticks under
qemu-user) or wall time,
and a note (where it hung or crashed, how far off it was, or the dispatch's RVV reductions and
whether seed 004's codegen signature is in it). Cycles and scan are what the isolated run itself
measured (the backend's report, sent back with the outputs or with the verdict).

``--scan VARIANTS`` (e.g. ``--scan v-zvl512b``) runs no sweep: it builds each f32 reduction
micro-test for those RISC-V flag variants (iree-compile only, as qemu-rvv and firesim build them)
and prints the RVV codegen scan of each dispatch: its FP reductions and whether it has seed 004's
candidate hang pattern (a single-lane vfmacc.vf at VL=1, mf2 with vslidedown.vi in one loop,
hardware/backends/qemu_rvv/scan.py); exit 1 when one has it, 0 when none, 2 when it cannot build.

Known bugs are read from expectations/<backend>.toml as a pytest session reads them (each row is
the case of tests/test_f32_reduction.py::test_f32_reduction[ID]): a listed bug that happens as
listed is XFAIL, with the entry's reason; one that no longer happens is XPASS. Exit 0 when every
test passed or failed only as known, 1 when any failed, hung or crashed otherwise (or XPASSed),
2 when nothing could run.
"""
from __future__ import annotations

import sys

from accel_regress.families.f32_reduction import golden as R
from accel_regress.golden.compare import census
from accel_regress.core.runner import run_case
from accel_regress.results import repro
from accel_regress.toolchains.iree import riscv

# The seed's micro-tests (mt_*) and the kind and shape each one is here.
MICROTESTS = [
    ("mt_rsqrt_64xf32", "rsqrt"), ("mt_sqrt_64xf32", "sqrt"), ("mt_erf_64xf32", "erf"),
    ("mt_cvt_64", "cvt"), ("mt_divf_vv_64", "divide"),
    ("mt_bmm_4x64x64", "bmm"), ("mt_matmul_64x128", "matmul"), ("mt_softmax_64x64", "softmax"),
    ("mt_vit_d1_layernorm", "layernorm"), ("mt_rmsnorm_64x128", "rmsnorm"), ("mt_rowsum_64x128", "row_sum"),
    ("mt_meanvar_64x128", "mean_var"), ("mt_mm_i8_64x128", "i8_matmul"),
]


def _report(run) -> dict:
    """What the isolated run measured: its report, or the detail of the verdict it raised."""
    return run.report or (run.error.detail if run.error is not None else {}) or {}


def _note_scan(rep: dict) -> str:
    scans = rep.get("codegen_scan") or []
    if not scans:
        return ""
    redo = sum(d["vfredosum"] for d in scans)
    redu = sum(d["vfredusum"] for d in scans)
    sig = [d["function"] for d in scans if d["signature"]]
    text = f"vfredosum={redo} vfredusum={redu}"
    return text + (f"; seed 004's candidate pattern in {', '.join(sig)}" if sig else "")


def _cycles(hw: str, rep: dict) -> str:
    """Summed [dc] cycles. Under qemu-user, rdcycle reads the host's time-stamp counter, so
    qemu-rvv's numbers are host ticks (comparable on one machine), not RISC-V cycles."""
    cyc = rep.get("cycles")
    return f"{cyc} {'ticks' if hw == 'qemu-rvv' else 'cyc'}" if cyc else ""


def run_one(session: repro.Repro, name: str, kind: str, variant: str, vlen: int) -> dict:
    hw, fault = session.hw, session.fault
    case = R.make_case(kind, R.SEED_SHAPES[kind], variant, vlen, session.args.golden_seed)
    inputs = R.make_inputs(case)
    run = run_case(hw, case, inputs, fault=fault)
    row = {"test": name, "variant": variant, "verdict": run.verdict, "time": f"{run.duration_s:.2f} s", "note": ""}
    if run.verdict is None:
        ref = R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        bad = [c for c in (census(run.outputs[n], ref[n], tol=tol[n], name=n) for n in ref) if not c.ok]
        row["verdict"] = "FAIL" if bad else "PASS"
        row["note"] = "; ".join(f"{c.name}: {c.over_tolerance}/{c.elements} over tolerance ({c.where()})"
                                if not c.shape_error else c.shape_error for c in bad)
    elif run.verdict == "SKIP":
        row["note"] = run.skip
    else:
        row["note"] = run.error.message.splitlines()[0][:160]
    nodeid = f"tests/test_f32_reduction.py::test_f32_reduction[{R.test_id(case)}]"
    row["pytest"] = nodeid.replace("[", f"[{hw}-", 1)      # the case this row stands for, as pytest names it
    judged, why = session.judge(row["verdict"], [nodeid], run.versions, reason_chars=100)
    if why:
        row["verdict"], row["note"] = judged, f"{why}; " + row["note"]
    rep = _report(run)
    cyc = _cycles(hw, rep)
    if cyc:
        row["time"] = cyc
    scan = _note_scan(rep)
    if scan:
        row["note"] = (row["note"] + "; " if row["note"] else "") + scan
    return row


def scan_variants(variants: list[str]) -> int:
    """Build each f32 reduction micro-test for each variant and print its codegen scan."""
    from accel_regress.backends.qemu_rvv import build, scan
    from accel_regress.toolchains.iree import compiler, riscv
    from accel_regress.toolchains.iree.program import program_for
    unknown = [v for v in variants if v not in riscv.VARIANTS]
    if unknown or compiler.availability():
        why = f"unknown variant(s) {', '.join(unknown)} (known: {', '.join(riscv.VARIANTS)})" if unknown \
            else compiler.availability()
        print(f"f32_reduction_hang.py --scan: {why}", file=sys.stderr)
        return repro.USAGE
    print(f"seed 004 codegen scan ({compiler.compiler_version()}): {', '.join(variants)}")
    found = []
    for name, kind in MICROTESTS:
        if kind not in R.REDUCTIONS:
            continue
        for variant in variants:
            case = R.make_case(kind, R.SEED_SHAPES[kind], variant, max(riscv.VARIANTS[variant].min_vlen,
                                                                        riscv.BASELINE_VLEN))
            try:
                scans = build.program_scan(program_for(case), variant, name=case.id)
            except Exception as exc:           # a build that fails is a row, not a traceback
                print(f"{name:<22} {variant:<10} could not build: {str(exc).splitlines()[0][:160]}")
                continue
            hits = [d for d in scans if d["signature"]]
            found += hits
            print(f"{name:<22} {variant:<10} " + ("CANDIDATE (seed 004's pattern, unconfirmed)" if hits else "no candidate")
                  + f": {scan.summary(scans)}" + (f"; loops {', '.join(l for d in hits for l in d['signature_loops'])}"
                                                   if hits else ""))
    print(f"\n{len(found)} dispatch(es) with seed 004's candidate pattern")
    return 1 if found else 0


def main(argv=None) -> int:
    ap = repro.parser(__doc__, default_hw="emu", fault_help="built-in fault (saturn-f32-reduction-hang) or FILE.py:NAME")
    ap.add_argument("--variants", default="v,novec", help="RISC-V flag variants, comma separated (default v,novec)")
    ap.add_argument("--vlen", type=int, default=256)
    ap.add_argument("--scan", metavar="VARIANTS", help="no sweep: build the f32 reductions for these RISC-V "
                    "variants (e.g. v-zvl512b) and print each dispatch's codegen scan")
    args = ap.parse_args(argv)
    if args.scan:
        return scan_variants([v.strip() for v in args.scan.split(",") if v.strip()])
    session = repro.Repro("f32_reduction_hang.py", args)
    failed = session.open()
    if failed is not None:
        return failed
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if args.hw == "iree-cpu":
        variants = variants[:1]
    print(session.title("seed 004 micro-test sweep") + f", VLEN {args.vlen}")
    rows = []
    for name, kind in MICROTESTS:
        for variant in variants:
            vlen = max(args.vlen, 512) if variant == "v-zvl512b" else args.vlen
            if variant in riscv.VARIANTS and not riscv.VARIANTS[variant].vector:
                vlen = riscv.BASELINE_VLEN      # no vector unit, no VLEN: pytest's case is at the baseline one
            rows.append(run_one(session, name, kind, variant if args.hw != "iree-cpu" else "v", vlen))
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in ("test", "variant", "verdict", "time")}
    head = "  ".join(k.ljust(widths[k]) for k in ("test", "variant", "verdict", "time")) + "  note"
    print(head)
    print("-" * len(head))
    for r in rows:
        print("  ".join(str(r[k]).ljust(widths[k]) for k in ("test", "variant", "verdict", "time")) + "  " + r["note"]
              + f"  [{r['pytest']}]")
    code = repro.status(r["verdict"] for r in rows)
    if code == repro.USAGE:
        return code
    bad = [r for r in rows if r["verdict"] not in ("PASS", "SKIP", "NOT_APPLICABLE", "XFAIL")]
    print(f"\n{len(rows) - len(bad)} of {len(rows)} passed, skipped or failed as known; "
          + (", ".join(f"{r['test']}/{r['variant']} {r['verdict']}" for r in bad) if bad else "nothing wrong"))
    return code


if __name__ == "__main__":
    sys.exit(main())
