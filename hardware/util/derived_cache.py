"""A small on-disk cache of files derived from content (a heatmap PNG, the RVV scan of a compile's
assembly), keyed by a digest of everything the file depends on, so it is never stale: a changed
input is a new key. In ``$<ENV>``, else ``<cache root>/<name>`` (``cache_root()``); the ``max_files`` most recently used files are kept. Best
effort: a cache that cannot be read or written costs the next run the work, never an error."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from accel_regress.util.atomic import copy_atomic, write_atomic_bytes


CACHE_ROOT_ENV = "ACCEL_CACHE_DIR"


def cache_root() -> Path:
    """The one folder every cache of the suite lives under (hardware/cache_cli.py lists them):
    ``$ACCEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/accel-regress``, else ``~/.cache/accel-regress``.
    A CI job keeps it between jobs by restoring this one folder."""
    env = os.environ.get(CACHE_ROOT_ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "accel-regress"


def user_cache(name: str) -> Path:
    """``<cache root>/<name>``."""
    return cache_root() / name


class DerivedCache:
    def __init__(self, name: str, env: str, suffix: str, max_files: int):
        self.name, self.env, self.suffix, self.max_files = name, env, suffix, max_files

    def root(self) -> Path:
        env = os.environ.get(self.env)
        return Path(env) if env else user_cache(self.name)

    def path(self, key: str) -> Path:
        return self.root() / f"{key}{self.suffix}"

    def read(self, key: str) -> Optional[bytes]:
        try:
            path = self.path(key)
            data = path.read_bytes()
            os.utime(path)                      # least recently used goes first
            return data
        except OSError:
            return None

    def copy_to(self, key: str, dst: Path) -> bool:
        """The cached file copied (atomically) to ``dst``; False when there is none."""
        try:
            path = self.path(key)
            copy_atomic(path, Path(dst))
            os.utime(path)
            return True
        except OSError:
            return False

    def write(self, key: str, data: bytes) -> None:
        try:
            write_atomic_bytes(self.path(key), data)
            self._bound()
        except OSError:
            pass

    def keep(self, key: str, src: Path) -> None:
        try:
            copy_atomic(Path(src), self.path(key))
            self._bound()
        except OSError:
            pass

    def _bound(self) -> None:
        kept = []
        for p in self.root().glob(f"*{self.suffix}"):
            try:
                kept.append((p.stat().st_mtime, p))
            except OSError:
                continue
        kept.sort()
        for _, old in kept[:max(0, len(kept) - self.max_files)]:
            old.unlink(missing_ok=True)
