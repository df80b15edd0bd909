"""qemu-rvv's part of an upstream bundle (accel-regress upstream, hardware/results/upstream).

A run: the riscv64 static library build (the exact iree-compile command), our C harness with the
tables build.py generates for the inputs and the host program's dispatch schedule (copied into the
bundle's build/ folder: they hold the export names and bindings of the IREE version that made
them), the clang link and the qemu-user command, as reproduce.py's "riscv-qemu" kind runs them.

The Saturn codegen check (``test_saturn_codegen_signature``, no run): the iree-compile command with
the executables' assembly dumped and seed 004's pattern, which reproduce.py's "codegen-scan" kind
looks for; the case reduced to the smallest shape whose dispatch still has it."""
from __future__ import annotations

import platform
import re
import sys
import tempfile
from pathlib import Path

from accel_regress.backends import qemu_rvv
from accel_regress.backends.qemu_rvv import build, schedule
from accel_regress.toolchains.iree import compiler, riscv

SATURN_TEST = "test_saturn_codegen_signature"
# Seed 004's listing: the FMA itself single-lane at VL=1, mf2, slides in the same loop (scan.py).
SATURN_SCAN = {"ops": ["vfmacc.vf", "vslidedown.vi"], "vtype": ["1", "e32", "mf2"], "under": "vfmacc.vf"}
DEBIAN = "qemu-user-static clang-16 lld-16 libc6-dev-riscv64-cross"


def _iree_version() -> str:
    return compiler.compiler_version().split()[0].split("rc")[0]


def spec(case, program, values, versions, variant=None, vlen=None):
    if variant is None:
        variant, vlen = qemu_rvv.QemuRvvBackend()._variant_vlen(case)
    compiled = build.compile_riscv(program, variant, name=f"{case.op}/{case.id}" if case else "program")
    sched = schedule.parse_file(compiled.output, compiled.symbol(program.entry))
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for src in build.generate(program, compiled, sched, values, work, 1):
            if src.parent == work:      # the generated tables; .incbin names made relative to build/
                files[src.name] = src.read_text().replace(f'"{work}/', '"').encode()
        for f in work.glob("input_*.bin"):
            files[f.name] = f.read_bytes()
    for name in ("harness.c", "abi.h"):
        files[name] = (build.HARNESS_DIR / name).read_bytes()
    compile_argv = ["iree-compile", "program.mlir", *riscv.compile_flags(variant), *getattr(program, "compile_flags", ()),
                    "--iree-llvmcpu-link-embedded=false", "--iree-llvmcpu-link-static",
                    "--iree-llvmcpu-static-library-output-path=lib.o", "--compile-to=hal", "-o", "host.mlir"]
    link = [build.CLANG, "--target=riscv64-linux-gnu", "-march=rv64gc", "-mabi=lp64d", "-O2", "-I.",
            "-DACCEL_UART_OUTPUTS", "-static", "-fuse-ld=lld", "harness.c", "case_data.c", "inputs.S", "lib.o",
            "-lm", "-o", "harness"]
    run_argv = [qemu_rvv.QEMU, "-cpu", qemu_rvv.qemu_cpu(variant, vlen), "./harness"]
    out = {"compile": compile_argv, "link": link,
           "run": {"kind": "riscv-qemu", "argv": run_argv, "inputs": list(program.inputs),
                   "outputs": list(program.outputs), "variant": variant, "vlen": vlen},
           "note": f"build/case_data.c holds the dispatch schedule IREE {_iree_version()} made of this program "
                   "(export names, bindings); another IREE version may need it made again (accel-regress upstream)"}
    how = [f"    pip install iree-base-compiler=={_iree_version()} numpy", f"    apt-get install {DEBIAN}",
           "    python reproduce.py     # exit 1 while the bug is there, 0 when fixed", "",
           "Compile: `" + " ".join(compile_argv) + "`  ", "Link (in build/): `" + " ".join(link) + "`  ",
           "Run: `" + " ".join(run_argv) + "` (prints each output as `[out] name=... hex=...`)"]
    return out, files, how


