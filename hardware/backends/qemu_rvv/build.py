"""Build the RISC-V harness executable for one case and one flag variant.

``build_harness(case, variant, out_dir, uart_outputs, *, inputs, iterations=1, rdcycle=False, target="linux")``

Contract:
- IREE compiles ``program_for(case)`` for riscv64 with the variant's flags
  (hardware/toolchains/iree/riscv.py) as a static library (``--iree-llvmcpu-link-static``), with
  ``--compile-to=hal`` so the host program comes back as text (the dispatch schedule,
  hardware/backends/qemu_rvv/schedule.py) and ``--iree-hal-dump-executable-files-to`` so each dispatch's
  assembly is kept (the codegen scan, hardware/backends/qemu_rvv/scan.py). Compiles are cached
  (hardware/toolchains/iree/compiler.py).
- ``inputs`` (name -> numpy array, the names of the program's inputs) are embedded in the
  executable (``.incbin``): the binary needs no file system, so the same build serves
  qemu-user and a FireSim boot binary. Pass the inputs the run was given. When ``inputs`` is
  None they are regenerated from the case by the golden module of its operator (the module
  whose ``OP`` is ``case.op`` and that has ``make_inputs(case)``; inputs depend only on the case
  and its seed, so this gives the same bytes the test drew).
- ``uart_outputs=True`` defines ACCEL_UART_OUTPUTS: every output is printed on stdout as an
  ``[out]`` line (protocol: harness/harness.c, reader: hardware/backends/qemu_rvv/protocol.py);
  False: outputs go to ``<argv[1]>/<name>.bin``.
- ``iterations``: how many times the whole schedule runs (``Bench iter i/n`` lines).
- ``rdcycle=True`` reads the cycle CSR around each dispatch (``[dc] cyc=``); off by default
  because Linux may forbid user-mode counter reads; without it ``cyc=0``.
- clang-16 links the harness statically (``--target=riscv64-linux-gnu -static``, lld) against
  the Debian riscv64 glibc; the executable is ``<out_dir>/harness`` and is returned.
- ``target="baremetal"``: the same harness and tables linked as a bare-metal image at 0x80000000
  (crt0, HTIF console and exit, picolibc: hardware/backends/qemu_rvv/baremetal.py), what FireSim boots;
  outputs always as ``[out]`` lines. ``"linux"`` (the default) is the executable described above.
- Raises ``accel_regress.CompileError`` (stage compile: the compiler's diagnostic; stage build: the
  schedule could not be read or clang failed, with its output) and never returns a half-written
  file: the executable is linked under a temporary name and renamed.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core.errors import CompileError, HarnessError
from accel_regress.core import build_seal, harness_files
from accel_regress.util import children
from accel_regress.toolchains.iree import compiler, riscv
from accel_regress.toolchains.iree.program import Program, program_for
from accel_regress.backends.qemu_rvv import schedule as sched_mod

HERE = Path(__file__).resolve().parent
HARNESS_DIR = HERE / "harness"
CLANG = "clang-16"
APT_PACKAGES = "qemu-user-static clang-16 lld-16 gcc-riscv64-linux-gnu libc6-dev-riscv64-cross"
APT_HINT = f"apt-get install -y {APT_PACKAGES}"
SYSROOT = Path("/usr/riscv64-linux-gnu")
STATIC_FLAGS = ("--iree-llvmcpu-link-embedded=false", "--iree-llvmcpu-link-static",
                "--iree-llvmcpu-static-library-output-path={out}/lib.o",
                "--iree-hal-dump-executable-files-to={out}/dump", "--compile-to=hal")
_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.int32): "i32",
           np.dtype(np.int8): "i8", np.dtype(np.int64): "i64"}


TARGETS = ("linux", "baremetal")


def _check_target(target: str) -> None:
    if target not in TARGETS:
        raise ValueError(f"unknown harness target {target!r}; known: {', '.join(TARGETS)}")


def toolchain_missing(target: str = "linux") -> Optional[str]:
    """None when clang-16, lld and the riscv64 glibc (linux) or picolibc (baremetal) are here;
    else what is missing and the fix."""
    _check_target(target)
    if target == "baremetal":
        from accel_regress.backends.qemu_rvv import baremetal
        return baremetal.toolchain_missing(CLANG)
    missing = [t for t in (CLANG, "ld.lld-16") if shutil.which(t) is None and not Path(f"/usr/bin/{t}").exists()]
    if not (SYSROOT / "lib" / "libc.a").exists():
        missing.append(f"{SYSROOT}/lib/libc.a (libc6-dev-riscv64-cross)")
    if missing:
        return f"missing {', '.join(missing)}: {APT_HINT}"
    return None


def riscv_flags(program: Program, variant: str) -> tuple[str, ...]:
    return riscv.compile_flags(variant) + tuple(getattr(program, "compile_flags", ())) + STATIC_FLAGS


def compile_riscv(program: Program, variant: str, name: str = "program") -> compiler.Compiled:
    return compiler.compile_cached(program.mlir, riscv_flags(program, variant), name=name, output="host.mlir")


def program_scan(program: Program, variant: str, name: str = "program") -> list[dict]:
    """The codegen scan (scan.py) of the dispatches ``program`` runs, compiled for ``variant``. A
    compiled entry may be a batch (a plan's steps, the cases compiled ahead) whose dump holds
    other programs' dispatches too: only those the program's own schedule calls are its."""
    return scan_of(compile_riscv(program, variant, name=name), program)


def scan_of(compiled: compiler.Compiled, program: Program) -> list[dict]:
    from accel_regress.backends.qemu_rvv import scan
    scans = scan.scan_dir(compiled.dir / "dump")
    try:
        exports = {d.export for d in sched_mod.parse_file(compiled.output, compiled.symbol(program.entry)).dispatches}
    except sched_mod.ScheduleError:
        return scans        # the harness build reports it; the scan is of the whole entry
    ours = [d for d in scans if d["function"] in exports]
    renamed = compiled.symbol(program.entry)
    for d in ours:      # a batch renamed the program's functions: its dispatches keep the program's own names
        if renamed != program.entry and d["function"].startswith(renamed + "_"):
            d["function"] = program.entry + d["function"][len(renamed):]
    return ours


def compile_plan(plan, variant: str, name: str = "plan") -> None:
    """The programs of one plan (fused_decode's steps) in one iree-compile per set of flags: one
    static library holding every step's dispatches, each step's harness calling its own. A batch
    that fails leaves each program to its own compile, which names the one at fault."""
    groups: dict[tuple, list[str]] = {}
    for program in plan:
        groups.setdefault(riscv_flags(program, variant), []).append(program.mlir)
    for flags, texts in groups.items():
        try:
            compiler.compile_batch(texts, flags, name=name, output="host.mlir", shared_files=True)
        except CompileError:
            pass


def library_queries(header: Path) -> list[str]:
    names = []
    for line in header.read_text().splitlines():
        line = line.strip()
        if line.endswith("_library_query(") or "_library_query(" in line:
            names.append(line.split("(")[0].split()[-1])
    return names


def _c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _queries_source(compiled: compiler.Compiled) -> list[str]:
    """case_data.c's head: the static library's query functions (every program of it has the same)."""
    queries = library_queries(compiled.dir / "lib.h")
    if not queries:
        raise CompileError("the static library header declares no *_library_query function", stage="build")
    c = ['#include "abi.h"', ""]
    for q in queries:
        c.append(f"extern const accel_library_header_t** {q}(uint32_t, const accel_env_t*);")
    c.append(f"const accel_library_query_fn ACCEL_QUERIES[] = {{{', '.join(queries)}}};")
    c.append(f"const uint32_t ACCEL_QUERY_COUNT = {len(queries)};")
    return c


def _schedule(compiled: compiler.Compiled, program: Program) -> sched_mod.Schedule:
    """The host program's schedule of ``program`` (its entry in ``compiled``), or COMPILE_ERROR."""
    try:
        return sched_mod.parse_file(compiled.output, compiled.symbol(program.entry))
    except sched_mod.ScheduleError as exc:
        raise CompileError(f"the harness cannot run this program: {exc}", stage="build",
                           detail={"host_program": str(compiled.output)}) from None


def _tables(program: Program, schedule: sched_mod.Schedule, inputs: Mapping[str, np.ndarray]):
    """What one run of ``program`` does, as the harness's tables hold it: (buffers as (size, input
    array or None), dispatches, outputs as (name, dtype, shape, buffer, offset, length))."""
    missing = [n for n in program.inputs if n not in inputs]
    if missing:
        raise CompileError(f"inputs lack {', '.join(missing)}", stage="build")
    if len(schedule.outputs) != len(program.outputs):
        raise CompileError(f"the host program returns {len(schedule.outputs)} results, the program declares "
                           f"{len(program.outputs)}", stage="build")
    buffers: list[tuple[int, Optional[np.ndarray]]] = []
    for b in schedule.buffers:
        if b.arg < 0:
            buffers.append((b.size, None))
            continue
        if b.arg >= len(program.inputs):
            raise CompileError(f"host program argument {b.arg} has no input name", stage="build")
        arr = np.ascontiguousarray(inputs[program.inputs[b.arg]])
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        buffers.append((max(b.size, arr.nbytes), arr))
    outputs = [(name, o.dtype, "x".join(str(d) for d in o.shape), o.buffer, o.offset, o.length)
               for name, o in zip(program.outputs, schedule.outputs)]
    return buffers, schedule.dispatches, outputs


def generate(program: Program, compiled: compiler.Compiled, schedule: sched_mod.Schedule,
             inputs: Mapping[str, np.ndarray], work: Path, iterations: int) -> list[Path]:
    """Write case_data.c and inputs.S into ``work`` (the case's tables and inputs linked into the
    executable: what FireSim boots and an upstream bundle builds); return the sources to compile."""
    c = _queries_source(compiled)
    buffers, dispatches, outputs = _tables(program, schedule, inputs)
    asm, buf_lines = [".section .rodata"], []
    for i, (size, arr) in enumerate(buffers):
        if arr is None:
            buf_lines.append(f"  {{{size}u, 0, 0}},")
            continue
        data = work / f"input_{i}.bin"
        data.write_bytes(arr.tobytes())
        asm += [".balign 64", f".globl accel_input_{i}", f"accel_input_{i}:", f'.incbin "{data}"']
        c.append(f"extern const uint8_t accel_input_{i}[];")
        buf_lines.append(f"  {{{size}u, accel_input_{i}, {arr.nbytes}u}},")
    c.append("const accel_buffer_t ACCEL_BUFFERS[] = {\n" + "\n".join(buf_lines) + "\n};")
    c.append(f"const uint32_t ACCEL_BUFFER_COUNT = {len(buffers)};")
    disp = []
    for k, d in enumerate(dispatches):
        binds = ", ".join(f"{{{bd.buffer}u, {bd.offset}u, {bd.length}u}}" for bd in d.bindings)
        c.append(f"static const accel_binding_t B{k}[] = {{{binds or '{0, 0, 0}'}}};")
        consts = ", ".join(f"{v}u" for v in d.constants)
        c.append(f"static const uint32_t K{k}[] = {{{consts or '0'}}};")
        disp.append(f"  {{{_c_str(d.export)}, 0, {{{d.workgroups[0]}u, {d.workgroups[1]}u, {d.workgroups[2]}u}}, "
                    f"{len(d.constants)}u, K{k}, {len(d.bindings)}u, B{k}}},")
    c.append("const accel_dispatch_t ACCEL_DISPATCHES[] = {\n" + "\n".join(disp) + "\n};")
    c.append(f"const uint32_t ACCEL_DISPATCH_COUNT = {len(dispatches)};")
    outs = [f"  {{{_c_str(name)}, {_c_str(dtype)}, {_c_str(shape)}, {buf}u, {off}u, {length}u}},"
            for name, dtype, shape, buf, off, length in outputs]
    c.append("const accel_output_t ACCEL_OUTPUTS[] = {\n" + "\n".join(outs) + "\n};")
    c.append(f"const uint32_t ACCEL_OUTPUT_COUNT = {len(outputs)};")
    c.append(f"const uint32_t ACCEL_ITERATIONS = {int(iterations)};")
    (work / "case_data.c").write_text("\n".join(c) + "\n")
    (work / "inputs.S").write_text("\n".join(asm) + "\n")
    return [HARNESS_DIR / "harness.c", work / "case_data.c", work / "inputs.S"]


def _word(text: str, what: str) -> str:
    if not text or any(ch.isspace() for ch in text):
        raise CompileError(f"the case file cannot hold {what} {text!r} (a word without spaces)", stage="build")
    return text


def write_case(compiled: compiler.Compiled, program: Program, inputs: Mapping[str, np.ndarray], path: Path,
               iterations: int = 1) -> Path:
    """The case file a ``library_harness`` runs: the tables of one run of ``program`` and its
    inputs (format: harness.c, read_case; a scalar's shape is written "-")."""
    buffers, dispatches, outputs = _tables(program, _schedule(compiled, program), inputs)
    words = ["accel-case 1", f"iterations {int(iterations)}", f"buffers {len(buffers)}"]
    words += [f"{size} {arr.nbytes if arr is not None else 0}" for size, arr in buffers]
    words.append(f"dispatches {len(dispatches)}")
    for d in dispatches:
        binds = " ".join(f"{bd.buffer} {bd.offset} {bd.length}" for bd in d.bindings)
        words.append(" ".join([_word(d.export, "the export"), "0", *map(str, d.workgroups), str(len(d.constants)),
                               *map(str, d.constants), str(len(d.bindings)), binds]).rstrip())
    words.append(f"outputs {len(outputs)}")
    words += [" ".join([_word(name, "the output name"), _word(dtype, "the dtype"), _word(shape or "-", "the shape"),
                        *map(str, rest)]) for name, dtype, shape, *rest in outputs]
    words.append("end")
    data = ("\n".join(words) + "\n").encode() + b"".join(arr.tobytes() for _, arr in buffers if arr is not None)
    Path(path).write_bytes(data)
    return Path(path)


def _clang_base(uart_outputs: bool, rdcycle: bool, case_from_file: bool = False) -> list[str]:
    argv = [CLANG, "--target=riscv64-linux-gnu", "-march=rv64gc", "-mabi=lp64d", "-O2", f"-I{HARNESS_DIR}",
            "-Wall", "-Werror=implicit-function-declaration"]
    if uart_outputs:
        argv.append("-DACCEL_UART_OUTPUTS")
    if rdcycle:
        argv.append("-DACCEL_RDCYCLE")
    if case_from_file:
        argv.append("-DACCEL_CASE_FROM_FILE")
    return argv


def _run_clang(argv: list[str], what: str) -> None:
    proc = children.run(argv, timeout=300)      # a link compile ahead does is stopped with the session
    if proc.returncode != 0:
        words = harness_files.said_by_tool(f"{proc.stderr}\n{proc.stdout}")
        if words:       # its own write into our folder failed, not the program
            raise HarnessError(f"{CLANG} could not write {what}: {words}: the harness's own files, not the device",
                               detail={"diagnostic": (proc.stderr or proc.stdout)[-8000:]})
        raise CompileError(f"{CLANG} could not build {what} (exit {proc.returncode})", stage="build",
                           detail={"diagnostic": (proc.stderr or proc.stdout)[-8000:], "argv": " ".join(argv)})


def tool_version(name: str) -> str:
    """The first line of ``name --version`` for the ``name`` on PATH ("missing" when there is none)."""
    exe = shutil.which(name)
    return _version_of(exe) if exe else "missing"


@lru_cache(maxsize=None)
def _version_of(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    return out.splitlines()[0].strip() if out else "unknown"


def clang_version() -> str:
    return tool_version(CLANG)


def link_cache() -> Path:
    """Harness objects and linked executables: ``qemu-rvv`` beside the IREE cache, so under the one
    cache root (hardware/util/derived_cache.py) unless ``$ACCEL_IREE_CACHE`` moves both."""
    return compiler.cache_root().parent / "qemu-rvv"


def _sources() -> bytes:
    """The harness sources' bytes, in name order: what a linked executable's key holds of them."""
    return b"".join(f.read_bytes() for f in sorted(HARNESS_DIR.iterdir()))


def harness_object(uart_outputs: bool, rdcycle: bool, case_from_file: bool = False) -> Path:
    """harness.c compiled once per (sources, flags, clang) and kept in the cache: only the
    per-case tables are compiled for each case."""
    base = _clang_base(uart_outputs, rdcycle, case_from_file)
    # The key holds the sources' bytes, never their folder: the -I path names the checkout, and
    # every checkout of the same sources shares one object.
    h = hashlib.sha256("\0".join(a for a in base if not a.startswith("-I")).encode())
    h.update(clang_version().encode())
    for f in sorted(HARNESS_DIR.iterdir()):
        h.update(f.name.encode() + f.read_bytes())
    return _built_once(link_cache(), h.hexdigest(), "harness.o", lambda folder: _run_clang(
        [*base, "-c", str(HARNESS_DIR / "harness.c"), "-o", str(folder / "harness.o")], "the harness"))


def link(sources: list[Path], objects: list[Path], out: Path, *, uart_outputs: bool, rdcycle: bool,
         target: str = "linux", case_from_file: bool = False) -> None:
    """Compile ``sources`` (harness.c comes from the object cache) and link them statically."""
    _check_target(target)
    if target == "baremetal":
        from accel_regress.backends.qemu_rvv import baremetal
        baremetal.link(CLANG, _run_clang, HARNESS_DIR, sources, objects, out, uart_outputs=uart_outputs,
                       rdcycle=rdcycle)
        return
    objs = list(objects)
    srcs = []
    for src in sources:
        if src == HARNESS_DIR / "harness.c":
            objs.insert(0, harness_object(uart_outputs, rdcycle, case_from_file))
        else:
            srcs.append(src)
    tmp = out.with_name(out.name + ".tmp")
    argv = [*_clang_base(uart_outputs, rdcycle, case_from_file), "-static", "-fuse-ld=lld", *map(str, srcs), *map(str, objs),
            "-lm", "-o", str(tmp)]
    _run_clang(argv, "the harness")
    os.replace(tmp, out)


def build_key(compiled: compiler.Compiled, inputs: Mapping[str, np.ndarray], uart_outputs: bool,
              iterations: int, rdcycle: bool, target: str = "linux") -> str:
    h = hashlib.sha256()
    h.update(compiled.dir.name.encode())
    for name in sorted(inputs):
        a = np.ascontiguousarray(inputs[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    h.update(_sources())
    h.update(f"{uart_outputs}|{iterations}|{rdcycle}|{CLANG}".encode())
    if target != "linux":       # linux keys stay what they were: existing cached builds remain valid
        from accel_regress.backends.qemu_rvv import baremetal
        h.update(f"|{target}|{baremetal.runtime_digest()}".encode())
    return h.hexdigest()


def inputs_for(case: Case) -> dict[str, np.ndarray]:
    """The case's inputs from the golden module of its operator (see the module docstring)."""
    from accel_regress.core import registry
    module = registry.module_for("family", case.op)
    if module is not None and callable(getattr(module, "make_inputs", None)):
        return module.make_inputs(case)
    raise CompileError(f"build_harness was given no inputs and no golden module generates inputs for "
                       f"{case.op!r}; pass inputs=", stage="build")


def build_harness(case: Case, variant: str, out_dir, uart_outputs: bool = True, *,
                  inputs: Optional[Mapping[str, np.ndarray]] = None, iterations: int = 1, rdcycle: bool = False,
                  program: Optional[Program] = None, target: str = "linux") -> Path:
    """See the module docstring. Returns ``<out_dir>/harness`` (``<out_dir>/harness.elf`` for
    ``target="baremetal"``)."""
    reason = toolchain_missing(target)
    if target == "baremetal" and not uart_outputs:
        raise CompileError("the bare-metal harness has no file system: it needs uart_outputs=True", stage="build")
    if reason:
        raise CompileError(reason, stage="build", detail={"diagnostic": reason})
    if inputs is None:
        inputs = inputs_for(case)
    variant = riscv.canonical(variant)
    program = program or program_for(case)
    compiled = compile_riscv(program, variant, name=f"{case.op}/{case.id}")
    schedule = _schedule(compiled, program)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-", dir=out_dir) as tmp:
        work = Path(tmp)
        sources = generate(program, compiled, schedule, inputs, work, iterations)
        exe = out_dir / ("harness.elf" if target == "baremetal" else "harness")
        link(sources, [compiled.dir / "lib.o"], exe, uart_outputs=uart_outputs, rdcycle=rdcycle, target=target)
    return exe


def library_harness(compiled: compiler.Compiled, *, uart_outputs: bool = True, rdcycle: bool = False,
                    root: Optional[Path] = None) -> Path:
    """The executable that runs any program of ``compiled``'s static library, each case given as a
    case file (``write_case``): linked once per library, so a batch of programs compiled together
    (compile ahead, a plan's steps) shares one link, and cases that differ in their inputs share it
    too. Linux only: a bare-metal image has no file system (``build_harness`` embeds the case)."""
    reason = toolchain_missing("linux")
    if reason:
        raise CompileError(reason, stage="build", detail={"diagnostic": reason})
    h = hashlib.sha256(f"{compiled.dir.name}|case-from-file|{uart_outputs}|{rdcycle}|{CLANG}".encode())
    h.update(_sources())
    key = h.hexdigest()
    root = root or link_cache()

    def build(folder: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="harness-", dir=folder) as tmp:
            queries = Path(tmp) / "case_data.c"
            queries.write_text("\n".join(_queries_source(compiled)) + "\n")
            link([HARNESS_DIR / "harness.c", queries], [compiled.dir / "lib.o"], folder / "harness",
                 uart_outputs=uart_outputs, rdcycle=rdcycle, case_from_file=True)
    return _built_once(root, key, "harness", build)


CACHE_NAME = "qemu-rvv harness cache"
_scratch_built: dict[str, Path] = {}       # key -> what this process built where the root could not keep it


def _built_once(root: Path, key: str, name: str, build: Callable[[Path], object]) -> Path:
    """``<root>/<key[:32]>/<name>``, built by ``build(folder)`` unless a signed entry holds it. A
    harness is code qemu-user runs on the host's behalf (a guest's execve runs a host program),
    so an entry is used only when its index carries this machine's signature and every file
    matches (hardware/core/build_seal.py, as for IREE modules); one that does not is rebuilt,
    never run. One build per key: another worker or the compile-ahead thread may be building it
    now (a claim); a folder is signed, then renamed into place whole."""
    with harness_files.writing(f"qemu-rvv harness cache {root}"):
        return _built_once_in(root, key, name, build)


def _built_once_in(root: Path, key: str, name: str, build: Callable[[Path], object]) -> Path:
    final = root / key[:32]
    if key in _scratch_built:
        return _scratch_built[key]
    if build_seal.secret() is not None and compiler.reads(root) and _verified_entry(final, key, name):
        return final / name
    if build_seal.secret() is None or not compiler.keeps(root):     # this session's own build
        folder = Path(tempfile.mkdtemp(prefix="qemu-rvv-", dir=compiler.scratch()))
        build(folder)
        _scratch_built[key] = folder / name
        return folder / name
    with compiler.claim(root, key, wait_s=compiler.claim_wait(300)) as held:
        if not held:
            compiler.said_unclaimed(root, key)
        if _verified_entry(final, key, name):
            return final / name
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=root))
        try:
            build(tmp)
            build_seal.write_index(tmp, key, name)
            try:
                os.rename(tmp, final)
            except OSError:        # another process (its claim ran out) renamed one first: use it if it verifies
                if not _verified_entry(final, key, name):
                    raise
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final / name


def _verified_entry(final: Path, key: str, name: str) -> bool:
    """Whether ``final`` is a whole entry signed by this machine; one that is not is discarded."""
    if not final.exists():
        return False
    problem = build_seal.entry_problem(final, key, name)
    if problem is None:
        return True
    compiler.rejected(final, problem, CACHE_NAME)
    return False


def cached_harness(case: Case, variant: str, inputs: Mapping[str, np.ndarray], *, uart_outputs: bool = True,
                   iterations: int = 1, rdcycle: bool = False, root: Optional[Path] = None,
                   target: str = "linux", program: Optional[Program] = None) -> tuple[Path, compiler.Compiled]:
    """``build_harness`` (the case linked in) into ``<cache>/qemu-rvv/<key>/`` unless that build
    exists already."""
    variant = riscv.canonical(variant)
    program = program or program_for(case)
    compiled = compile_riscv(program, variant, name=f"{case.op}/{case.id}/{program.entry}")
    key = build_key(compiled, inputs, uart_outputs, iterations, rdcycle, target)
    root = root or link_cache()
    exe = _built_once(root, key, "harness.elf" if target == "baremetal" else "harness",
                      lambda folder: build_harness(case, variant, folder, uart_outputs, inputs=inputs,
                                                   iterations=iterations, rdcycle=rdcycle, program=program,
                                                   target=target))
    return exe, compiled
