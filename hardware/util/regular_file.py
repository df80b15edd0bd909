"""Reading a file the suite did not write itself: only a regular file, and never more than a bound.

In place of a results file, a policy, an expectations file or a golden manifest a FIFO would block
``open()`` forever (a reader waits for a writer), and a symlink to /dev/zero or /dev/urandom would
be read until memory runs out. So: open without blocking, ``fstat`` the descriptor (what was
opened, not the path: no race with a rename), require a regular file, read at most the bound plus
one byte (a file that grew past the bound is refused, not cut).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISDIR, "is a directory, not a file"), (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
          (stat.S_ISCHR, "is a character device, not a regular file"),
          (stat.S_ISBLK, "is a block device, not a regular file"), (stat.S_ISSOCK, "is a socket, not a regular file"))


class Refused(OSError):
    """Not a regular file, or larger than the bound: the message says which."""


def read_bytes(path, limit: int) -> bytes:
    """The bytes of ``path`` (symlinks followed to what they name), at most ``limit`` of them."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            why = next((w for test, w in _KINDS if test(mode)), "is not a regular file")
            raise Refused(f"{path}: {why}; refused")
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Refused(f"{path}: more than the {limit} bytes this tool reads; refused")
        return data
    finally:
        os.close(fd)


def read_text(path, limit: int) -> str:
    """``read_bytes`` decoded as UTF-8 (a UnicodeDecodeError for anything else)."""
    return read_bytes(path, limit).decode("utf-8")
