"""Paths named inside files the suite reads (a results file's heatmap, a cache index's files) are
untrusted: they may only name a regular file under the naming file's own folder."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any


class PathRefused(ValueError):
    """A path in a file names something outside its folder, a symlink, or no regular file."""


def member_path(folder: Path, rel: Any) -> Path:
    """The file a file names by ``rel``, which must lie under that file's own folder.

    A results file (or a cache index) travels between machines and gets published, so a path in it is untrusted: an
    absolute path, a ``..`` step or any symlink on the way is refused (never followed), and the
    target must be a regular file. Raises PathRefused saying why.
    """
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise PathRefused(f"path {rel!r} is not a relative file name")
    parts = [p for p in Path(rel).parts if p != "."]
    if not parts or Path(rel).is_absolute() or "\\" in rel or any(p == ".." for p in parts):
        raise PathRefused(f"path {rel!r} leaves {folder} (absolute or '..'); refused")
    here = Path(folder)
    for part in parts:
        here = here / part
        try:
            st = os.lstat(here)
        except OSError as exc:
            raise PathRefused(f"path {rel!r}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise PathRefused(f"path {rel!r}: {here} is a symlink; refused")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"path {rel!r} is not a regular file; refused")
    return here


def read_member(folder: Path, rel: Any) -> bytes:
    """The bytes of ``member_path(folder, rel)``, opened without following a last-moment symlink."""
    path = member_path(folder, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise PathRefused(f"path {rel!r}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        return f.read()
