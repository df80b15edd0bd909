"""``accel-regress upstream TEST -o DIR``: a self-contained bundle for an upstream bug report.

Runs the test once as the suite does (to learn its case), then the case in this process's isolated
worker; finds the wrong elements with the test's own rule; reduces the case to the smallest one
that still shows the bug (one element, where the family knows how); writes the bundle (bundle.py)
and runs its reproduce.py with this interpreter, which must exit 1. ``--bisect FILE`` cites a
``bisect --json`` result (first bad, last good, compare link) in the issue text.

What is family- or backend-specific comes from modules registered in the entry-point group
``accel_regress.upstream`` under the family or backend id:
  a family's: ``expected(case, inputs) -> {output: bundle.Expected}`` (the test's rule) and
    ``shrink(case, inputs, output, index) -> (case, inputs) | None`` (the one element behind a
    wrong output element);
  a backend's: ``spec(case, program, values, versions) -> (bundle.json commands, build files,
    the issue's how-to-run lines)``, and optionally ``claims(nodeid)`` / ``bundle(args, prog)`` for
    a test that is no backend run (qemu-rvv: the Saturn codegen check).
Exit status 0 when the bundle reproduces, 1 when it does not, 2 when no bundle could be made (the
case passes here, its verdict is not wrong numbers, its backend or family has no bundle part).
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Optional

import numpy as np

from accel_regress.results.bisect import step
from accel_regress.results.upstream import bundle


def parser(prog: str = "accel-regress upstream") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.strip().splitlines()[0])
    p.add_argument("test", help="pytest node id of one failing case")
    p.add_argument("-o", "--out", type=Path, required=True, help="the bundle folder to write")
    p.add_argument("--hw", help="backend (default: the one the test id carries)")
    p.add_argument("--golden-seed", type=int, default=0)
    p.add_argument("--title", help="the issue's title (default: made from the first wrong element)")
    p.add_argument("--standard", default="", help="what says the expected values are right (for the issue text)")
    p.add_argument("--bisect", type=Path, metavar="FILE", help="a `bisect --json` result to cite")
    p.add_argument("--no-reduce", action="store_true", help="bundle the case as it is")
    return p


def since(bisect_file: Optional[Path]) -> tuple[list[str], dict]:
    """The issue's "since when" lines and bundle.json's facts from a ``bisect --json`` result."""
    if bisect_file is None:
        return ["Not bisected."], {}
    doc = json.loads(Path(bisect_file).read_text())
    pk = ", ".join(doc.get("question", {}).get("packages", [])) or "the toolchain"
    facts = {"first_bad": doc.get("first_bad"), "last_good": doc.get("last_good"),
             "bisect_seconds": doc.get("seconds"), "versions_tried": doc.get("versions")}
    if doc.get("last_good") is None:
        return [f"Already there in {doc['first_bad']}, the oldest {pk} release the case could be run on "
                f"(releases on the index: {doc['versions'][0]} .. {doc['versions'][-1]}"
                + (f"; before {doc['first_bad']} the case gives no verdict" if doc.get("no_verdict") else "")
                + f"): no good release to bisect from (accel-regress bisect, {doc['seconds']} s)."], facts
    lines = [f"First bad {pk} {doc['first_bad']}, last good {doc['last_good']} (accel-regress bisect over the "
             f"releases on the index, {doc['seconds']} s)."]
    for r in doc.get("upstream", [])[:1]:
        lines += [f"- {link}" for link in (r.get("compare"), r.get("compare_commits")) if link]
    return lines, facts


def issue_text(title, what, right, reproduce, versions, since_lines) -> str:
    return "\n".join([f"# {title}", "", "## What is wrong", "", *what, "", "## What is right", "", *right, "",
                      "## Reproduce (the toolchain and numpy only)", "", *reproduce, "", "## Versions", "",
                      *(f"- {k}: {v}" for k, v in versions.items()), "", "## Since when", "", *since_lines, ""])


def check(out: Path) -> int:
    """Run the bundle's reproduce.py here: 0 when it exits 1 (it reproduces), else 1."""
    proc = subprocess.run([sys.executable, str(Path(out) / "reproduce.py")], capture_output=True, text=True,
                          timeout=1800)
    print((proc.stdout + proc.stderr).strip())
    print(f"bundle: {out} (reproduce.py exit {proc.returncode} with the toolchain here)")
    return 0 if proc.returncode == 1 else 1


def _run(hw, case, inputs):
    from accel_regress.core import runner
    run = runner.run_case(hw, case, inputs)
    if run.verdict is not None:
        return None, f"{run.verdict}: {run.skip or (run.error and run.error.message)}"
    return run._outputs, None


