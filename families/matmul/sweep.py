"""``python -m accel_regress sweep --op matmul --hw BACKEND --dims 512,640 [--fault NAME]``.

Runs every (M, K, N) of the cube over ``--dims`` (or the ``--shape`` list) on one backend, prints
seed 003's table (M K N verdict), the diagnostics of every shape that did not pass, and then the
rule: the simplest condition on the dimensions that separates the failing shapes from the
passing ones (accel_regress.results.rules), or that no simple rule fits. Exit status 1 when any shape failed
(FAIL, HANG, CRASH, COMPILE_ERROR), 2 on bad arguments, else 0.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from accel_regress.golden import census
from accel_regress.golden.compare import Census
from accel_regress.families.matmul import golden as golden_matmul
from accel_regress.golden.inputs import CLASSES
from accel_regress.core import registry, runner, verdicts
from accel_regress.results import rules
from accel_regress.results.repro import seconds_argument
from accel_regress.core.isolation.bounds import gib


@dataclass
class Row:
    dims: tuple
    verdict: str
    stage: Optional[str] = None
    message: str = ""
    diagnostic: str = ""
    seconds: float = 0.0
    census: Optional[Census] = None       # the comparison, when it ran (its describe() is pytest's message)
    versions: Optional[dict] = None       # what the run recorded (an expectation's version range reads it)


def _dims_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.replace("x", ",").split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return values


def _shape(text: str) -> tuple:
    values = _dims_list(text)
    if len(values) != 3:
        raise argparse.ArgumentTypeError(f"a shape is MxKxN, got {text!r}")
    return tuple(values)


def run_matmul_shape(backend: str, dims: tuple, *, lhs: str = "bf16", inputs: str = "exact", fault: Optional[str] = None,
                     golden_seed: int = 0, timeout_s: Optional[float] = None) -> Row:
    """One shape, start to verdict: inputs, backend run (with the fault), comparison with golden."""
    M, K, N = dims
    cfg = golden_matmul.MatmulConfig(M, K, N, lhs=lhs, rhs=lhs, acc="f32", inputs=inputs)
    need, budget = matmul_bytes(cfg), runner.memory_budget()
    if budget is not None and need > budget:
        # Inputs, output and reference would not fit: said before anything is allocated.
        return Row(tuple(dims), verdicts.SKIP, message=f"over the memory budget: inputs, output and reference need "
                   f"about {gib(need)}, the budget is {gib(budget)} (the worker's bound, at most 80% of this "
                   f"machine's memory)")
    case = golden_matmul.make_case(cfg, golden_seed)
    inputs = golden_matmul.make_inputs(case)
    start = time.perf_counter()
    run = runner.run_case(backend, case, inputs, fault=fault, timeout_s=timeout_s)
    row = Row(tuple(dims), verdicts.PASS, seconds=0.0, versions=run.versions)
    if run.verdict == verdicts.SKIP:
        row.verdict, row.message = verdicts.SKIP, run.skip
    elif run.error is not None:
        row.verdict, row.stage, row.message = run.error.verdict, run.error.stage, run.error.message
        row.diagnostic = str(run.error.detail.get("diagnostic", "")).strip()
    else:
        ref, tol = golden_matmul.expected(case, inputs)
        outputs = run._outputs
        got = outputs.get("out")
        if got is None:
            row.verdict, row.stage = verdicts.CRASH, "run"
            row.message = f"{backend} returned no output 'out' (it returned {', '.join(outputs) or 'nothing'})"
        else:
            c = row.census = census(got, ref, tol=tol, name=f"matmul {M}x{K}x{N}")
            if not c.ok:
                row.verdict, row.stage = verdicts.FAIL, "compare"
                row.message = (c.shape_error or f"{c.over_tolerance} of {c.elements} elements over tolerance "
                               f"(max abs diff {c.max_abs:.6g}); where: {c.where()}")
    row.seconds = time.perf_counter() - start
    return row


def matmul_bytes(cfg) -> int:
    """Peak bytes of one shape, conservatively: the operands (and their f32/f64 copies for the
    reference), then per output element the device's f32, the reference, and the error model's
    float64 sums and allowance."""
    operands = cfg.M * cfg.K + cfg.K * cfg.N
    return operands * (golden_matmul.ELEMENT_BYTES[cfg.lhs] + 8) + cfg.M * cfg.N * (4 + 4 + 16 + 16)


# --op NAME -> how one shape of that operator is run. Only matmul has a dimension sweep so far.
OPS: dict[str, Callable[..., Row]] = {"matmul": run_matmul_shape}
NAMES = {"matmul": ("M", "K", "N")}


def table_lines(rows: Sequence[Row], names=("M", "K", "N")) -> list[str]:
    """Seed 003's table: one line per shape, the dimensions then the verdict."""
    width = max([len(str(v)) for r in rows for v in r.dims] + [len(n) for n in names]) + 2
    head = "".join(f"{n:<{width}}" for n in names) + "Result"
    lines = ["# " + head, "# " + "=" * len(head)]
    for r in rows:
        mark = "" if r.verdict in (verdicts.PASS, verdicts.SKIP) else " -------- X"
        lines.append("# " + "".join(f"{v:<{width}}" for v in r.dims) + r.verdict + mark)
    lines.append("# " + "=" * len(head))
    return lines


