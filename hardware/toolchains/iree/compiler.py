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

Every entry carries ``index.json`` (schema hardware/util/schemas/iree-cache-entry.schema.json): the
key, the output's name and the size and sha256 of every file, written inside the temporary folder
before the rename. A hit is trusted only once its index validates and every file matches it
(checked once per process and entry); an entry that does not (truncated, corrupted, from an
older suite without an index, a file name that leaves the folder) is moved aside, removed and
rebuilt, with a note on stderr and in ``Compiled.note``.

The cache lives in ``$ACCEL_IREE_CACHE``, else ``$XDG_CACHE_HOME/accel-regress/iree`` (default
``~/.cache/accel-regress/iree``): outside the checkout, so a runner keeps it across clones and
checkouts, and never inside an installed package. Its key holds everything that decides the
output, so checkouts and processes can share it. A failed
compile is not cached: it raises ``accel_regress.CompileError`` with the compiler's diagnostic in
``detail['diagnostic']``; a compile that outlives its bound raises ``accel_regress.Hang`` at stage
``compile``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

from accel_regress.util import schemas
from accel_regress.util.atomic import write_atomic
from accel_regress.util.derived_cache import user_cache
from accel_regress.core.errors import CompileError, Hang
from accel_regress.util.paths import PathRefused, member_path

PIP_HINT = "pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0"
VMFB = "module.vmfb"
DIAGNOSTIC_CHARS = 20000


def cache_root() -> Path:
    env = os.environ.get("ACCEL_IREE_CACHE")
    if env:
        return Path(env)
    return user_cache("iree")


@lru_cache(maxsize=1)
def tool_path() -> Optional[str]:
    """The ``iree-compile`` executable shipped inside the wheel (None when the wheel is missing)."""
    try:
        from iree.compiler.tools import binaries
        path = binaries.find_tool("iree-compile")
    except Exception:
        return shutil.which("iree-compile")
    return str(path) if path else None


def availability() -> Optional[str]:
    if tool_path() is None:
        return f"iree-compile not found (the iree-base-compiler wheel is not installed): {PIP_HINT}"
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
    h = hashlib.sha256()
    for part in (ENTRY_FORMAT, compiler_version(tool), "\0".join(flags), mlir):
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
    """
    if tool is None:
        reason = availability()
        if reason:
            raise CompileError(reason, detail={"diagnostic": reason})
    key = cache_key(mlir, [*flags, f"-o={output}"] if output != VMFB else flags, tool)
    final = (root or cache_root()) / key
    note = ""
    if final.exists():
        problem = entry_problem(final, key, output)
        if problem is None:
            return Compiled(final, True, 0.0, (), output)
        note = f"IREE compile cache: discarded entry {final} ({problem}); rebuilt it"
        _discard(final)
        print(f"accel-regress: {note}", file=sys.stderr)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}-", dir=final.parent))
    try:
        src = tmp / "program.mlir"
        src.write_text(mlir)
        argv = [tool or tool_path(), str(src), *(f.replace("{out}", str(tmp)) for f in flags), "-o", str(tmp / output)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise Hang(f"{Path(argv[0]).name} did not finish within {timeout_s:.0f} s ({name})", stage="compile",
                       detail={"argv": " ".join(argv), "diagnostic": _text(exc.stderr)[-DIAGNOSTIC_CHARS:]}) from None
        seconds = time.perf_counter() - start
        if proc.returncode != 0 or not (tmp / output).is_file():
            raise on_error(proc, argv, name)
        (tmp / "argv.txt").write_text("\n".join(argv) + "\n")
        _write_index(tmp, key, output)
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


INDEX = "index.json"
_verified: set[tuple] = set()      # (entry, index mtime) already checked in this process


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _write_index(folder: Path, key: str, output: str) -> None:
    files = {p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}
    write_atomic(folder / INDEX, json.dumps({"key": key, "output": output, "files": files}, indent=1) + "\n")


def entry_problem(folder: Path, key: str, output: str) -> Optional[str]:
    """None when the entry's index validates and every file it lists matches; else what is wrong."""
    index = folder / INDEX
    try:
        stamp = (str(folder), index.stat().st_mtime_ns)
    except OSError:
        return "no index.json (an unfinished entry or one from an older suite)"
    if stamp in _verified:
        return None
    try:
        doc = schemas.load_json(index, "iree-cache-entry")
    except schemas.InputError as exc:
        return str(exc)
    if doc["key"] != key or doc["output"] != output or output not in doc["files"]:
        return f"index.json describes another entry (key {doc['key'][:12]}..., output {doc['output']!r})"
    for name, want in doc["files"].items():
        try:
            path = member_path(folder, name)
            if path.stat().st_size != want["size"] or _sha256(path) != want["sha256"]:
                return f"{name} does not match its checksum (truncated or corrupted)"
        except (PathRefused, OSError) as exc:
            return f"{name}: {exc}"
    _verified.add(stamp)
    return None


def _discard(folder: Path) -> None:
    """Move a bad entry aside (one rename: no reader sees it half removed), then remove it."""
    aside = Path(tempfile.mkdtemp(prefix=f".bad-{folder.name[:16]}-", dir=folder.parent))
    try:
        os.rename(folder, aside / "entry")
    except OSError:
        pass              # another process discarded it first
    shutil.rmtree(aside, ignore_errors=True)


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
