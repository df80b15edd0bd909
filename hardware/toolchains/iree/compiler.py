"""Run ``iree-compile`` from the ``iree-base-compiler`` wheel, with an on-disk cache of its outputs.

Every IREE-based backend compiles through ``compile_cached``: the program text, the flags and the
compiler's own version line are hashed (sha256) into a key, and everything the compiler wrote
(the ``.vmfb``, a static library and its header, dumped executables) is kept under
``<cache>/<key>/``. A second run with the same program, flags and compiler finds the folder and
compiles nothing. The folder is built under a temporary name and renamed into place, so a
half-written entry is never seen, even by parallel workers (a loser of the rename race discards
its copy).

Flags may name files inside the output folder with the placeholder ``{out}``
(``--iree-llvmcpu-static-library-output-path={out}/lib.o``); it is replaced by the real folder.

Every entry carries ``index.json`` (schema hardware/util/schemas/build-cache-entry.schema.json): the
key, the output's name and the size and sha256 of every file, signed with the golden store's key
(kept outside the root: hardware/core/build_seal.py), written inside the temporary folder before
the rename. A module is code the suite runs and a checksum anyone can recompute, so a hit is
trusted only once its index validates, its signature is this machine's and every file matches
it (checked once per process and entry, again when a file's inode or ctime changes); an entry that does not (truncated,
corrupted, forged with its checksums recomputed, a file name that leaves the folder) is moved
aside, removed and rebuilt, with a note on stderr and in ``Compiled.note``; one signed with
another key or none (a restored root, an older suite) is rebuilt with one note per process.
Without a usable signing key nothing in the root is read: modules are built for the session in
``scratch()``.

Whoever builds an entry holds its claim (an ``flock`` on ``.claim-<key>``, released by the
kernel when the holder dies): a second process or thread that needs the same entry waits for it
instead of compiling it again, then reads what was built. A batch claims only the programs no one
else is building (hardware/toolchains/iree/ahead.py compiles a session's programs ahead while
its cases run and reach the same entries).

``compile_batch`` compiles many programs with the same flags in one ``iree-compile`` (one module
holding every program's functions; a colliding symbol or type alias is renamed): most of a small
program's compile is the compiler's start and per-module work, so the 13 f32_reduction programs
compile 2.4-3.5x faster together, host and riscv64 (benchmarks/bench_compile_batch.py). IREE's
own ``--split-input-file`` is no batch: it writes every chunk's output into the one ``-o`` file
(iree-org/iree compiler/src/iree/compiler/Tools/iree_compile_lib.cc, ``splitInputFile``). Each program then finds the batch's entry
through ``batched/<its own key>.json`` and calls its functions by ``Compiled.symbol(name)``; the
link is trusted only when the batch's source holds the program's text under those names.

The cache lives in ``$ACCEL_IREE_CACHE``, else ``iree`` under the suite's one cache root
(``$ACCEL_CACHE_DIR``, else ``~/.cache/accel-regress``; hardware/util/derived_cache.py): outside the checkout, so a runner keeps it across clones and
checkouts, and never inside an installed package. Its key holds everything that decides the
output, so checkouts and processes can share it. A failed
compile is not cached: it raises ``accel_regress.CompileError`` with the compiler's diagnostic in
``detail['diagnostic']``; a compile that outlives its bound raises ``accel_regress.Hang`` at stage
``compile``.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional, Sequence

try:
    import fcntl
except ImportError:          # not POSIX: no claims, a duplicate compile at worst (the rename race)
    fcntl = None  # type: ignore[assignment]

from accel_regress.core import build_seal, harness_files, own_folder
from accel_regress.util import children
from accel_regress.util.atomic import write_atomic
from accel_regress.toolchains.iree import host_target
from accel_regress.util.derived_cache import user_cache
from accel_regress.core import case_bound
from accel_regress.core.errors import CompileError, HarnessError, Hang

PIP_HINT = "pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0"
VMFB = "module.vmfb"
DIAGNOSTIC_CHARS = 20000
# How iree-compile runs, not what it writes (MLIR's output does not depend on its threading), so
# not part of a cache key. The suite's own parallelism (compile ahead on every core, xdist) is what
# uses the cores; MLIR's threads only added CPU: one riscv64 batch of 16 programs took 1.03 CPU-s
# threaded against 0.92 s without, a one-op program 0.32 against 0.28 (IREE 3.13, 2 cores).
RUN_FLAGS = ("--mlir-disable-threading",)


def cache_root() -> Path:
    env = os.environ.get("ACCEL_IREE_CACHE")
    if env:
        return Path(env)
    return user_cache("iree")


@lru_cache(maxsize=1)
def tool_path() -> Optional[str]:
    """The environment's ``iree-compile``: the one inside the iree-base-compiler wheel (None when
    the wheel is missing). Never another one found on PATH: every IREE backend (iree-cpu, qemu-rvv,
    the GPU ones) and the versions a result records are then the same compiler's (issue 37 item 3)."""
    try:
        from iree.compiler.tools import binaries
        path = binaries.find_tool("iree-compile")
    except Exception:
        return None
    return str(path) if path else None


