#!/usr/bin/env python3
"""Seed 000, standalone: IRON GEMM with partition_N > 1, checked partition by partition.

    python repros/gemm_partition_n.py --hw emu|iree-cpu|qemu-rvv|npu [--fault NAME] [--size small|llama]
        [--expectations DIR | --ignore-expectations]

Prints the output-shape check (bug 1), each partition's correlation / max_err / mean_err with
PASS or FAIL (bug 2), and the control (each partition as its own partition_N=1 GEMM). Each check
is judged with the expectations under the node id of its pytest case (test_forward_shape,
test_forward_values, test_partition, test_standalone_partition): a known bug is XFAIL with the
entry's reason. Exit 0 when everything is right or wrong only as known, 1 when a bug shows (or
the run hung or crashed, or a known bug passed), 2 on bad usage or when the case could not run.

The same reference, error model and columns as tests/test_gemm_partition_n.py: the device's
bfp16 quantization applied to the reference (gemm.expected), and every "where" in the output's
own columns (partition 1 of a 128-wide C is columns 64-127). A backend that can never run the
bfp16 emulation (IREE computes bf16 x bf16 exactly: its reason is NotApplicable) runs the same
GEMM without it, the suite's ``-bf16`` configuration, and says so.
"""
from __future__ import annotations

import sys

from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden.compare import census
from accel_regress.core import registry
from accel_regress.core.errors import NotApplicable
from accel_regress.core.runner import run_case
from accel_regress.results import repro

SIZES = {"small": gemm.VOCAB_MINI, "llama": gemm.LLAMA_VOCAB}
TESTS = "tests/test_gemm_partition_n.py"
# The id prefix tests/test_gemm_partition_n.py gives each size's configuration (its CONFIGS); the
# bf16 path (no bfp16 emulation) is a pytest case only where gemm.BF16_CONFIGS holds it, unprefixed.
PREFIX = {"small": "vocab-mini-", "llama": "vocab-"}
HW = "emu"      # the backend of the node ids printed (main sets it)


def nodeids(test: str, cfg, part=None, size: str = "small") -> list[str]:
    """The pytest case (without the backend) that checks what one line of the repro checks: one,
    or none where pytest has no such case (then the line is judged plainly and says so)."""
    if cfg.emulate_bfp16 == SIZES[size].emulate_bfp16:
        prefix = PREFIX[size]
    elif any(c.test_id == cfg.test_id for c in gemm.BF16_CONFIGS):
        prefix = ""
    else:
        return []
    name = cfg.test_id if part is None else f"{cfg.id}-C{part}-{cfg.inputs}"
    return [f"{TESTS}::{test}[{prefix}{name}]"]


def stands_for(ids: list[str]) -> str:
    """The node id a line stands for, with the backend, as pytest writes it."""
    if not ids:
        return "  [no pytest case: tests/test_gemm_partition_n.py has no such configuration]"
    path, _, rest = ids[0].partition("[")
    return f"  [{path}[{HW}-{rest}]"


def _line(session: repro.Repro, judged: list, label: str, got, ref, tol, ids: list[str], versions,
          first_col: int = 0) -> bool:
    """One census line; its verdict as a session judges it goes to ``judged``; returns whether it is right."""
    c = census(got, ref, tol=tol, min_corr=gemm.MIN_CORR, name=label)
    c.origin = (0, first_col)            # "where" in C's own columns, as pytest's census says it
    verdict, why = session.judge("PASS" if c.ok else "FAIL", ids, versions, reason_chars=100)
    judged.append(verdict)
    print(f"  {label}: corr={c.pearson:.5f}, max_err={c.max_abs:.1f}, mean_err={c.mean_abs:.2f}, "
          f"over tolerance {c.over_tolerance}/{c.elements} [{verdict}]" + (f" ({why})" if why else "")
          + stands_for(ids))
    if not c.ok and c.over_tolerance:
        print(f"    where: {c.where()}")
    return c.ok


def _outputs(run, judged: list) -> dict | None:
    if run.verdict is not None:
        print(f"  {run.verdict}: {run.skip or run.error.message}")
        judged.append(run.verdict)
        return None
    return run.outputs


