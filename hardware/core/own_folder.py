"""A folder the suite writes into or clears, inside one it was given (the cache root's ``iree/``,
``qemu-rvv/``, ``mesa-shader-cache/``; the report folder's ``failures/``, ``heatmaps/``,
``arrays/``): never entered through a symbolic link, never another user's, the golden store's
rule (golden/store_folder.py ``subdir``: opened with O_NOFOLLOW, a planted link removed, never its
target). Without it a link planted there (a restored CI cache, a report folder others can write)
turns the suite's writes and its clearing of old files into writes and deletions wherever the
link points (issue 47 S2).
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from accel_regress.golden import store_folder


class Refused(OSError):
    """The folder is a symbolic link (removed) or another user's."""


def own_subdir(parent: Path, name: str, *, shared: bool = False) -> Path:
    """``parent / name``, made when absent (with the umask's mode: a report folder's files stay
    readable by the CI uploader); raises ``Refused`` when it is a symbolic link (removed) or,
    unless ``shared``, another user's, another OSError when it cannot be made."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    with store_folder.Fd(os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)) as top:
        try:
            os.mkdir(name, 0o777, dir_fd=top)
            made = None
        except OSError as exc:      # there already (or a link), or a folder that cannot be written
            made = exc
        try:
            fd = store_folder.subdir(top, name, create=False)
        except store_folder.PlantedLink:
            raise Refused(errno.ELOOP, f"{parent / name} was a symbolic link (removed; its target was not touched): "
                          "refused", str(parent / name)) from None
        if fd is None:
            raise made or FileNotFoundError(errno.ENOENT, "vanished", str(parent / name))
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
    if not shared and st.st_uid != os.geteuid():
        raise Refused(errno.EPERM, f"{parent / name} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}): "
                      "whoever owns it decides what the suite would write there; refused", str(parent / name))
    return parent / name