def availability() -> Optional[str]:
    if tool_path() is None:
        other = shutil.which("iree-compile")
        also = (f"; {other} on PATH is not this environment's and is not used" if other else "")
        return f"iree-compile not found (the iree-base-compiler wheel is not installed in this environment{also}): {PIP_HINT}"
    return None


@lru_cache(maxsize=8)
def _version_text(tool: str) -> str:
    """What ``TOOL --version`` prints, asked once per tool."""
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _version_field(tool: Optional[str], label: str) -> str:
    tool = tool or tool_path()
    if tool is None:
        return "missing"
    text = _version_text(tool)
    line = next((ln for ln in text.splitlines() if label in ln), "")
    return line.split(label, 1)[1].strip() if line else "unknown"


def compiler_version(tool: Optional[str] = None) -> str:
    """The version of ``iree-compile`` (the wheel's unless ``tool`` names another), e.g.
    '3.13.0rc20261016 @ 89ece87b...'."""
    return _version_field(tool, "IREE compiler version")


def llvm_version(tool: Optional[str] = None) -> str:
    return _version_field(tool, "LLVM version")


ENTRY_FORMAT = "index-v1"   # in the key: entries of an older suite (no index) sit beside, never replaced under a reader


def cache_key(mlir: str, flags: Sequence[str], tool: Optional[str] = None) -> str:
    """Everything the module depends on; for code built for ``host``, the CPU and features IREE
    resolves ``host`` to here (host_target), so a root restored onto another CPU never runs code
    built for this one."""
    h = hashlib.sha256()
    parts = [ENTRY_FORMAT, compiler_version(tool), "\0".join(flags), mlir]
    resolver = tool or tool_path()
    if host_target.uses_host(flags) and resolver:
        parts.append(host_target.identity(resolver, compiler_version(tool)))
    for part in parts:
        h.update(part.encode())
        h.update(b"\x01")
    return h.hexdigest()


@dataclass(frozen=True)
class Compiled:
    dir: Path               # the cache entry: the -o output and whatever the flags asked for
    cached: bool            # True when nothing was compiled this time
    seconds: float          # compile time (0 when cached)
    argv: tuple[str, ...]   # the command as it ran (paths inside the temporary folder)
    output_name: str = VMFB
    note: str = ""          # set when a bad cache entry was discarded and rebuilt
    symbols: tuple[tuple[str, str], ...] = ()   # a batched program's renamed functions (hashable, as the rest)

    def symbol(self, name: str) -> str:
        """What the program's function ``name`` is called in this entry's module."""
        return dict(self.symbols).get(name, name)

    @property
    def output(self) -> Path:
        return self.dir / self.output_name

    @property
    def vmfb(self) -> Path:
        return self.dir / VMFB


