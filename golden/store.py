"""The golden store: inputs, references and tolerances computed once and kept, keyed by content.

``cached(kind, case, fn)`` returns ``fn()``, computing it only when neither this process's memo
nor the on-disk store has the entry. The key is a sha256 of the generator version (the source of
the golden package and the numpy / ml_dtypes / torch versions that compute goldens), the kind,
the case's op, id and parameters, and its seed: an edit to golden/ or an upgrade is a cold store,
never a stale golden.

On disk an entry is a folder ``<root>/<key[:2]>/<key>/`` of ``.npy`` files (loaded with
``allow_pickle=False``) and a ``manifest.json`` holding the value's structure (dicts, tuples,
lists, scalars, golden's own dataclasses such as ErrorModel) and each array's dtype, shape and
sha256. The folder is built under a temporary name and renamed into place, so a reader (another
process, an xdist worker) sees a whole entry or none; a per-key lock file keeps two processes from computing the same golden twice. A
corrupt or truncated entry fails its checksum, is reported once (``GoldenStoreWarning`` and
``problems``), deleted and recomputed: it never fails a case.

The store is bounded (``MAX_BYTES``, ``$ACCEL_GOLDEN_CACHE_BYTES``): the least recently used
entries (a hit touches the manifest) are evicted. A process walks the store once, at its first
write, and then counts what it writes; it walks again only when that count passes the bound, so a
write costs no walk of a store of thousands of entries (another process's writes are seen at the
next walk: the bound can be passed by what other processes wrote meanwhile, never for long). Values that compute in under
``MIN_SECONDS`` are not written, since reading them back would cost more than computing them;
within a process they are still memoized, so each configuration is computed once per session
whatever order pytest runs the items in.

Root: ``$ACCEL_GOLDEN_CACHE``, else ``$XDG_CACHE_HOME/accel-regress/golden``, else
``~/.cache/accel-regress/golden``. ``configure(enabled=False)`` (pytest ``--no-golden-cache``)
bypasses the disk store.
"""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
import warnings
from collections import OrderedDict
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np


FORMAT = 1
MAX_BYTES = 16 << 30                 # on disk
MEMO_BYTES = 1 << 30                 # in this process
MIN_SECONDS = 0.02                   # cheaper goldens are recomputed, not read back
MANIFEST = "manifest.json"
MANIFEST_MAX_BYTES = 1 << 20         # a manifest lists a few arrays: ~1 KB
_GOLDEN_DIR = Path(__file__).resolve().parent
_FAMILIES_DIR = _GOLDEN_DIR.parent / "families"     # the built-in families' golden modules
# The packages whose dataclasses a manifest may name: golden's own and the built-in families'.
_GOLDEN_PACKAGES = ("accel_regress.golden.", "accel_regress.families.")
# Modules of golden/ that compute nothing a golden holds: editing them keeps the store warm.
_NOT_GENERATORS = {"compare.py", "store.py", "__init__.py"}


class GoldenStoreWarning(UserWarning):
    """An entry of the golden store was unreadable and has been recomputed."""


class _Settings:
    enabled = True
    root: Optional[Path] = None


_settings = _Settings()
_memo: "OrderedDict[str, tuple[Any, int]]" = OrderedDict()
_memo_bytes = 0
_stored_bytes: Optional[int] = None  # the store's size as this process last walked it, plus its writes
problems: list[str] = []            # what was reported this process, once per entry
stats = {"memo_hits": 0, "disk_hits": 0, "computed": 0, "written": 0, "evicted": 0, "corrupt": 0}


