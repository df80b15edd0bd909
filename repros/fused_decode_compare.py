#!/usr/bin/env python3
"""Seed 001, standalone: a fused Llama decode block step by step, in plain words.

    python repros/fused_decode_compare.py --hw emu|iree-cpu|qemu-rvv|npu [--fault NAME]
        [--size small|small-odd|small-masked|llama] [--inputs normal|shifted|subnormal] [--mode compare|reference]
        [--golden-seed N] [--expectations DIR | --ignore-expectations]

compare (default): runs the block on the backend, then checks every step against its operator's
reference re-seeded from the backend's own inputs to that step (seed 001's compare mode), prints
the per-step max_abs / mean_abs / max_rel table and names the first divergent step; then checks
the fused block's output end to end. reference: the whole runlist on the CPU with bf16 buffers
between steps (seed 001's reference mode, no device), each step's drift from the float64 block.

Each check is the pytest case of tests/test_fused_decode.py that runs the same case
(test_compare_mode[SIZE-BLOCK-CLASS]; test_end_to_end, which pytest runs with normal inputs only),
judged by the family's own code (compare_steps, PipelineMismatch, end_to_end_expected) and the
same expectations: its failure message is pytest's, a known bug is XFAIL with the entry's reason.
Exit 0 when nothing diverges or only as known, 1 when a step or the block is wrong (or the run hung
or crashed, or a known bug passed), 2 on bad usage or when nothing could run.
"""
from __future__ import annotations

import sys

import numpy as np

from accel_regress.golden import assert_close
from accel_regress.golden.compare import Mismatch
from accel_regress.families.fused_decode import golden as F
from accel_regress.core import verdicts
from accel_regress.core.runner import run_case
from accel_regress.results import repro

# --size -> the block; the names are the first part of tests/test_fused_decode.py's case ids.
SIZES = {"small": F.SMALL, "small-odd": F.SMALL_ODD, "small-masked": F.SMALL_MASKED, "llama-3.2-1b": F.LLAMA_3_2_1B}
ALIASES = {"llama": "llama-3.2-1b"}
TESTS = "tests/test_fused_decode.py"


def reference_mode(case, inputs) -> int:
    chain = F.run_pipeline(case, inputs, bf16=True)
    exact = F.run_pipeline(case, inputs)
    print("reference mode: the runlist on the CPU, bf16 buffers between steps; drift from the float64 block")
    print(f"{'step':<14} {'op':<13} {'max_abs':>10} {'rms':>10}")
    for step in F.DECODE_BLOCK:
        d = chain[step.out] - exact[step.out]
        print(f"{step.name:<14} {step.op:<13} {np.max(np.abs(d)):>10.3g} {np.sqrt(np.mean(d * d)):>10.3g}")
    return 0


def _verdict(run) -> tuple[str, str]:
    """A run that did not return outputs: its verdict and words (SKIP, HANG, CRASH, ...)."""
    return run.verdict, run.skip or run.error.message


def compare_mode(session: repro.Repro, case, inputs, test_id: str) -> list[str]:
    """Compare mode, then end to end; the judged verdict of each pytest case it stands for."""
    hw, fault = session.hw, session.fault
    run = run_case(hw, case, inputs, fault=fault)
    first = None
    if run.verdict is not None:
        verdict, words = _verdict(run)
        print(f"step by step: {verdict}: {words}")
    else:
        results = F.compare_steps(case, inputs, run.outputs)
        first = F.first_divergent(results)
        if first is None:
            print(F.step_table(results))
            print("\nevery step is right given its own inputs (compare mode passes)")
            verdict = verdicts.PASS
        else:
            print(str(F.PipelineMismatch(results)))     # pytest's failure message, word for word
            verdict = verdicts.FAIL
    judged = [_judged(session, "test_compare_mode", test_id, verdict, run.versions, "compare mode")]
    if case.params["inputs"] != "normal":
        print("\nend to end: not run (tests/test_fused_decode.py runs it with normal inputs only)")
        return judged
    print()
    fused = run_case(hw, F.as_program(case, "fused"), inputs, fault=fault)
    if fused.verdict is not None:
        verdict, words = _verdict(fused)
        print(f"end to end (the block as one fused program): {verdict}: {words}")
    else:
        expected, tol = F.end_to_end_expected(case, inputs)
        got = np.asarray(fused[F.FUSED_OUTPUT], np.float64)
        try:
            c = assert_close(got, expected, tol=tol, name=f"fused block output {F.FUSED_OUTPUT!r}")
            verdict = verdicts.PASS
            print(f"end to end: right (max |error| {c.max_abs:.3g}, 0 of {c.elements} over the "
                  f"{tol.flat[0]:.3g} allowance)")
        except Mismatch as exc:
            verdict = verdicts.FAIL
            print(f"end to end: {exc}")
            if run.verdict is None and first is None:
                print("fusion bug: every step is right when run alone (compare mode passes), the fused program is wrong")
    judged.append(_judged(session, "test_end_to_end", test_id, verdict, fused.versions, "end to end"))
    return judged


def _judged(session: repro.Repro, test: str, test_id: str, verdict: str, versions, label: str) -> str:
    nodeid = f"{TESTS}::{test}[{test_id}]"
    judged, why = session.judge(verdict, [nodeid], versions)
    print(f"{label}: {judged}" + (f" ({why})" if why else "") + f"  [{nodeid}]")
    return judged


def main(argv=None) -> int:
    ap = repro.parser(__doc__, default_hw="emu", fault_help="built-in fault (fused-stale-output, fused-rope-theta, "
                      "fused-rmsnorm-no-weight, fused-softmax-no-max) or FILE.py:NAME")
    ap.add_argument("--size", choices=sorted(SIZES) + sorted(ALIASES), default="small")
    ap.add_argument("--inputs", choices=F.CLASSES, default="normal", help="input class (default normal)")
    ap.add_argument("--mode", choices=("compare", "reference"), default="compare")
    args = ap.parse_args(argv)
    size = ALIASES.get(args.size, args.size)
    block = SIZES[size]
    case = F.make_case(block, args.golden_seed, "steps", inputs=args.inputs)
    inputs = F.make_inputs(case)
    if args.mode == "reference":
        print(f"seed 001 fused decode block {case.id}, reference mode")
        return reference_mode(case, inputs)
    session = repro.Repro("fused_decode_compare.py", args)
    failed = session.open()
    if failed is not None:
        return failed
    print(session.title(f"seed 001 fused decode block {case.id}, compare mode"))
    return repro.status(compare_mode(session, case, inputs, f"{size}-{block.id}-{args.inputs}"))


if __name__ == "__main__":
    sys.exit(main())