def _compile_error(proc: subprocess.CompletedProcess, argv: Sequence[str], name: str) -> CompileError:
    diag = (proc.stderr or proc.stdout or "").strip()
    first = next((ln for ln in diag.splitlines() if "error" in ln), diag.splitlines()[0] if diag else "")
    return CompileError(f"iree-compile failed (exit {proc.returncode}) on {name}: {first[:300]}",
                        detail={"diagnostic": diag[-DIAGNOSTIC_CHARS:], "argv": " ".join(argv),
                                "compiler": compiler_version()})


def compile_cached(mlir: str, flags: Sequence[str], *, timeout_s: float = 600.0,
                   name: str = "program", output: str = VMFB, tool: Optional[str] = None,
                   root: Optional[Path] = None,
                   on_error: Callable[..., CompileError] = _compile_error) -> Compiled:
    """Compile ``mlir`` with ``flags`` unless the cache has it; return the entry's folder.

    ``output`` is the file name ``-o`` writes inside the folder (``module.vmfb``; a text name
    such as ``host.mlir`` with ``--compile-to=hal``); it is part of the key. ``{out}`` in a flag
    stands for the entry's folder. ``tool`` (default: the wheel's iree-compile), ``root`` (default:
    cache_root()) and ``on_error(proc, argv, name)`` let another IREE build share this cache logic.
    A cache root or temporary folder that cannot hold the build raises ``HarnessError``.
    """
    with harness_files.writing(f"IREE compile cache {root or cache_root()}"):
        return _compile_cached(mlir, flags, timeout_s=timeout_s, name=name, output=output, tool=tool, root=root,
                               on_error=on_error)


def _compile_cached(mlir: str, flags: Sequence[str], *, timeout_s: float, name: str, output: str,
                    tool: Optional[str], root: Optional[Path], on_error: Callable[..., CompileError]) -> Compiled:
    if tool is None:
        reason = availability()
        if reason:
            raise CompileError(reason, detail={"diagnostic": reason})
    key = _key(mlir, flags, output, tool)
    final = (root or cache_root()) / key
    if key in _scratch_built:           # built this session where the root could not keep it
        return _scratch_built[key]
    if build_seal.secret() is None or not reads(final.parent):   # nothing there can be vouched for: this session's own
        return _build(mlir, flags, None, key, timeout_s=timeout_s, name=name, output=output, tool=tool,
                      on_error=on_error, note="")
    found = _found(final, key, mlir, output)
    if isinstance(found, Compiled):
        return found
    if not keeps(final.parent):
        return _build(mlir, flags, None, key, timeout_s=timeout_s, name=name, output=output, tool=tool,
                      on_error=on_error, note=found)
    # Someone may be building it (a batch compiled ahead, another worker): wait for theirs.
    with claim(final.parent, key, wait_s=claim_wait(timeout_s)) as held:
        if not held:
            said_unclaimed(final.parent, key)
        again = _found(final, key, mlir, output)
        if isinstance(again, Compiled):
            return again
        return _build(mlir, flags, final, key, timeout_s=timeout_s, name=name, output=output, tool=tool,
                      on_error=on_error, note=again or found)


def _found(final: Path, key: str, mlir: str, output: str) -> "Compiled | str":
    """The entry (or the batch holding the program) when it is whole and signed; else the note to
    give a rebuilt one ("" when there was none)."""
    said: list[str] = []
    via_batch = _batched(final.parent, key, mlir, output, said)
    if via_batch is not None:
        return via_batch
    if not final.exists():
        return said[0] if said else ""
    problem = entry_problem(final, key, output)
    if problem is None:
        return Compiled(final, True, 0.0, (), output)
    return rejected(final, problem, "IREE compile cache")


def rejected(final: Path, problem: str, cache: str) -> str:
    """Discard the entry ``final`` that did not verify and say so: once per process and cache for
    entries that are only not this machine's, once per entry for those that are wrong; returns
    the note for what is rebuilt in its place."""
    _discard(final)
    if isinstance(problem, build_seal.Unsigned):
        build_seal.note_once(f"{cache} {final.parent}: entries not signed with this machine's key "
                             "(a root restored from another machine or written by an older suite) are rebuilt, "
                             "never run")
        return f"{cache}: entry {final} is not this machine's ({problem}); rebuilt it"
    note = f"{cache}: discarded entry {final} ({problem}); rebuilt it"
    print(f"accel-regress: {note}", file=sys.stderr)
    return note