def main(argv=None) -> int:
    ap = repro.parser(__doc__, default_hw="emu")
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    args = ap.parse_args(argv)
    session = repro.Repro("gemm_partition_n.py", args)
    failed = session.open()
    if failed is not None:
        return failed
    global HW
    HW = args.hw
    cfg = SIZES[args.size]
    why = registry.get(args.hw).supports(gemm.make_case(cfg, args.golden_seed))
    if isinstance(why, NotApplicable) and cfg.emulate_bfp16:
        cfg = cfg.with_inputs(cfg.inputs, emulate_bfp16=False)
        print(f"{args.hw} never runs bfp16 emulation ({why}): running the same GEMM without it ({cfg.test_id})")
    P = cfg.partition_N
    bar = "=" * 70
    print(bar)
    print(session.title("IRON GEMM partition_N reproduction"))
    print(f"Problem: M={cfg.M}, K={cfg.K}, N={cfg.N}, partition_N={P}, tile {cfg.tile_m}/{cfg.tile_k}/"
          f"{cfg.tile_n}, {cfg.num_aie_columns} columns, bfp16 emulation {cfg.emulate_bfp16}")
    print(bar)
    case = gemm.make_case(cfg, args.golden_seed)
    inputs = gemm.make_inputs(case)
    ref, tol = gemm.expected(inputs, cfg)
    judged: list[str] = []               # every check's verdict as a session gives it: the exit status
    run = run_case(args.hw, case, inputs, fault=args.fault)
    out = _outputs(run, judged)
    if out is None:
        return repro.status(judged)
    ok = True

    print("BUG 1: forward() output shape")
    shape = out["forward"].shape
    print(f"  Expected output shape: (1, {cfg.M}, {cfg.N})")
    print(f"  Actual output shape:   {tuple(shape)}")
    shape_ids = nodeids("test_forward_shape", cfg, size=args.size)
    verdict, why = session.judge("PASS" if tuple(shape) == (1, cfg.M, cfg.N) else "FAIL",
                                 shape_ids, run.versions, reason_chars=100)
    judged.append(verdict)
    if tuple(shape) != (1, cfg.M, cfg.N):
        ok = False
        print(f"  BUG: forward() returns {shape[-1]} columns instead of {cfg.N}. [{verdict}]"
              + (f" ({why})" if why else "") + stands_for(shape_ids))
    else:
        print(f"  forward() shape is right [{verdict}]" + (f" ({why})" if why else "") + stands_for(shape_ids))
        ok &= _line(session, judged, "forward() values", out["forward"], ref[None], tol[None],
                    nodeids("test_forward_values", cfg, size=args.size), run.versions)

    print(f"BUG 2: each partition's buffer C_i read directly (N_per_partition={cfg.n_part}, "
          f"padded to {out['C_0'].shape[1]})")
    for i in range(P):
        lo, hi = i * cfg.n_part, (i + 1) * cfg.n_part - 1
        ok &= _line(session, judged, f"C_{i} (columns {lo}-{hi})", out[f"C_{i}"][:cfg.M, :cfg.n_part],
                    gemm.partition(ref, cfg, i), gemm.partition(tol, cfg, i),
                    nodeids("test_partition", cfg, i, args.size), run.versions, lo)

    print("CONTROL: each partition as a standalone GEMM (partition_N=1)")
    control_ok = True
    for i in range(P):
        single = gemm.make_case(cfg.standalone(i), args.golden_seed)
        sub_run = run_case(args.hw, single, gemm.standalone_inputs(inputs, cfg, i), fault=args.fault)
        sub = _outputs(sub_run, judged)
        if sub is None:
            control_ok = False
            continue
        control_ok &= _line(session, judged, f"standalone partition {i}", sub["C_0"][:cfg.M, :cfg.n_part],
                            gemm.partition(ref, cfg, i), gemm.partition(tol, cfg, i),
                            nodeids("test_standalone_partition", cfg, i, args.size), sub_run.versions,
                            i * cfg.n_part)
    print(bar)
    if ok and control_ok:
        print("CONCLUSION: forward() shape and every partition are right.")
    elif control_ok:
        print("CONCLUSION: the standalone partitions are right, so the partitioned operator is at fault "
              "(shape and/or runlist entries after the first), as in seed 000.")
    else:
        print("CONCLUSION: even standalone partitions are wrong: the GEMM itself is broken on this backend.")
    return repro.status(judged)


if __name__ == "__main__":
    sys.exit(main())