def detail_lines(rows: Sequence[Row]) -> list[str]:
    out = []
    for r in rows:
        if r.verdict == verdicts.PASS:
            continue
        shape = "x".join(str(v) for v in r.dims)
        where = f" at stage {r.stage}" if r.stage else ""
        out.append(f"{shape}: {r.verdict}{where}: {r.message}")
        for line in r.diagnostic.splitlines():
            out.append(f"    | {line}")
    return out


def sweep(op: str, backend: str, shapes: Sequence[tuple], *, out=None, **kw) -> tuple[list[Row], rules.Finding]:
    """Run every shape, print the table, the details and the rule; return the rows and the rule."""
    out = out or sys.stdout
    run_one = OPS[op]
    rows = [run_one(backend, tuple(s), **kw) for s in shapes]
    names = NAMES[op]
    for line in table_lines(rows, names):
        print(line, file=out)
    details = detail_lines(rows)
    if details:
        print("", file=out)
        for line in details:
            print(line, file=out)
    finding = rules.find({r.dims: r.verdict for r in rows}, names)
    print("", file=out)
    for line in finding.lines():
        print(line, file=out)
    return rows, finding


def parser(prog: str = "python -m accel_regress sweep") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Every (M, K, N) of a cube of shapes on one backend: the table of verdicts, then the rule that "
                                "separates the failing shapes from the passing ones.")
    p.add_argument("--op", default="matmul", choices=sorted(OPS), help="operator family (default matmul)")
    p.add_argument("--hw", default="emu", help="backend id (default emu); see `python -m accel_regress`")
    p.add_argument("--dims", type=_dims_list, default=None, metavar="A,B[,...]",
                   help="run the cube of these sizes for M, K and N (default 2048,2432, seed 003's table)")
    p.add_argument("--shape", type=_shape, action="append", default=None, metavar="MxKxN",
                   help="run this shape (repeatable); instead of --dims")
    p.add_argument("--fault", "--inject-fault", dest="fault", default=None, metavar="NAME|FILE.py:NAME",
                   help="apply a built-in or file fault to every result (e.g. aie-matmul-4x2-herd-hang)")
    p.add_argument("--dtype", default="bf16", choices=golden_matmul.OPERAND_DTYPES,
                   help="operand dtype; the accumulator is f32 (default bf16)")
    p.add_argument("--inputs", default="exact", choices=CLASSES,
                   help="input class (golden/inputs.py): exact small integers compared bit for bit (default), "
                        "normal values within the error model, or another class")
    p.add_argument("--golden-seed", type=int, default=0, help="shift every shape's input seed")
    p.add_argument("--case-timeout", type=seconds_argument, default=None, help="bound for one run in seconds")
    return p


def main(argv=None, prog: str = "python -m accel_regress sweep") -> int:
    args = parser(prog).parse_args(argv)
    if args.hw not in registry.KNOWN:
        print(f"{prog}: unknown backend {args.hw!r}; known: {', '.join(registry.KNOWN)}", file=sys.stderr)
        return 2
    if runner.standalone(prog, args.fault, args.hw, args.case_timeout, narrate=False) is not None:
        return 2
    shapes = args.shape or golden_matmul.cube(args.dims or golden_matmul.SEED_CUBES[0])
    reason = registry.availability(args.hw)
    label = f"{args.op} on {args.hw}" + (f" with fault {args.fault}" if args.fault else "")
    print(f"# sweep: {label}; {args.dtype} x {args.dtype} -> f32, {args.inputs} inputs, {len(shapes)} shapes")
    if reason:
        print(f"# {args.hw} is not available here: every shape is SKIP ({reason})")
    try:
        rows, _ = sweep(args.op, args.hw, shapes, lhs=args.dtype, inputs=args.inputs, fault=args.fault,
                        golden_seed=args.golden_seed, timeout_s=args.case_timeout)
    except ValueError as exc:            # a shape the golden model rejects (e.g. exact inputs, huge K)
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return 1 if any(r.verdict in verdicts.BAD for r in rows) else 0