_scratch_built: dict[str, Compiled] = {}     # key -> what this process built in scratch()


@lru_cache(maxsize=1)
def scratch() -> Path:
    """This process's folder for builds the cache root cannot keep (removed at exit)."""
    import atexit
    folder = Path(tempfile.mkdtemp(prefix="accel-regress-builds-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def _build(mlir: str, flags: Sequence[str], final: Optional[Path], key: str, *, timeout_s: float, name: str,
           output: str, tool: Optional[str], on_error: Callable[..., CompileError], note: str) -> Compiled:
    """Compile into a temporary folder, then sign it and rename it to ``final``; with ``final``
    None (nothing could vouch for it later) it stays in ``scratch()``, this session's alone."""
    if final is not None:
        final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=final.parent if final is not None else scratch()))
    try:
        src = tmp / "program.mlir"
        src.write_text(mlir)
        argv = [str(tool or tool_path()), str(src), *(f.replace("{out}", str(tmp)) for f in flags), *RUN_FLAGS,
                "-o", str(tmp / output)]
        start = time.perf_counter()
        # What a person needs to read a failed compile once this folder is gone: the program, and
        # the command as it runs next to it (the report folder keeps both: results/failure_files.py).
        kept = {"program": mlir, "argv_here": " ".join(shlex.quote(a.replace(str(tmp), ".")) for a in argv),
                "temp_dir": str(tmp)}
        try:
            proc = children.run(argv, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise Hang(f"{Path(argv[0]).name} did not finish within {timeout_s:.0f} s ({name})", stage="compile",
                       detail={"argv": " ".join(argv), "diagnostic": _text(exc.stderr)[-DIAGNOSTIC_CHARS:],
                               **kept}) from None
        seconds = time.perf_counter() - start
        if proc.returncode != 0 or not (tmp / output).is_file():
            words = harness_files.said_by_tool(f"{_text(proc.stderr)}\n{_text(proc.stdout)}")
            if words:       # its own write into our folder failed, not the program
                raise HarnessError(f"{Path(argv[0]).name} could not write its output in {tmp.parent}: {words}: "
                                   "the harness's own files, not the device",
                                   detail={"diagnostic": _text(proc.stderr)[-DIAGNOSTIC_CHARS:]})
            error = on_error(proc, argv, name)
            for field_name, value in kept.items():
                error.detail.setdefault(field_name, value)
            raise error
        (tmp / "argv.txt").write_text("\n".join(argv) + "\n")
        if final is None or not build_seal.write_index(tmp, key, output):
            _scratch_built[key] = Compiled(tmp, True, 0.0, tuple(argv), output)
            return Compiled(tmp, False, seconds, tuple(argv), output, note)
        try:
            os.rename(tmp, final)
        except OSError:          # another worker finished the same entry first: use theirs
            if entry_problem(final, key, output) is not None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        return Compiled(final, False, seconds, tuple(argv), output, note)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _key(mlir: str, flags: Sequence[str], output: str, tool: Optional[str]) -> str:
    return cache_key(mlir, [*flags, f"-o={output}"] if output != VMFB else flags, tool)


BATCHED = "batched"
_DEFINED_SYMBOL = re.compile(r"^\s*(?:func\.func|util\.func|util\.global|ml_program\.global)\s+"
                             r"(?:(?:public|private|nested)\s+)*@([\w$.]+)", re.M)
_DEFINED_ALIAS = re.compile(r"^([!#][\w$.]+)\s*=", re.M)
_SYMBOL_USE = re.compile(r"@([\w$.]+)")
_ALIAS_USE = re.compile(r"[!#][\w$.]+")


def _renamed(mlir: str, symbols: Mapping[str, str], aliases: Mapping[str, str]) -> str:
    if symbols:
        mlir = _SYMBOL_USE.sub(lambda m: "@" + symbols.get(m.group(1), m.group(1)), mlir)
    if aliases:
        mlir = _ALIAS_USE.sub(lambda m: aliases.get(m.group(0), m.group(0)), mlir)
    return mlir


def merge_programs(texts: Sequence[str]) -> Optional[tuple[str, list[tuple[dict, dict]]]]:
    """One module text holding every program's functions, and per program its renamed symbols and
    type aliases; None when a program is not a list of top-level ops (a ``module`` of its own)."""
    parts: list[str] = []
    renames: list = []
    taken_symbols: set[str] = set()
    taken_aliases: set[str] = set()
    for i, text in enumerate(texts):
        if re.search(r"^\s*module\b", text, re.M):
            return None
        symbols = _DEFINED_SYMBOL.findall(text)
        aliases = _DEFINED_ALIAS.findall(text)
        sym_map = {s: f"b{i}_{s}" for s in symbols} if taken_symbols & set(symbols) else {}
        alias_map = {a: f"{a[0]}b{i}_{a[1:]}" for a in aliases} if taken_aliases & set(aliases) else {}
        parts.append(_renamed(text, sym_map, alias_map))
        renames.append((sym_map, alias_map))
        taken_symbols |= {sym_map.get(s, s) for s in symbols}
        taken_aliases |= {alias_map.get(a, a) for a in aliases}
    return "\n".join(parts), renames


def compile_batch(texts: Sequence[str], flags: Sequence[str], *, timeout_s: float = 600.0,
                  name: str = "batch", output: str = VMFB, shared_files: bool = False) -> Optional[Compiled]:
    """Compile the programs not yet cached in one ``iree-compile`` run and link each to the batch's
    entry, so that ``compile_cached`` of any of them is a hit; returns the batch's entry (None when
    fewer than two needed compiling). A flag naming a file of the output folder (``{out}``: a
    static library, dumped executables) makes those files hold every program's dispatches: such
    programs are batched only when the caller says that is what it wants (``shared_files``: the
    steps of one plan, which run together). A failing batch raises as ``compile_cached`` does; the
    caller may then compile one by one to name the program at fault."""
    if (any("{out}" in f for f in flags) and not shared_files) or availability() or build_seal.secret() is None:
        return None
    root = cache_root()
    if not keeps(root):
        return None
    with harness_files.writing(f"IREE compile cache {root}"), contextlib.ExitStack() as held:
        todo = []
        for text in dict.fromkeys(texts):
            key = _key(text, flags, output, None)
            # A program someone else is building is theirs: its case waits for it (compile_cached).
            # Nothing is claimed for a program the cache holds already (in a batch too).
            if not _held(root, key, text, output) and held.enter_context(claim(root, key, wait_s=None)) \
                    and not _held(root, key, text, output):
                todo.append(text)
        merged = merge_programs(todo) if len(todo) > 1 else None
        if merged is None:
            return None
        text, renames = merged
        batch = compile_cached(text, flags, timeout_s=timeout_s, name=f"{name} ({len(todo)} programs)", output=output)
        for program, (symbols, aliases) in zip(todo, renames):
            doc = {"format": 1, "batch": batch.dir.name, "output": output, "symbols": symbols, "aliases": aliases}
            if batch.dir.parent == root:
                write_atomic(root / BATCHED / f"{_key(program, flags, output, None)}.json", json.dumps(doc) + "\n")
        return batch


def claim_wait(bound_s: float) -> float:
    """How long a build waits for another's claim: within ``bound_s`` and, in a case, half of
    what is left of the case's bound, so that the build done unclaimed after it still fits
    (core/case_bound.py): a claim held by a process that never finishes is never the case's HANG."""
    left = case_bound.left()
    return bound_s if left is None else min(bound_s, left / 2)


def said_unclaimed(root: Path, key: str) -> None:
    """Name the claim a build stopped waiting for, and its holder."""
    from accel_regress.golden import store_folder
    try:    # never a planted link, never a blocking read (store_folder.read_in)
        with store_folder.Fd(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)) as dirfd:
            holder = store_folder.read_in(dirfd, f".claim-{key}").decode(errors="replace").strip()[:16] or "?"
    except OSError:
        holder = "?"
    print(f"accel-regress: the claim {root / f'.claim-{key}'} is held by another process (pid {holder}) longer "
          "than this case can wait: building it unclaimed", file=sys.stderr)


