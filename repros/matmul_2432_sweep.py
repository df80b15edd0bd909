#!/usr/bin/env python3
"""Seed 003, standalone: the M x K x N matmul sweep of iree-amd-aie issue 285, as a table and a rule.

    python repros/matmul_2432_sweep.py --hw emu|iree-cpu|iree-amd-aie [--fault NAME] [--dims 2048,2432]
    python repros/matmul_2432_sweep.py --hw emu --shape 2304x2304x2304 --shape 2432x2432x2432

bf16 x bf16 -> f32 (``--dtype f32`` for f32 operands) with small-integer inputs, so every
output element must equal the reference exactly. Prints one line per shape (M K N verdict), what
went wrong where (compiler diagnostics, hang, wrong elements), then the simplest condition on
M, K, N that separates the failing shapes from the passing ones, e.g. "HANG iff N == 640 and
M != 640". Exit 0 when every shape passes, 1 when any fails, 2 when nothing could run.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.families.matmul import golden as golden_matmul  # noqa: E402
from accel_regress.core import registry, runner, verdicts
from accel_regress.families.matmul import sweep  # noqa: E402

BACKENDS = ("emu", "iree-cpu", "iree-amd-aie")
PROG = "repros/matmul_2432_sweep.py"


def main(argv=None) -> int:
    p = sweep.parser(PROG)
    p.description = __doc__.strip().splitlines()[0]
    for action in p._actions:
        if action.dest == "hw":
            action.choices = BACKENDS
        if action.dest == "op":
            action.help = "operator (only matmul)"
    args = p.parse_args(argv)
    if runner.standalone(PROG, args.fault, args.hw, args.case_timeout) is not None:     # isolated, as in pytest
        return 2
    shapes = args.shape or golden_matmul.cube(args.dims or golden_matmul.SEED_CUBES[0])
    reason = registry.availability(args.hw)
    if reason:
        print(f"{args.hw} cannot run here: {reason}")
        return 2
    print(f"# matmul {args.dtype} x {args.dtype} -> f32 on {args.hw}"
          + (f" with fault {args.fault}" if args.fault else "") + f", {args.inputs} inputs, {len(shapes)} shapes")
    try:
        rows, _ = sweep.sweep("matmul", args.hw, shapes, lhs=args.dtype, inputs=args.inputs, fault=args.fault,
                              golden_seed=args.golden_seed, timeout_s=args.case_timeout)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    if all(r.verdict == verdicts.SKIP for r in rows):
        return 2
    return 1 if any(r.verdict in verdicts.BAD for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