def main(argv=None, prog: str = "accel-regress upstream") -> int:
    p = parser(prog)
    args = p.parse_args(argv)
    refusal = bundle.out_refusal(args.out)
    if refusal:         # a usage error (2), before any work: exit 1 means "does not reproduce"
        p.error(f"-o: {refusal}")
    from accel_regress.core import registry
    for reg in registry.registrations("upstream").values():
        module = reg.load()
        if getattr(module, "claims", None) and module.claims(args.test):
            return module.bundle(args, prog)
    hw = args.hw or step.backend_of(args.test, registry.names())
    writer = registry.module_for("upstream", hw) if hw else None
    if writer is None or not hasattr(writer, "spec"):
        have = [n for n, r in registry.registrations("upstream").items() if n in registry.names()]
        print(f"{prog}: no bundle part for backend {hw!r} (registered: {', '.join(have)})", file=sys.stderr)
        return 2
    return numeric(args, hw, writer, prog)


def numeric(args, hw: str, writer, prog: str) -> int:
    from accel_regress.core import registry, runner
    from accel_regress.golden.case import Case
    first = step.run_step("here", args.test, hw=hw, seed=args.golden_seed, cwd=Path.cwd())
    print(f"the test here: {first.verdict}: {first.first_line()}")
    if first.case is None:
        print(f"{prog}: the test ran no case ({first.verdict}); nothing to bundle", file=sys.stderr)
        return 2
    case = Case.from_json(first.case)
    family = registry.module_for("upstream", case.op)
    if family is None or not hasattr(family, "expected"):
        print(f"{prog}: no bundle part for family {case.op!r} (entry-point group accel_regress.upstream)",
              file=sys.stderr)
        return 2
    inputs = registry.module_for("family", case.op).make_inputs(case)
    runner.standalone(prog, None, hw)
    outputs, problem = _run(hw, case, inputs)
    if problem:
        print(f"{prog}: the case gives {problem}; bundles are for wrong numbers", file=sys.stderr)
        return 2
    expected = family.expected(case, inputs)
    bad = bundle.wrong(expected, outputs)
    total = sum(e.reference.size for e in expected.values())
    print(f"case {case.op}/{case.id}: {len(bad)} of {total} output elements wrong")
    if not bad:
        print(f"{prog}: every element is right here: nothing to bundle", file=sys.stderr)
        return 2
    small, s_inputs, s_out, s_exp = case, inputs, outputs, expected
    for name, idx in ([] if args.no_reduce else bad[:16]):
        shrunk = family.shrink(case, inputs, name, idx) if idx else None
        if shrunk is None:
            continue
        c2, i2 = shrunk
        o2, problem = _run(hw, c2, i2)
        e2 = family.expected(c2, i2)
        still = problem is None and bool(bundle.wrong(e2, o2))
        print(f"  reduce: {name}{list(idx)} alone ({c2.id}): " + ("still wrong" if still else problem or "right alone"))
        if still:
            small, s_inputs, s_out, s_exp = c2, i2, o2, e2
            break
    from accel_regress.toolchains.iree.program import plan_for
    plan = plan_for(small)
    if len(plan) != 1:
        print(f"{prog}: {small.id} is a runlist of {len(plan)} programs; a bundle holds one", file=sys.stderr)
        return 2
    program = plan[0]
    values = {n: np.asarray({**s_inputs, **program.constants}[n]) for n in program.inputs}
    versions = {**runner.versions_of(hw), "numpy": np.__version__, "python": platform.python_version(),
                "machine": platform.machine()}
    spec, build_files, how = writer.spec(small, program, values, versions)
    lines = bundle.element_lines(s_inputs, s_exp, s_out)
    title = args.title or f"{case.op} on {hw}: {lines[0]}"
    since_lines, facts = since(args.bisect)
    n_in = sum(int(np.size(v)) for v in s_inputs.values())
    what = [*(f"    {ln}" for ln in lines), "",
            f"{len(bad)} of {total} output elements of accel-regress's case `{case.op}/{case.id}` are wrong; "
            + (f"reduced to `{small.id}` ({n_in} input element(s)), which still shows it." if small is not case
               else "bundled as it is.")]
    right = ([args.standard, ""] if args.standard else []) + [f"Expected values: {next(iter(s_exp.values())).how}."]
    issue = issue_text(title, what, right, how, versions, since_lines)
    spec.update({"versions": versions, "case": small.to_json(), "reduced_from": case.to_json(), **facts})
    out = bundle.write_bundle(args.out, title=title, program_mlir=program.mlir, spec=spec, inputs=values,
                              expected=s_exp, got=s_out, build_files=build_files, issue=issue)
    return check(out)