def _shared() -> bool:
    from accel_regress.golden import store
    return store.shared()


_states: dict[Path, tuple[bool, bool]] = {}       # folder -> (entries may be read, builds may be kept)


def _state(root: Path) -> tuple[bool, bool]:
    """Whether entries in ``root`` may be read and builds kept there: only in a folder of this
    user's (unless the golden store is declared shared), never a planted link
    (hardware/core/own_folder.py); a folder that cannot be written (a read-only mount, a restored
    copy) is read, its signed entries used as they are. Asked once per process and folder; one
    that cannot keep builds is said once (a setup line, never a case's verdict), and what is
    built goes to ``scratch()``."""
    if root not in _states:
        try:
            own_folder.own_subdir(root.parent, root.name, shared=_shared())
            _states[root] = (True, os.access(root, os.W_OK))
            why = "it cannot be written"
        except own_folder.Refused as exc:
            _states[root], why = (False, False), exc.strerror or str(exc)
        except OSError as exc:      # cannot be made: a read-only root
            real = root.is_dir() and not root.is_symlink()
            _states[root], why = (real, False), exc.strerror or str(exc)
        if _states[root][1]:
            sweep_stale(root)
        if _states[root] == (True, False):
            build_seal.note_once(f"cache folder {root} is read-only ({why}): its signed entries are used as they "
                                 "are; what it lacks is built for this session in a temporary folder")
        elif not _states[root][0]:
            build_seal.note_once(f"cache folder {root} is not used ({why}): this session builds into a "
                                 "temporary folder")
    return _states[root]