def claims(nodeid: str) -> bool:
    return f"::{SATURN_TEST}[" in nodeid


_PARAMS = re.compile(r"\[(?P<kind>[a-z0-9_]+)-(?P<shape>\d+(?:x\d+)*)-(?P<variant>.+)-vlen(?P<vlen>\d+)-(?P<cls>\w+)\]$")


def bundle(args, prog: str) -> int:
    """The Saturn codegen check's bundle: the smallest shape whose dispatch still has the pattern."""
    from accel_regress.core import registry
    from accel_regress.results.upstream import bundle as writer
    from accel_regress.results.upstream import cli
    from accel_regress.toolchains.iree.program import program_for
    m = _PARAMS.search(args.test)
    if not m:
        print(f"{prog}: cannot read the case from {args.test}", file=sys.stderr)
        return 2
    family = registry.module_for("family", "f32_reduction")
    shrinker = registry.module_for("upstream", "f32_reduction")
    variant = m["variant"]
    case = family.make_case(m["kind"], tuple(int(d) for d in m["shape"].split("x")), variant, int(m["vlen"]),
                            inputs=m["cls"])

    def loops(c):
        return [f"{d['function']}: loop {', '.join(d['signature_loops'])}"
                for d in build.program_scan(program_for(c), variant, name=c.id) if d["signature"]]
    hits = loops(case)
    print(f"case {case.id}: {len(hits)} dispatch(es) with the pattern")
    if not hits:
        print(f"{prog}: no dispatch has the pattern here: nothing to bundle", file=sys.stderr)
        return 2
    small = case
    for c2 in ([] if args.no_reduce else shrinker.smaller_cases(case)):
        h2 = loops(c2)
        print(f"  reduce: {c2.id}: " + ("has the pattern" if h2 else "no pattern"))
        if h2:
            small, hits = c2, h2
            break
    program = program_for(small)
    compile_argv = ["iree-compile", "program.mlir", *riscv.compile_flags(variant), *getattr(program, "compile_flags", ()),
                    "--iree-hal-dump-executable-files-to=dump", "-o", "module.vmfb"]
    versions = {"iree-compiler": compiler.compiler_version(), "python": platform.python_version()}
    since, facts = cli.since(args.bisect)
    title = args.title or (f"{small.id}: a dispatch loop runs vfmacc.vf single-lane (vsetivli zero, 1, e32, "
                           "mf2) with vslidedown.vi in the loop (seed 004's candidate pattern)")
    what = ["In the RISC-V assembly IREE emits for program.mlir, one loop runs `vfmacc.vf` under "
            "`vsetivli zero, 1, e32, mf2` (single lane) and holds `vslidedown.vi`: the pattern seed 004 disassembled "
            "from a dispatch that hung on Saturn and calls an unconfirmed candidate:", "", *(f"    {h}" for h in hits), "",
            f"Reduced from `{case.id}` to `{small.id}`, the fewest elements that still give it." if small is not case
            else ""]
    right = [args.standard] if args.standard else []
    right += ["reproduce.py exits 1 while a dispatch loop has this pattern (bundle.json \"scan\")."]
    issue = cli.issue_text(title, what, right,
                           [f"    pip install iree-base-compiler=={_iree_version()} numpy", "    python reproduce.py", "",
                            "Compile: `" + " ".join(compile_argv) + "`"], versions, since)
    out = writer.write_bundle(args.out, title=title, program_mlir=program.mlir, inputs={}, issue=issue,
                              spec={"compile": compile_argv, "run": {"kind": "codegen-scan"}, "scan": SATURN_SCAN,
                                    "versions": versions, "case": small.to_json(), "reduced_from": case.to_json(),
                                    "found": hits, **facts})
    return cli.check(out)
