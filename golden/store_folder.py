"""The golden store's folder (golden/store.py): private, and never entered through a link.

The folder is created 0700 and refused (``GoldenStoreError``) when another user owns it or others
can write it, as ssh refuses a key file, unless the caller says it is shared. Inside it every
folder and file is opened relative to its parent's descriptor with O_NOFOLLOW: a symbolic link
where the store keeps something was planted, so it is removed (the link, never its target) and
reported as ``PlantedLink``. The signing key (golden/store.py) gets the same checks.
"""
from __future__ import annotations

import errno
import fcntl
import os
import secrets
import shutil
import stat
import time
from pathlib import Path
from typing import Iterator, Optional

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
MANIFEST = "manifest.json"


class GoldenStoreError(Exception):
    """The store (or its signing key) is not private and was not declared shared."""


class PlantedLink(OSError):
    """A symbolic link where the store keeps a file or folder; the link has been removed."""


def _modes(shared: bool) -> tuple[int, int]:
    return (0o770, 0o660) if shared else (0o700, 0o600)


def loose(st: os.stat_result, what: str, path, shared: bool) -> Optional[str]:
    """Why the folder or file at ``path`` is not private, or None. A shared one may be owned by
    another member and written by others: the user said so."""
    if shared:
        return None
    if st.st_uid != os.geteuid():
        return f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022:
        return f"{what} {path} is group- or world-writable (mode {mode:04o})"
    return None


def refuse(why: str, fix: str) -> GoldenStoreError:
    return GoldenStoreError(
        f"golden store refused: {why}. Anyone who can write it can make a broken device PASS. "
        f"{fix}, or declare it shared (--golden-cache-shared, $ACCEL_GOLDEN_CACHE_SHARED=1), or run "
        "with --no-golden-cache")


class Fd:
    """A descriptor, closed on exit."""

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *exc) -> None:
        os.close(self.fd)


def open_root(path: Path, shared: bool) -> Fd:
    """The store's folder, created private when absent; refused when not private."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, _modes(shared)[0])
        except FileExistsError:
            pass
        fd = os.open(path, flags)
    why = loose(os.fstat(fd), "its folder", path, shared)
    if why:
        os.close(fd)
        raise refuse(why, f"Make it private (chmod 700 {path}, owned by you)")
    return Fd(fd)


def _planted(parent: int, name: str) -> PlantedLink:
    try:
        os.unlink(name, dir_fd=parent)
    except OSError:
        pass
    return PlantedLink(errno.ELOOP, "a symbolic link inside the store (removed; its target was not touched)", name)


def subdir(parent: int, name: str, *, create: bool, shared: bool = False) -> Optional[int]:
    """Descriptor of folder ``name`` in ``parent`` (made when ``create``), never through a link;
    None when absent."""
    if create:
        try:
            os.mkdir(name, _modes(shared)[0], dir_fd=parent)
        except FileExistsError:
            pass
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:           # a link: ELOOP, or ENOTDIR where O_DIRECTORY is checked first
        if exc.errno == errno.ELOOP or stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise _planted(parent, name) from None
        raise


def open_in(parent: int, name: str, flags: int, shared: bool = False) -> int:
    """File ``name`` in ``parent``, never through a link."""
    try:
        return os.open(name, flags | _NOFOLLOW, _modes(shared)[1], dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _planted(parent, name) from None
        raise


def read_in(parent: int, name: str) -> bytes:
    # Without blocking, and a regular file only: a FIFO planted there would block the read forever.
    with os.fdopen(open_in(parent, name, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(errno.EINVAL, f"{name}: not a regular file")
        return f.read()


def make_temp(parent: int, prefix: str, shared: bool) -> str:
    name = f".{prefix}-{os.getpid()}-{secrets.token_hex(4)}"
    os.mkdir(name, _modes(shared)[0], dir_fd=parent)
    return name


class Locked:
    """The lock file ``locks/<name>``, held for the block and then removed, so that locks/ does
    not grow by one file per golden. Raises OSError (PlantedLink included) when it cannot lock.

    A process already waiting on the removed file gets it next and then finds the entry written;
    one that arrives later finds the entry before it locks. Only when the computation failed can
    two processes compute at once (each on its own lock file): the entry's rename keeps one."""

    def __init__(self, top: int, name: str, shared: bool):
        self.top, self.name, self.shared = top, name, shared

    def __enter__(self) -> "Locked":
        self.dir = subdir(self.top, "locks", create=True, shared=self.shared)
        try:
            self.fd = open_in(self.dir, self.name, os.O_RDWR | os.O_CREAT, self.shared)
        except OSError:
            os.close(self.dir)
            raise
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        try:
            os.unlink(self.name, dir_fd=self.dir)
        except OSError:
            pass
        os.close(self.fd)
        os.close(self.dir)


def remove_in(parent: int, name: str) -> None:
    """Rename away first so no reader sees a half-deleted entry; a link is unlinked, never followed."""
    trash = f".trash-{name[:16]}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(name, trash, src_dir_fd=parent, dst_dir_fd=parent)
    except OSError:
        return
    try:
        if stat.S_ISLNK(os.stat(trash, dir_fd=parent, follow_symlinks=False).st_mode):
            os.unlink(trash, dir_fd=parent)
        else:
            shutil.rmtree(trash, ignore_errors=True, dir_fd=parent)
    except OSError:
        pass


def walk(top: int) -> Iterator[tuple[str, str, float, int]]:
    """(shard, key, last use, bytes) of every whole entry ``<shard>/<key>/``, without following a link."""
    with os.scandir(top) as it:
        shards = [e.name for e in it if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
    for name in shards:
        try:
            shard = subdir(top, name, create=False)
        except OSError:
            continue
        if shard is None:
            continue
        try:
            with os.scandir(shard) as it:
                keys = [e.name for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
            for key in keys:
                try:
                    folder = subdir(shard, key, create=False)
                except OSError:
                    continue
                if folder is None:
                    continue
                try:
                    st = os.stat(MANIFEST, dir_fd=folder, follow_symlinks=False)
                    with os.scandir(folder) as it:
                        size = sum(e.stat(follow_symlinks=False).st_size for e in it)
                except OSError:
                    continue
                finally:
                    os.close(folder)
                yield name, key, st.st_mtime, size
        finally:
            os.close(shard)


def signing_key(path: Path, shared: bool) -> bytes:
    """The secret at ``path`` (32 random bytes, made on first use); refused when others can
    write it, or, for a private store, read it."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        wfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        try:
            os.write(wfd, secrets.token_bytes(32))
        finally:
            os.close(wfd)
        try:
            os.link(tmp, path)       # whole or absent: a racing process keeps the first key
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    try:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        why = loose(st, "its signing key", path, shared)
        if why is None and not shared and mode & 0o077:
            why = f"its signing key {path} is readable by others (mode {mode:04o})"
        if why is None and shared and mode & 0o002:
            why = f"its signing key {path} is world-writable (mode {mode:04o})"
        if why:
            raise refuse(why, f"Make the key private (chmod 600 {path})")
        secret = os.read(fd, 4096)
    finally:
        os.close(fd)
    if len(secret) < 16:
        raise refuse(f"its signing key {path} holds {len(secret)} bytes", f"Remove {path} (a new one is made)")
    return secret
