#!/usr/bin/env python3
"""Seed 003, standalone: the M x K x N matmul sweep of iree-amd-aie issue 285, as a table and a rule.

    python repros/matmul_2432_sweep.py --hw emu|iree-cpu|iree-amd-aie [--fault NAME] [--dims 2048,2432]
        [--expectations DIR | --ignore-expectations]
    python repros/matmul_2432_sweep.py --hw emu --shape 2304x2304x2304 --shape 2432x2432x2432

bf16 x bf16 -> f32 (``--dtype f32`` for f32 operands) with small-integer inputs, so every
output element must equal the reference exactly. Prints one line per shape (M K N verdict), what
went wrong where (compiler diagnostics, hang, wrong elements), then the simplest condition on
M, K, N that separates the failing shapes from the passing ones, e.g. "HANG iff N == 640 and
M != 640".

Then every shape that did not pass as tests/test_matmul.py::test_matmul judges the same case
(the same MatmulConfig, so the same inputs, reference and error model): a wrong result's census in
pytest's words, and the verdict judged with the same expectations (a known bug is XFAIL with the
entry's reason; a known hang is run and judged, as pytest's --run-known-hangs). Exit 0 when every
shape passed or failed only as known, 1 when any failed otherwise, 2 on bad usage or when nothing
could run.
"""
from __future__ import annotations

import sys

from accel_regress.families.matmul import golden as golden_matmul
from accel_regress.families.matmul import sweep
from accel_regress.results import repro

BACKENDS = ("emu", "iree-cpu", "iree-amd-aie")
PROG = "repros/matmul_2432_sweep.py"
# The prefixes tests/test_matmul.py gives a config's id; a case's inputs and seed depend on the
# config alone, so every test_matmul[PREFIX-ID] that exists runs this very case.
PREFIXES = ("square-", "cube-", "f32-halved-", "edge-")


def nodeids(dims: tuple, dtype: str, inputs: str) -> list[str]:
    cfg = golden_matmul.MatmulConfig(*dims, lhs=dtype, rhs=dtype, inputs=inputs)
    return [f"tests/test_matmul.py::test_matmul[{prefix}{cfg.id}]" for prefix in PREFIXES]


def judged_lines(session: repro.Repro, rows, dtype: str, inputs: str) -> tuple[list[str], list[str]]:
    """Each shape's verdict as a pytest session gives it, and the lines for the shapes that did not pass."""
    seen, lines = [], []
    for r in rows:
        verdict, why = session.judge(r.verdict, nodeids(r.dims, dtype, inputs), r.versions)
        seen.append(verdict)
        if r.verdict == "PASS" and verdict == "PASS":
            continue
        lines.append(f"{'x'.join(map(str, r.dims))}: {verdict}" + (f" ({why})" if why else ""))
        if r.census is not None and not r.census.ok:
            lines += ["    " + line for line in r.census.describe().splitlines()]
    return seen, lines


def main(argv=None) -> int:
    p = sweep.parser(PROG)
    p.description = __doc__.strip().splitlines()[0]
    for action in p._actions:
        if action.dest == "hw":
            action.choices = BACKENDS
        if action.dest == "op":
            action.help = "operator (only matmul)"
    repro.add_expectation_options(p)
    args = p.parse_args(argv)
    session = repro.Repro(PROG, args)
    failed = session.open()
    if failed is not None:
        return failed
    shapes = args.shape or golden_matmul.cube(args.dims or golden_matmul.SEED_CUBES[0])
    print("# " + session.title(f"matmul {args.dtype} x {args.dtype} -> f32")
          + f", {args.inputs} inputs, {len(shapes)} shapes")
    try:
        rows, _ = sweep.sweep("matmul", args.hw, shapes, lhs=args.dtype, inputs=args.inputs, fault=args.fault,
                              golden_seed=args.golden_seed, timeout_s=args.case_timeout)
    except ValueError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return repro.USAGE
    seen, lines = judged_lines(session, rows, args.dtype, args.inputs)
    if lines:
        print("\nas tests/test_matmul.py::test_matmul judges the same cases:")
        for line in lines:
            print(line)
    return repro.status(seen)


if __name__ == "__main__":
    sys.exit(main())