# A build's temporary folder (".<key[:16]>-<random>") or a discarded entry's (".bad-..."), left
# by a process killed before it renamed or removed it. One whose key's claim no one holds and
# that nothing wrote into for this long is no one's: a live build holds its claim (or, unclaimed
# past another's claim, writes its outputs within its compile's bound, 600 s at most).
STALE_S = 1800
_TEMP = re.compile(r"\.(?:bad-)?([0-9a-f]{16})-[\w]+")


def sweep_stale(root: Path, *, older_than_s: float = STALE_S) -> list[str]:
    """Remove the temporary folders of builds killed mid-way from ``root``; the names removed."""
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    claims = [n[len(".claim-"):] for n in names if n.startswith(".claim-")]
    now = time.time()
    for name in names:
        m = _TEMP.fullmatch(name)
        if not m:
            continue
        path = root / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or now - st.st_mtime < older_than_s:
            continue
        if any(key.startswith(m.group(1)) and _claim_held(root, key) for key in claims):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def _claim_held(root: Path, key: str) -> bool:
    if fcntl is None:
        return True
    try:
        fd = os.open(root / f".claim-{key}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def reads(root: Path) -> bool:
    return _state(root)[0]


def keeps(root: Path) -> bool:
    return _state(root)[1]


@contextlib.contextmanager
def claim(root: Path, key: str, *, wait_s: Optional[float]) -> Iterator[bool]:
    """Hold the claim to build entry ``key`` under ``root`` while the block runs: True when held.
    ``wait_s`` None: do not wait (False at once when another holds it); else wait at most that
    long, then go on unclaimed (False: a duplicate compile at worst, never a stall past the
    bound). The claim is a lock on ``.claim-<key>``, removed by its holder when done, so an idle
    cache holds entries only. It is opened with O_NOFOLLOW in a folder ``keeps`` accepted: a
    symbolic link planted as a claim is removed, never written through (the golden store's locks:
    golden/store_folder.py ``open_in``)."""
    if fcntl is None:
        yield True
        return
    from accel_regress.golden import store_folder
    name = f".claim-{key}"
    if not keeps(root):
        yield False
        return
    dirfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + (wait_s or 0.0)
        planted = 0
        while True:
            try:
                fd = store_folder.open_in(dirfd, name, os.O_RDWR | os.O_CREAT, _shared())
            except store_folder.PlantedLink:
                planted += 1
                build_seal.note_once(f"a symbolic link planted as the claim {root / name} was removed "
                                     "(its target was not touched)")
                if planted > 3:
                    raise
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                # Past the bound, or a compile-ahead thread the session told to stop: go on unclaimed.
                if wait_s is None or time.monotonic() >= deadline or children.told_to_stop():
                    yield False
                    return
                time.sleep(0.05)
                continue
            try:
                current = os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:
                try:
                    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)     # who holds it, for a waiter's message
                except OSError:     # a full root: no claim left behind held (every waiter would wait it out)
                    os.unlink(name, dir_fd=dirfd)
                    os.close(fd)
                    raise
                break
            os.close(fd)        # its holder removed it between our open and our lock: claim the new one
        try:
            yield True
        finally:
            try:
                os.unlink(name, dir_fd=dirfd)
            except FileNotFoundError:
                pass
            os.close(fd)
    finally:
        os.close(dirfd)


