"""Files written whole or not at all: a temp file in the same folder, then a rename.

The temp file is created 0600 (mkstemp); before the rename it gets the mode a plain ``open(path,
"w")`` would give (0666 less the umask: 0644 usually), so the CI uploader and colleagues can read it.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path


def _umask() -> int:
    try:   # Linux: read without changing it (os.umask would, for every thread, for a moment)
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_file(path: Path, binary: bool = False):
    """``with atomic_file(p) as f: f.write(...)``: ``p`` appears whole when the block ends, or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb" if binary else "w") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, text: str) -> None:
    with atomic_file(path) as f:
        f.write(text)


def copy_atomic(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` with its mode bits."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        shutil.copymode(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic_bytes(path: Path, data: bytes) -> None:
    with atomic_file(path, binary=True) as f:
        f.write(data)