def default_root() -> Path:
    env = os.environ.get("ACCEL_GOLDEN_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "accel-regress" / "golden"


def configure(*, enabled: bool = True, root: Optional[Path] = None) -> None:
    """Set where the store lives and whether the disk is used; clears this process's memo."""
    _settings.enabled = enabled
    _settings.root = Path(root) if root else None
    clear_memo()


def root() -> Path:
    return _settings.root or default_root()


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def max_bytes() -> int:
    """The store's bound: $ACCEL_GOLDEN_CACHE_BYTES (bytes, or with K/M/G/T), else MAX_BYTES. A
    value that is not a positive size is a ValueError (the plugin's usage error), never a silent
    default (``abc``, ``1e3``) nor a negative bound."""
    env = os.environ.get("ACCEL_GOLDEN_CACHE_BYTES")
    if env is None:
        return MAX_BYTES
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", env, re.IGNORECASE)
    value = int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()] if m else None
    if not value:
        raise ValueError(f"$ACCEL_GOLDEN_CACHE_BYTES={env!r}: not a positive size in bytes (e.g. 16G)")
    return value


def clear_memo() -> None:
    global _memo_bytes, _stored_bytes
    _memo.clear()
    _memo_bytes = 0
    _stored_bytes = None


@lru_cache(maxsize=1)
def generator_version() -> str:
    """Digest of what makes a golden: golden/'s and the families' sources and the numeric libraries."""
    h = hashlib.sha256(f"format {FORMAT}".encode())
    for path in sorted(_GOLDEN_DIR.glob("*.py")):
        if path.name not in _NOT_GENERATORS:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for path in sorted(_FAMILIES_DIR.glob("*/*.py")):
        h.update(path.relative_to(_FAMILIES_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in ("numpy", "ml_dtypes", "torch"):
        try:
            h.update(f"{dist}={metadata.version(dist)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=none\0".encode())
    return h.hexdigest()


def key_of(kind: str, case) -> str:
    blob = json.dumps({"version": generator_version(), "kind": kind, "op": case.op, "id": case.id,
                       "params": dict(case.params), "seed": int(case.seed)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def cached(kind: str, case, fn: Callable[[], Any]) -> Any:
    """``fn()`` for this case and kind ("inputs", "expected", ...), computed once and kept."""
    key = key_of(kind, case)
    hit = _memo.get(key)
    if hit is not None:
        _memo.move_to_end(key)
        stats["memo_hits"] += 1
        return hit[0]
    if not _settings.enabled:
        value = _compute(fn)[0]
    else:
        value = _through_disk(key, f"{kind} of {case.op} {case.id}", fn)
    _remember(key, value)
    return value


def _compute(fn):
    start = time.perf_counter()
    value = fn()
    stats["computed"] += 1
    return value, time.perf_counter() - start


def _through_disk(key: str, label: str, fn) -> Any:
    entry = root() / key[:2] / key
    value = _load(entry, label)
    if value is not _MISS:
        return value
    try:
        lock = _lock(key)
    except OSError:                  # an unwritable store is no store
        return _compute(fn)[0]
    try:
        value = _load(entry, label)              # another process may have written it meanwhile
        if value is not _MISS:
            return value
        value, seconds = _compute(fn)
        if seconds >= MIN_SECONDS:
            try:
                _write(entry, value)
            except (OSError, _Unstorable):
                pass
        return value
    finally:
        _unlock(lock)


def _lock(key: str):
    path = root() / "locks" / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "a+b")
    fcntl.flock(f, fcntl.LOCK_EX)
    return f


def _unlock(f) -> None:
    """Release and remove the lock file, so that locks/ does not grow by one file per golden.

    A process already waiting on the removed file gets it next and then finds the entry written;
    one that arrives later finds the entry before it locks. Only when the computation failed can
    two processes compute at once (each on its own lock file): the entry's rename keeps one."""
    try:
        os.unlink(f.name)
    except OSError:
        pass
    f.close()


def _remember(key: str, value: Any) -> None:
    global _memo_bytes
    size = _nbytes(value)
    if size is None or size > MEMO_BYTES:
        return
    _memo[key] = (value, size)
    _memo_bytes += size
    while _memo_bytes > MEMO_BYTES:
        _, (_, old) = _memo.popitem(last=False)
        _memo_bytes -= old


def _nbytes(value) -> Optional[int]:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = [_nbytes(getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        parts = [_nbytes(v) for v in value.values()]
    elif isinstance(value, (tuple, list)):
        parts = [_nbytes(v) for v in value]
    else:
        return 0
    return None if None in parts else sum(parts)


# --- the on-disk format -------------------------------------------------------------------------

class _Unstorable(Exception):
    """A value with something other than arrays, containers and plain scalars in it."""


class _Corrupt(Exception):
    pass


_MISS = object()


def _encode(value, arrays: list) -> dict:
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"t": "array", "i": len(arrays) - 1}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _Unstorable("dict keys must be strings")
        return {"t": "dict", "items": [[k, _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, (tuple, list)):
        return {"t": type(value).__name__, "items": [_encode(v, arrays) for v in value]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith(_GOLDEN_PACKAGES):
            raise _Unstorable(f"{cls.__module__}.{cls.__qualname__} is not a golden class")
        return {"t": "dataclass", "cls": f"{cls.__module__}:{cls.__qualname__}",
                "items": [[f.name, _encode(getattr(value, f.name), arrays)] for f in dataclasses.fields(value)]}
    if isinstance(value, float):                  # repr keeps inf and nan, which strict JSON lacks
        return {"t": "float", "v": repr(value)}
    if value is None or isinstance(value, (bool, int, str)):
        return {"t": "scalar", "v": value}
    raise _Unstorable(type(value).__name__)


def _decode(node: dict, arrays: list):
    t = node["t"]
    if t == "array":
        return arrays[node["i"]]
    if t == "dict":
        return {k: _decode(v, arrays) for k, v in node["items"]}
    if t in ("tuple", "list"):
        items = [_decode(v, arrays) for v in node["items"]]
        return tuple(items) if t == "tuple" else items
    if t == "dataclass":             # only golden's own dataclasses: a manifest names no other code
        module, _, name = node["cls"].partition(":")
        if not module.startswith(_GOLDEN_PACKAGES):
            raise _Corrupt(f"{node['cls']} is not a golden class")
        cls = getattr(importlib.import_module(module), name)
        if not dataclasses.is_dataclass(cls):
            raise _Corrupt(f"{node['cls']} is not a dataclass")
        return cls(**{k: _decode(v, arrays) for k, v in node["items"]})
    if t == "float":
        return float(node["v"])
    if t == "scalar":
        return node["v"]
    raise _Corrupt(f"unknown node type {t!r}")


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(a, order="C").reshape(-1).view(np.uint8)).hexdigest()


def _storable(a: np.ndarray) -> tuple[np.ndarray, str]:
    """The array as np.save can write without pickle, and the dtype to view it back as."""
    if a.dtype.hasobject:
        raise _Unstorable("object array")
    name = a.dtype.name if a.dtype.names is None else str(a.dtype)
    if a.dtype.type.__module__ != "numpy":        # ml_dtypes (bfloat16 ...): kept as raw bits
        return np.asarray(a, order="C").view(np.dtype(f"u{a.dtype.itemsize}")), name
    return np.asarray(a, order="C"), name


def _dtype_named(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def _write(entry: Path, value) -> None:
    arrays: list = []
    tree = _encode(value, arrays)
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name[:16]}-", dir=entry.parent))
    try:
        files = []
        for i, a in enumerate(arrays):
            raw, dtype = _storable(a)
            np.save(tmp / f"{i}.npy", raw, allow_pickle=False)
            files.append({"dtype": dtype, "shape": list(a.shape), "sha256": _digest(raw)})
        size = sum(a.nbytes for a in arrays)
        # No fsync: a crash can leave garbage, which the checksum catches; durability is not needed.
        (tmp / MANIFEST).write_text(json.dumps({"format": FORMAT, "tree": tree, "files": files, "bytes": size}))
        try:
            os.rename(tmp, entry)
        except OSError:              # another process stored the same entry first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
            return
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    stats["written"] += 1
    _account(size)


def _account(written: int) -> None:
    """Evict when the store may have passed its bound (see the module docstring)."""
    global _stored_bytes
    if _stored_bytes is None:
        _stored_bytes = sum(size for _, size, _ in entries())
    else:
        _stored_bytes += written
    if _stored_bytes > max_bytes():
        evict(max_bytes())
        _stored_bytes = sum(size for _, size, _ in entries())


def _read_manifest(path: Path) -> str:
    """A FIFO or a link to /dev/zero in the manifest's place is refused, never waited on or read
    forever: open without blocking, require a regular file, read at most the bound. (The golden
    package imports nothing of the rest of the suite, so not hardware/util/regular_file.py.)"""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        data = os.read(fd, MANIFEST_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MANIFEST_MAX_BYTES:
        raise OSError(f"{path}: more than {MANIFEST_MAX_BYTES} bytes")
    return data.decode("utf-8")


def _load(entry: Path, label: str):
    manifest = entry / MANIFEST
    try:
        text = _read_manifest(manifest)
    except FileNotFoundError:
        return _MISS
    except (OSError, UnicodeDecodeError) as exc:
        _report(entry, label, f"unreadable manifest ({exc})")
        return _MISS
    try:
        meta = json.loads(text)
        arrays = []
        for i, f in enumerate(meta["files"]):
            a = np.load(entry / f"{i}.npy", allow_pickle=False)
            if list(a.shape) != f["shape"] or _digest(a) != f["sha256"]:
                raise _Corrupt(f"{i}.npy does not match its checksum")
            dtype = _dtype_named(f["dtype"])
            arrays.append(a if a.dtype == dtype else a.view(dtype))
        value = _decode(meta["tree"], arrays)
    except FileNotFoundError:
        return _MISS                 # evicted by another process while we read it
    except Exception as exc:         # truncated .npy, bad JSON, checksum: recompute, never fail a case
        _report(entry, label, str(exc) or type(exc).__name__)
        _remove(entry)
        return _MISS
    try:
        os.utime(manifest)           # least recently used is by manifest mtime
    except OSError:
        pass
    stats["disk_hits"] += 1
    return value


def _report(entry: Path, label: str, why: str) -> None:
    stats["corrupt"] += 1
    message = f"golden store: {label}: entry {entry} is corrupt ({why}); recomputed"
    if message in problems:
        return
    problems.append(message)
    warnings.warn(message, GoldenStoreWarning, stacklevel=4)


def _remove(entry: Path) -> None:
    """Rename away first so no reader sees a half-deleted entry."""
    trash = entry.parent / f".trash-{entry.name[:16]}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(entry, trash)
    except OSError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def entries(where: Optional[Path] = None) -> list[tuple[float, int, Path]]:
    """(last use, bytes, folder) of every whole entry."""
    out = []
    base = where or root()
    try:
        shards = [p for p in base.iterdir() if len(p.name) == 2]
    except OSError:
        return out
    for shard in shards:
        try:
            folders = list(shard.iterdir())
        except OSError:
            continue
        for entry in folders:
            if entry.name.startswith("."):
                continue
            try:
                st = (entry / MANIFEST).stat()
                size = sum(f.stat().st_size for f in entry.iterdir())
            except OSError:
                continue
            out.append((st.st_mtime, size, entry))
    return out


def evict(limit: int) -> int:
    """Remove least recently used entries until the store holds at most ``limit`` bytes."""
    found = sorted(entries())
    total = sum(size for _, size, _ in found)
    removed = 0
    for _, size, entry in found:
        if total <= limit:
            break
        _remove(entry)
        total -= size
        removed += 1
    stats["evicted"] += removed
    return removed
