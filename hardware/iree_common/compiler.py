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

The cache lives in ``$ACCEL_IREE_CACHE``, else ``$XDG_CACHE_HOME/accel-regress/iree`` (default
``~/.cache/accel-regress/iree``): outside the checkout, so a runner keeps it across clones and
checkouts, and never inside an installed package. Its key holds everything that decides the
output, so checkouts and processes can share it. A failed
compile is not cached: it raises ``hardware.CompileError`` with the compiler's diagnostic in
``detail['diagnostic']``; a compile that outlives its bound raises ``hardware.Hang`` at stage
``compile``.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

from hardware.errors import CompileError, Hang

PIP_HINT = "pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0"
VMFB = "module.vmfb"
DIAGNOSTIC_CHARS = 20000


def cache_root() -> Path:
    env = os.environ.get("ACCEL_IREE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "accel-regress" / "iree"


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


def cache_key(mlir: str, flags: Sequence[str], tool: Optional[str] = None) -> str:
    h = hashlib.sha256()
    for part in (compiler_version(tool), "\0".join(flags), mlir):
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
    if (final / output).is_file():
        return Compiled(final, True, 0.0, (), output)
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
        try:
            os.rename(tmp, final)
        except OSError:          # another worker finished the same entry first: use theirs
            if not (final / output).is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        return Compiled(final, False, seconds, tuple(argv), output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _text(data) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data
