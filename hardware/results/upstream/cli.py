"""``accel-regress upstream TEST -o DIR``: a self-contained bundle for an upstream bug report.

Runs the test once as the suite does (to learn its case), then the case in this process's isolated
worker; finds the wrong elements with the test's own rule; reduces the case to the smallest one
that still shows the bug (one element, where the family knows how), then its program (reduce.py:
ops, inputs and arguments dropped while the same wrong outputs stay); writes the bundle
(bundle.py) and runs its reproduce.py with this interpreter, which must exit 1. ``--bisect FILE``
cites a ``bisect --json`` result (the versions run; first bad and last good, or the oldest tried
and the older package names) in the issue text; ``--tracker`` names where the issue goes.

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
    p = argparse.ArgumentParser(prog=prog, description="A self-contained bundle for an upstream bug report: one failing case reduced to the "
                                "smallest that still shows the bug.")
    p.add_argument("test", help="pytest node id of one failing case")
    p.add_argument("-o", "--out", type=Path, required=True, help="the bundle folder to write")
    p.add_argument("--hw", help="backend (default: the one the test id carries)")
    p.add_argument("--golden-seed", type=int, default=0)
    p.add_argument("--title", help="the issue's title (default: made from the first wrong element)")
    p.add_argument("--standard", default="", help="what says the expected values are right (for the issue text)")
    p.add_argument("--bisect", type=Path, metavar="FILE", help="a `bisect --json` result to cite")
    p.add_argument("--no-reduce", action="store_true", help="bundle the case and its program as they are")
    p.add_argument("--tracker", help="where the issue goes, e.g. 'llvm/llvm-project (MLIR)' (ISSUE.md and bundle.json)")
    return p


def tried(doc: dict) -> list[str]:
    """The versions a ``bisect --json`` result ran (its steps), oldest first as the range orders them."""
    ran = doc.get("versions_tried")
    if ran is None:          # a result written before bisect named them: its steps are what ran
        steps = {st.get("version") for st in doc.get("steps", [])}
        ran = [v for v in doc.get("versions", []) if v in steps]
    return list(ran)


def since(bisect_file: Optional[Path]) -> tuple[list[str], dict]:
    """The issue's "since when" lines and bundle.json's facts from a ``bisect --json`` result."""
    if bisect_file is None:
        return ["Not bisected."], {}
    doc = json.loads(Path(bisect_file).read_text())
    pk = ", ".join(doc.get("question", {}).get("packages", [])) or "the toolchain"
    ran = tried(doc)
    older = doc.get("older_lineage") or {}
    facts = {"last_good": doc.get("last_good"), "bisect_seconds": doc.get("seconds"), "versions_tried": ran,
             "older_lineage_checked": bool(older.get("checked"))}
    if doc.get("last_good") is None:
        oldest = doc.get("oldest_tried") or (ran[0] if ran else None)
        facts["oldest_tried"] = oldest
        lines = [f"Present in every {pk} release tried ({', '.join(ran)}; {doc['seconds']} s); "
                 f"the oldest tried is {oldest}"
                 + (f" (older releases give no verdict: {', '.join(doc['no_verdict'])})" if doc.get("no_verdict") else "")
                 + ". No release without it was found, so no first bad release is known."]
        if older.get("packages"):
            runs = older.get("runs") or []
            found = older.get("result") or {}
            lines.append(f"Older releases under the earlier package names ({', '.join(older['packages'])}): "
                         + ("checked" + (f" ({older['how']})" if older.get("how") else "") + ":" if older.get("checked")
                            else "not checked" + (f" ({older['why']})" if older.get("why") else "") + "."))
            lines += [f"- {r['version']}: {r['result']} ({r.get('got', '')})" for r in runs]
            if found:
                lines.append(f"- bisected: versions run {', '.join(tried(found))}; "
                             + (f"first bad {found['first_bad']}, last good {found['last_good']}" if found.get("last_good")
                                else f"in every one, the oldest tried {found.get('oldest_tried')}"))
        return lines, facts
    facts["first_bad"] = doc.get("first_bad")
    lines = [f"First bad {pk} {doc['first_bad']}, last good {doc['last_good']} (bisected over the releases on the "
             f"index; ran {', '.join(ran)}; {doc['seconds']} s)."]
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


def reduce_program(program, values: dict, got: dict, writer, case, versions: dict):
    """The smallest program (reduce.py) that still gives exactly the outputs ``got`` on the same
    inputs; each candidate is run as its bundle (reproduce.py) with ``got`` as the expected values,
    bit for bit: exit 0 means the wrong value stayed. Returns (program, its inputs, the steps)."""
    import dataclasses
    import tempfile
    from accel_regress.results.upstream import reduce
    arg_names = reduce.arguments(program.mlir)
    if len(arg_names) != len(program.inputs):
        print(f"  reduce program: {len(arg_names)} arguments in the text for {len(program.inputs)} inputs; kept as it is")
        return program, values, []
    by_arg = dict(zip(arg_names, program.inputs))
    same = {n: bundle.Expected(np.asarray(g), np.zeros(np.shape(g)), True, "the outputs the bug gives")
            for n, g in got.items() if n in program.outputs}

    def candidate(mlir: str, names: list[str]):
        inputs = tuple(by_arg[a] for a in names)
        return dataclasses.replace(program, mlir=mlir, inputs=inputs,
                                   constants={k: v for k, v in program.constants.items() if k in inputs})

    def still_wrong(mlir: str, names: list[str]) -> bool:
        prog = candidate(mlir, names)
        vals = {n: values[n] for n in prog.inputs}
        with tempfile.TemporaryDirectory(prefix="upstream-reduce-") as tmp:
            try:
                spec, build_files, _ = writer.spec(case, prog, vals, versions)
            except Exception as exc:          # the backend cannot build this candidate: not kept
                print(f"  reduce program: candidate not built ({type(exc).__name__}: {exc})")
                return False
            out = bundle.write_bundle(Path(tmp) / "b", title="candidate", program_mlir=mlir, spec=spec,
                                      inputs=vals, expected=same, build_files=build_files)
            proc = subprocess.run([sys.executable, str(out / "reproduce.py")], capture_output=True, text=True,
                                  timeout=1800)
            return proc.returncode == 0

    found = reduce.reduce_program(program.mlir, still_wrong)
    if not found.steps:
        return program, values, []
    small = candidate(found.mlir, found.inputs)
    print(f"  reduce program: {len(program.mlir.splitlines())} -> {len(found.mlir.splitlines())} lines, "
          f"inputs {', '.join(small.inputs)} ({len(found.steps)} steps)")
    return small, {n: values[n] for n in small.inputs}, found.steps


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
    reduced_steps: list[str] = []
    if not args.no_reduce:
        program, values, reduced_steps = reduce_program(program, values, s_out, writer, small, versions)
    spec, build_files, how = writer.spec(small, program, values, versions)
    lines = bundle.element_lines(s_inputs, s_exp, s_out)
    title = args.title or f"{case.op} on {hw}: {lines[0]}"
    since_lines, facts = since(args.bisect)
    n_in = sum(int(np.size(v)) for v in s_inputs.values())
    what = [*(f"    {ln}" for ln in lines), "",
            f"Found on a larger input ({len(bad)} of {total} output elements wrong); "
            + (f"reduced to {n_in} input element(s), which still show it." if small is not case
               else "bundled as it is.")]
    if reduced_steps:
        what += ["", "The program, reduced op by op while the wrong value stayed (program.mlir):", "",
                 *(f"    {ln}" for ln in program.mlir.splitlines())]
    right = ([args.standard, ""] if args.standard else []) + [f"Expected values: {next(iter(s_exp.values())).how}."]
    issue = issue_text(title, what, right, how, versions, since_lines)
    if args.tracker:
        issue = issue.replace("\n", f"\n\nFor: {args.tracker}\n", 1)
        spec["tracker"] = args.tracker
    spec.update({"versions": versions, "case": small.to_json(), "reduced_from": case.to_json(), **facts})
    if reduced_steps:
        spec["program_reduction"] = reduced_steps
    out = bundle.write_bundle(args.out, title=title, program_mlir=program.mlir, spec=spec, inputs=values,
                              expected=s_exp, got=s_out, build_files=build_files, issue=issue)
    return check(out)
