#!/usr/bin/env python3
"""Seed 001, standalone: a fused Llama decode block step by step, in plain words.

    python repros/fused_decode_compare.py --hw emu|iree-cpu|qemu-rvv|npu [--fault NAME]
        [--size small|llama] [--mode compare|reference] [--golden-seed N]

compare (default): runs the block on the backend, then checks every step against its operator's
reference re-seeded from the backend's own inputs to that step (seed 001's compare mode), prints
the per-step max_abs / mean_abs / max_rel table and names the first divergent step; then checks
the fused block's output end to end. reference: the whole runlist on the CPU with bf16 buffers
between steps (seed 001's reference mode, no device), each step's drift from the float64 block.
Exit 0 when nothing diverges, 1 when a step or the block is wrong (or the run hung or crashed),
2 when nothing could run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.golden import census  # noqa: E402
from accel_regress.families.fused_decode import golden as F  # noqa: E402
from accel_regress.core import registry, runner  # noqa: E402
from accel_regress.core.runner import run_case  # noqa: E402
from accel_regress.core.isolation.bounds import seconds  # noqa: E402

SIZES = {"small": F.SMALL, "llama": F.LLAMA_3_2_1B}


def reference_mode(case, inputs) -> int:
    chain = F.run_pipeline(case, inputs, bf16=True)
    exact = F.run_pipeline(case, inputs)
    print("reference mode: the runlist on the CPU, bf16 buffers between steps; drift from the float64 block")
    print(f"{'step':<14} {'op':<13} {'max_abs':>10} {'rms':>10}")
    for step in F.DECODE_BLOCK:
        d = chain[step.out] - exact[step.out]
        print(f"{step.name:<14} {step.op:<13} {np.max(np.abs(d)):>10.3g} {np.sqrt(np.mean(d * d)):>10.3g}")
    return 0


def _run(hw: str, case, inputs, fault):
    """The run's outputs, or the words of its verdict (SKIP, HANG, CRASH, ...)."""
    run = run_case(hw, case, inputs, fault=fault)
    if run.verdict == "SKIP":
        return None, f"SKIP: {run.skip}"
    if run.verdict is not None:
        return None, f"{run.verdict}: {run.error.message}"
    return run.outputs, ""


def compare_mode(hw: str, case, inputs, fault) -> int:
    outputs, why = _run(hw, case, inputs, fault)
    if outputs is None:
        print(f"step by step: {why}")
        return 2 if why.startswith("SKIP") else 1
    results = F.compare_steps(case, inputs, outputs)
    print(F.step_table(results))
    first = F.first_divergent(results)
    print()
    if first is None:
        print("every step is right given its own inputs (compare mode passes)")
    else:
        c = first.census
        print(f"first divergent step: {first.step.name} ({first.step.op} -> {first.step.out}): "
              f"{c.over_tolerance} of {c.elements} elements over tolerance"
              + (f", {c.where()}" if c.over_tolerance else f", {c.shape_error}"))
    fused, why = _run(hw, F.as_program(case, "fused"), inputs, fault)
    if fused is None:
        print(f"end to end (the block as one fused program): {why}")
        return 0 if first is None and why.startswith("SKIP") else 1
    expected, tol = F.end_to_end_expected(case, inputs)
    e2e = census(np.asarray(fused[F.FUSED_OUTPUT], np.float64), expected, tol=tol, name="fused block output")
    print(f"end to end: {'right' if e2e.ok else 'WRONG'} (max |error| {e2e.max_abs:.3g}, "
          f"{e2e.over_tolerance} of {e2e.elements} over the {tol.flat[0]:.3g} allowance)")
    if first is None and not e2e.ok:
        print("fusion bug: every step is right alone, the fused block is wrong")
    return 0 if first is None and e2e.ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="emu", help="backend (default emu)")
    ap.add_argument("--fault", default=None, help="built-in fault (fused-stale-output, fused-rope-theta, "
                    "fused-rmsnorm-no-weight, fused-softmax-no-max) or FILE.py:NAME")
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--mode", choices=("compare", "reference"), default="compare")
    ap.add_argument("--golden-seed", type=int, default=0)
    ap.add_argument("--case-timeout", type=seconds, default=None, metavar="SECONDS",
                    help="bound for one run (default: the backend's own, per case)")
    args = ap.parse_args(argv)
    case = F.make_case(SIZES[args.size], args.golden_seed)
    inputs = F.make_inputs(case)
    print(f"seed 001 fused decode block {case.id}, {args.mode} mode"
          + ("" if args.mode == "reference" else f" on {args.hw}")
          + (f" with fault {args.fault}" if args.fault else ""))
    if args.mode == "reference":
        return reference_mode(case, inputs)
    if args.hw not in registry.KNOWN:
        print(f"unknown backend {args.hw!r}; known: {', '.join(registry.KNOWN)}", file=sys.stderr)
        return 2
    reason = registry.availability(args.hw)
    if reason:
        print(f"{args.hw} is not available here: {reason}")
        return 2
    if runner.standalone("fused_decode_compare.py", args.fault, args.hw, args.case_timeout) is not None:   # isolated, as in pytest
        return 2
    return compare_mode(args.hw, case, inputs, args.fault)


if __name__ == "__main__":
    sys.exit(main())