def _held(root: Path, key: str, mlir: str, output: str) -> bool:
    return (root / key).is_dir() or _batched(root, key, mlir, output) is not None


def present(mlir: str, flags: Sequence[str], output: str = VMFB) -> bool:
    """Whether the cache has an entry or a batch link for the program (not verified: a reader
    verifies what it reads)."""
    root = cache_root()
    key = _key(mlir, flags, output, None)
    return (root / key).is_dir() or (root / BATCHED / f"{key}.json").is_file()


_batch_sources: dict[Path, str] = {}


def _batched(root: Path, key: str, mlir: str, output: str, said: Optional[list] = None) -> Optional[Compiled]:
    """The batch entry that holds this program, when a link to it exists, names a whole entry and
    that entry's source holds the program's text under the link's names; else None. ``said``
    given: a batch that does not verify is discarded with the note (appended to it) that an entry
    of the program's own would get, and the link with it (issue 47 defect 12)."""
    link = root / BATCHED / f"{key}.json"
    if not link.is_file():
        return None
    try:
        doc = json.loads(link.read_text())
        batch, symbols, aliases = doc["batch"], doc["symbols"], doc["aliases"]
        names = [*symbols.items(), *aliases.items()]
        if (doc.get("format") != 1 or doc.get("output") != output or not re.fullmatch(r"[0-9a-f]{64}", batch)
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in names)):
            return None
        folder = root / batch
        problem = entry_problem(folder, batch, output)
        if problem is not None:
            if said is not None:
                if folder.exists():          # else discarded already (through another program's link)
                    said.append(rejected(folder, problem, "IREE compile cache (a batch)"))
                with contextlib.suppress(OSError):
                    link.unlink()
            return None
        if folder not in _batch_sources:
            _batch_sources[folder] = (folder / "program.mlir").read_text()
        if _renamed(mlir, symbols, aliases) not in _batch_sources[folder]:
            return None
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return None
    return Compiled(folder, True, 0.0, (), output, symbols=tuple(sorted(symbols.items())))


INDEX = build_seal.INDEX
_verified = build_seal._verified     # entries already checked in this process


def entry_problem(folder: Path, key: str, output: str) -> Optional[str]:
    """None when the entry's index validates, is signed with this machine's key
    (hardware/core/build_seal.py) and every file it lists matches; else what is wrong."""
    return build_seal.entry_problem(folder, key, output)


def _discard(folder: Path) -> None:
    """Move a bad entry aside (one rename: no reader sees it half removed), then remove it."""
    try:
        aside = Path(tempfile.mkdtemp(prefix=f".bad-{folder.name[:16]}-", dir=folder.parent))
    except OSError:
        return            # a read-only root: the entry stays, never used
    try:
        os.rename(folder, aside / "entry")
    except OSError:
        pass              # another process discarded it first
    shutil.rmtree(aside, ignore_errors=True)


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
