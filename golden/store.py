"""The golden store: inputs, references and tolerances computed once and kept, keyed by content.

``cached(kind, case, fn)`` returns ``fn()``, computing it only when neither this process's memo
nor the on-disk store has the entry. The key is a sha256 of the generator version, the kind, the
case's op, id and parameters, and its seed. The generator version covers what computes a golden:
the source of this package's generator modules, of every registered family's golden module (the
built-in families' folders, and each outside distribution's registered golden module with its
package folder and its distribution's name and version), and the numpy / ml_dtypes / torch
versions. An edit to any of them, or an upgrade, is a cold store, never a stale golden;
``--verify-golden[=FRACTION]`` (``configure(verify=...)``) recomputes that share of the entries a
session reads from disk and raises ``GoldenStoreMismatch`` naming the entry when one differs.

On disk an entry is a folder ``<root>/<key[:2]>/<key>/`` of ``.npy`` files (loaded with
``allow_pickle=False``) and a ``manifest.json`` holding the value's structure (dicts, tuples,
lists, scalars, golden's own dataclasses such as ErrorModel: an ErrorModel's ``kind`` decides
which statistical checks apply), each array's dtype, shape and sha256, and an HMAC-SHA256 of all
of it and of the entry's key. The HMAC's secret lives outside the store (``signing_key_path()``),
so nothing that can only write the store (a CI cache restored from another branch, another user
of a loose folder) can make an entry the store serves: an entry whose data and checksums were
rewritten together, whose manifest alone was edited, or that was moved under another key fails
its signature, is reported once (``GoldenStoreWarning`` and ``problems``), deleted and
recomputed; it never fails a case. An entry signed with another secret (a store used from
another machine) is recomputed quietly.

The store is private, as ssh treats a key file: its folder is created 0700, and a store that is
group- or world-writable or owned by another user is refused (``GoldenStoreError``, naming the
folder and the fixes) unless the user says it is shared (``configure(shared=True)``, pytest
``--golden-cache-shared``, ``$ACCEL_GOLDEN_CACHE_SHARED=1``); members of a shared store share a
signing key through ``$ACCEL_GOLDEN_CACHE_KEY_FILE``. Nothing inside the store is reached through
a symbolic link: every file and folder is opened relative to its parent's descriptor with
O_NOFOLLOW, and a link found there is reported and removed (never its target).

Folders are built under a temporary name and renamed into place, so a reader (another process, an
xdist worker) sees a whole entry or none; a per-key lock file keeps two processes from computing
the same golden twice.

The store is bounded (``MAX_BYTES``, ``$ACCEL_GOLDEN_CACHE_BYTES``): the least recently used
entries (a hit touches the manifest) are evicted. A process walks the store once, at its first
write, and then counts what it writes; it walks again only when that count passes the bound, so a
write costs no walk of a store of thousands of entries (another process's writes are seen at the
next walk: the bound can be passed by what other processes wrote meanwhile, never for long). Values that compute in under
``MIN_SECONDS`` are not written, since reading them back would cost more than computing them;
within a process they are still memoized, so each configuration is computed once per session
whatever order pytest runs the items in.

Root: ``$ACCEL_GOLDEN_CACHE``, else ``golden`` under the suite's one cache root (``$ACCEL_CACHE_DIR``,
else ``$XDG_CACHE_HOME/accel-regress``, else ``~/.cache/accel-regress``: hardware/util/derived_cache.py).
A root restored from another machine or clone is served, each entry verified against its
signature on load, when the signing key is the one it was written with (a CI secret given as
``$ACCEL_GOLDEN_CACHE_KEY_FILE``); otherwise its entries are foreign and recomputed. ``configure(enabled=False)`` (pytest ``--no-golden-cache``)
bypasses the disk store.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import importlib
import importlib.util
import json
import os
import re
import random
import time
import warnings
from collections import OrderedDict
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

from accel_regress.golden import store_folder as folder
from accel_regress.golden.store_folder import MANIFEST

GoldenStoreError = folder.GoldenStoreError     # a store others can write, not declared shared

FORMAT = 2
MAX_BYTES = 16 << 30                 # on disk
MEMO_BYTES = 1 << 30                 # in this process
MIN_SECONDS = 0.02                   # cheaper goldens are recomputed, not read back
_GOLDEN_DIR = Path(__file__).resolve().parent
# The packages whose dataclasses a manifest may name: golden's own and the built-in families'.
_GOLDEN_PACKAGES = ("accel_regress.golden.", "accel_regress.families.")
# Modules of this package that compute nothing a golden holds: editing them keeps the store warm.
_NOT_GENERATORS = {"compare.py", "statistics.py", "store.py", "store_folder.py", "__init__.py"}
# The built-in families live beside this package, one folder per family; their device-side modules
# compute no golden.
_FAMILIES_DIR = _GOLDEN_DIR.parent / "families"
_OWN_DIST = "accel-regress"
_GROUP = "accel_regress.families"
# Groups whose modules may compute or check a golden (the family's, and its commands, plugins and
# upstream writers); every other accel_regress.* group (backends, and each kind of per-family program
# a backend reads: emu models, IREE programs, torch programs, ...) is device-side.
_GOLDEN_SIDE_GROUPS = {_GROUP, "accel_regress.plugins", "accel_regress.session_plugins",
                       "accel_regress.commands", "accel_regress.upstream"}


def _device_side_groups(groups) -> list[str]:
    return sorted(g for g in groups if g.startswith("accel_regress.") and g not in _GOLDEN_SIDE_GROUPS)


def _builtin_device_side(every) -> set[str]:
    """The built-in families' device-side files (family-relative paths), from their registrations:
    the checkout's pyproject.toml when this is a source checkout, and the installed metadata."""
    modules = {ep.value.partition(":")[0].strip() for g in _device_side_groups(every.groups)
               for ep in every.select(group=g)}
    pyproject = _GOLDEN_DIR.parent / "pyproject.toml"
    if pyproject.is_file():
        import tomllib
        try:
            eps = tomllib.loads(pyproject.read_text()).get("project", {}).get("entry-points", {})
        except (OSError, tomllib.TOMLDecodeError):
            eps = {}
        modules |= {v.partition(":")[0].strip() for g in _device_side_groups(eps) for v in eps[g].values()}
    prefix = "accel_regress.families."
    return {m[len(prefix):].replace(".", "/") + ".py" for m in modules if m.startswith(prefix)}


class GoldenStoreWarning(UserWarning):
    """An entry of the golden store was unreadable or not ours and has been recomputed."""


class GoldenStoreMismatch(AssertionError):
    """``--verify-golden`` recomputed an entry the store served and got something else."""


class _Settings:
    enabled = True
    root: Optional[Path] = None
    shared: Optional[bool] = None      # None: $ACCEL_GOLDEN_CACHE_SHARED
    verify = 0.0                       # share of disk hits recomputed and compared
    key_file: Optional[Path] = None    # None: signing_key_path()
    secret: Optional[tuple[Path, bytes]] = None     # the signing key and its file, read once per file


class _Memo:
    """The goldens this process holds (least recently used first), and the disk store's size."""

    def __init__(self) -> None:
        self.entries: "OrderedDict[str, tuple[Any, int]]" = OrderedDict()   # key -> (value, bytes)
        self.nbytes = 0
        self.stored_bytes: Optional[int] = None  # the store's size as this process last walked it, plus its writes

    def clear(self) -> None:
        self.entries.clear()
        self.nbytes = 0
        self.stored_bytes = None


# The store is the process's (a golden module asks it with no session at hand); each pytest
# session configures it afresh (``configure``), so sessions inside a session start clean.
_settings = _Settings()
_random = random.Random()
_memo = _Memo()
problems: list[str] = []            # what was reported this process, once per entry
stats = {"memo_hits": 0, "disk_hits": 0, "computed": 0, "written": 0, "evicted": 0, "corrupt": 0,
         "foreign": 0, "verified": 0}


def default_root() -> Path:
    env = os.environ.get("ACCEL_GOLDEN_CACHE")
    if env:
        return Path(env)
    from accel_regress.util.derived_cache import user_cache
    return user_cache("golden")


def signing_key_path() -> Path:
    """Where the store's secret lives: never inside the store, nor in the cache folder around it."""
    env = os.environ.get("ACCEL_GOLDEN_CACHE_KEY_FILE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "accel-regress" / "golden-store.key"


def configure(*, enabled: bool = True, root: Optional[Path] = None, shared: Optional[bool] = None,
              verify: float = 0.0, key_file: Optional[Path] = None) -> None:
    """Set where the store lives, whether the disk is used, whether it may be shared, and which
    share of disk hits to verify; clears this process's memo and what it knew of the sources."""
    if not 0.0 <= verify <= 1.0:
        raise ValueError(f"verify: {verify!r} is not a fraction between 0 and 1")
    _settings.enabled = enabled
    _settings.root = Path(root) if root else None
    _settings.shared = shared
    _settings.verify = float(verify)
    _settings.key_file = Path(key_file) if key_file else None
    _settings.secret = None
    generator_version.cache_clear()
    clear_memo()


def root() -> Path:
    return _settings.root or default_root()


def shared() -> bool:
    if _settings.shared is not None:
        return _settings.shared
    return os.environ.get("ACCEL_GOLDEN_CACHE_SHARED", "").strip().lower() in ("1", "true", "yes", "on")


def max_bytes() -> int:
    """The store's bound: $ACCEL_GOLDEN_CACHE_BYTES (bytes, or with K/M/G/T), else MAX_BYTES. A
    value that is not a positive size is a ValueError (the plugin's usage error), never a silent
    default (``abc``, ``1e3``) nor a negative bound."""
    env = os.environ.get("ACCEL_GOLDEN_CACHE_BYTES")
    if env is None:
        return MAX_BYTES
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", env, re.IGNORECASE)
    value = int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m.group(2).upper()] if m else 0
    if not value:
        raise ValueError(f"$ACCEL_GOLDEN_CACHE_BYTES={env!r}: not a positive size in bytes (e.g. 16G)")
    return value


def clear_memo() -> None:
    _memo.clear()


# --- the key ------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def generator_version() -> str:
    """Digest of what makes a golden: the generator sources (this package's and every registered
    family's golden modules) and the numeric libraries."""
    h = hashlib.sha256(f"format {FORMAT}".encode())
    for path in sorted(_GOLDEN_DIR.glob("*.py")):
        if path.name not in _NOT_GENERATORS:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for name, digest in golden_sources():
        h.update(f"{name}={digest}\0".encode())
    for dist in ("numpy", "ml_dtypes", "torch"):
        h.update(f"{dist}={_version(dist)}\0".encode())
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "none"


def golden_sources() -> list[tuple[str, str]]:
    """(what, digest) of every golden module: the built-in families' folders (their device-side
    modules aside), then each outside distribution's registered golden module and the other
    modules of its package folder, with that distribution's name and version. Read from the
    files and the installed metadata only: no module is executed."""
    out = []
    try:
        every = metadata.entry_points()      # one scan of the installed distributions
        eps = list(every.select(group=_GROUP))
        not_golden = {ep.value.partition(":")[0] for g in _device_side_groups(every.groups) for ep in every.select(group=g)}
        device_side = _builtin_device_side(every)
    except Exception as exc:         # unreadable metadata: a key of its own, never a shared stale one
        return [("metadata", f"unreadable: {type(exc).__name__}: {exc}")]
    if _FAMILIES_DIR.is_dir():
        for path in sorted(_FAMILIES_DIR.rglob("*.py")):
            rel = path.relative_to(_FAMILIES_DIR).as_posix()
            if rel not in device_side and "__pycache__" not in path.parts:
                out.append((f"builtin:{rel}", _file_digest(path)))
    for ep in sorted(eps, key=lambda e: (e.name, e.value)):
        dist = ep.dist
        dname = (dist.metadata["Name"] or "?") if dist is not None else "?"
        if dname.lower().replace("_", "-") == _OWN_DIST and out:
            continue                 # the built-ins: their folders are hashed above
        module = ep.value.partition(":")[0].strip()
        h = hashlib.sha256(f"{dname} {dist.version if dist is not None else '?'}\0".encode())
        for path in _module_files(module, not_golden):
            h.update(path.name.encode() + b"\0" + _file_digest(path).encode() + b"\0")
        out.append((f"{ep.name}:{ep.value}", h.hexdigest()))
    return out


def _module_files(module: str, not_golden: set) -> list[Path]:
    """The golden module's file and, when it is in a package, that package folder's other
    modules (its helpers) except those registered as device-side modules."""
    try:
        spec = importlib.util.find_spec(module)
    except Exception:
        spec = None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return []
    origin = Path(spec.origin)
    if not spec.parent or spec.submodule_search_locations is not None:
        return [origin]
    out = [origin]
    for path in sorted(origin.parent.glob("*.py")):
        if path != origin and f"{spec.parent}.{path.stem}" not in not_golden:
            out.append(path)
    return out


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def key_of(kind: str, case) -> str:
    blob = json.dumps({"version": generator_version(), "kind": kind, "op": case.op, "id": case.id,
                       "params": dict(case.params), "seed": int(case.seed)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


# --- the cache ----------------------------------------------------------------------------------

def cached(kind: str, case, fn: Callable[[], Any]) -> Any:
    """``fn()`` for this case and kind ("inputs", "expected", ...), computed once and kept."""
    key = key_of(kind, case)
    hit = _memo.entries.get(key)
    if hit is not None:
        _memo.entries.move_to_end(key)
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
    try:
        secret = _signing_key()
        with folder.open_root(root(), shared()) as top:
            value = _load(top, key, label, secret)
    except OSError as exc:           # an unreadable or unwritable store is no store
        _note(f"golden store {root()} is not usable ({exc}); goldens are computed, not kept")
        return _compute(fn)[0]
    if value is not _MISS:
        return _verified(key, label, value, fn)
    try:
        with folder.open_root(root(), shared()) as top, folder.Locked(top, f"{key}.lock", shared()):
            value = _load(top, key, label, secret)    # another process may have written it meanwhile
            if value is not _MISS:
                return value
            value, seconds = _compute(fn)
            if seconds >= MIN_SECONDS:
                try:
                    _write(top, key, value, secret)
                except (OSError, _Unstorable):
                    pass
            return value
    except folder.PlantedLink as exc:
        _report(f"{exc.filename!r} in {root()}", label, exc.strerror)
    except OSError:
        pass
    return _compute(fn)[0]


def _verified(key: str, label: str, value, fn):
    """The stored value, after recomputing it when this hit is in the share ``verify`` asks for."""
    if _settings.verify <= 0 or _random.random() >= _settings.verify:
        return value
    fresh = _compute(fn)[0]
    stats["verified"] += 1
    arrays_a, arrays_b = [], []
    try:
        tree_a, tree_b = _encode(value, arrays_a), _encode(fresh, arrays_b)
    except _Unstorable:
        return fresh
    differs = _difference(tree_a, arrays_a, tree_b, arrays_b)
    if differs is None:
        return value
    entry = root() / key[:2] / key
    try:
        with folder.open_root(root(), shared()) as top:
            _remove(top, key)
    except OSError:
        pass
    message = (f"golden store: {label}: the stored entry {entry} differs from a fresh computation "
               f"({differs}): the store served a stale or altered golden. The entry was removed; "
               "find what computes this golden outside the store's key (golden_sources()) before "
               "trusting results read from this store, or run with --no-golden-cache")
    problems.append(message)
    raise GoldenStoreMismatch(message)


def _difference(tree_a, arrays_a, tree_b, arrays_b) -> Optional[str]:
    if json.dumps(tree_a, sort_keys=True) != json.dumps(tree_b, sort_keys=True):
        return "its structure or scalars differ"
    for i, (a, b) in enumerate(zip(arrays_a, arrays_b)):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"array {i}: {a.dtype} {a.shape} stored, {b.dtype} {b.shape} computed"
        if _digest(_storable(a)[0]) != _digest(_storable(b)[0]):
            return f"array {i} ({a.dtype} {a.shape}): the values differ"
    return None


def _remember(key: str, value: Any) -> None:
    size = _nbytes(value)
    if size is None or size > MEMO_BYTES:
        return
    _memo.entries[key] = (value, size)
    _memo.nbytes += size
    while _memo.nbytes > MEMO_BYTES:
        _, (_, old) = _memo.entries.popitem(last=False)
        _memo.nbytes -= old


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


# --- the signing key ----------------------------------------------------------------------------

def _signing_key() -> bytes:
    path = _settings.key_file or signing_key_path()
    if _settings.secret is None or _settings.secret[0] != path:
        _settings.secret = (path, folder.signing_key(path, shared()))
    return _settings.secret[1]


def signing_secret() -> bytes:
    """The store's signing key (made on first use; ``GoldenStoreError`` when others can write it):
    the cache root's build outputs are signed with it too (hardware/util/build_seal.py), so one CI
    secret vouches for everything a restored root holds."""
    return _signing_key()


def _key_id(secret: bytes) -> str:
    return hashlib.sha256(b"accel-regress golden store key id\0" + secret).hexdigest()[:16]


def _mac(secret: bytes, key: str, meta: dict) -> str:
    signed = json.dumps({"key": key, "format": meta["format"], "tree": meta["tree"], "files": meta["files"],
                         "bytes": meta["bytes"]}, sort_keys=True)
    return hmac.new(secret, signed.encode(), hashlib.sha256).hexdigest()


# --- the on-disk format -------------------------------------------------------------------------

class _Unstorable(Exception):
    """A value with something other than arrays, containers and plain scalars in it."""


class _Corrupt(Exception):
    pass


class _Foreign(Exception):
    """An entry of another format or signing key: not wrong, not ours."""


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


def _write(top: int, key: str, value, secret: bytes) -> None:
    arrays: list = []
    tree = _encode(value, arrays)
    create = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    shard = folder.subdir(top, key[:2], create=True, shared=shared())
    try:
        tmp = folder.make_temp(shard, key[:16], shared())
        try:
            inside = folder.subdir(shard, tmp, create=False)
            try:
                files = []
                for i, a in enumerate(arrays):
                    raw, dtype = _storable(a)
                    with os.fdopen(folder.open_in(inside, f"{i}.npy", create, shared()), "wb") as f:
                        np.save(f, raw, allow_pickle=False)
                    files.append({"dtype": dtype, "shape": list(a.shape), "sha256": _digest(raw)})
                meta = {"format": FORMAT, "tree": tree, "files": files, "bytes": sum(a.nbytes for a in arrays),
                        "key_id": _key_id(secret)}
                meta["mac"] = _mac(secret, key, meta)
                # No fsync: a crash can leave garbage, which the signature catches; durability is not needed.
                with os.fdopen(folder.open_in(inside, MANIFEST, create, shared()), "w") as f:
                    f.write(json.dumps(meta))
            finally:
                os.close(inside)
            try:
                os.rename(tmp, key, src_dir_fd=shard, dst_dir_fd=shard)
            except OSError:          # another process stored the same entry first: keep theirs
                folder.remove_in(shard, tmp)
                return
        except BaseException:
            folder.remove_in(shard, tmp)
            raise
    finally:
        os.close(shard)
    stats["written"] += 1
    _account(meta["bytes"])


def _account(written: int) -> None:
    """Evict when the store may have passed its bound (see the module docstring)."""
    if _memo.stored_bytes is None:
        _memo.stored_bytes = sum(size for _, size, _ in entries())
    else:
        _memo.stored_bytes += written
    if _memo.stored_bytes > max_bytes():
        evict(max_bytes())
        _memo.stored_bytes = sum(size for _, size, _ in entries())


def _load(top: int, key: str, label: str, secret: bytes):
    """The entry's value, _MISS when absent; a damaged, altered, foreign or linked entry is removed."""
    where = root() / key[:2] / key
    try:
        shard = folder.subdir(top, key[:2], create=False)
    except folder.PlantedLink as exc:
        _report(where, label, exc.strerror)
        return _MISS
    if shard is None:
        return _MISS
    try:
        try:
            inside = folder.subdir(shard, key, create=False)
        except folder.PlantedLink as exc:
            _report(where, label, exc.strerror)
            return _MISS
        if inside is None:
            return _MISS
        try:
            value = _read_entry(inside, key, secret)
            if value is _MISS:
                return _MISS
            try:
                os.utime(MANIFEST, dir_fd=inside, follow_symlinks=False)   # least recently used is by manifest mtime
            except OSError:
                pass
        except _Foreign:
            stats["foreign"] += 1
            folder.remove_in(shard, key)
            return _MISS
        except Exception as exc:     # truncated .npy, bad JSON, signature, a link: recompute, never fail a case
            _report(where, label, (exc.strerror if isinstance(exc, folder.PlantedLink) else str(exc))
                    or type(exc).__name__)
            folder.remove_in(shard, key)
            return _MISS
        finally:
            os.close(inside)
    finally:
        os.close(shard)
    stats["disk_hits"] += 1
    return value


def _read_entry(inside: int, key: str, secret: bytes):
    try:
        text = folder.read_in(inside, MANIFEST)
    except FileNotFoundError:
        return _MISS                 # being evicted by another process
    meta = json.loads(text)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key_id") != _key_id(secret):
        raise _Foreign()
    if not isinstance(meta.get("mac"), str) or not hmac.compare_digest(meta["mac"], _mac(secret, key, meta)):
        raise _Corrupt("the manifest does not match its signature (rewritten, or moved from another key)")
    arrays = []
    for i, f in enumerate(meta["files"]):
        with os.fdopen(folder.open_in(inside, f"{i}.npy", os.O_RDONLY), "rb") as fh:
            a = np.load(fh, allow_pickle=False)
        if list(a.shape) != f["shape"] or _digest(a) != f["sha256"]:
            raise _Corrupt(f"{i}.npy does not match its checksum")
        dtype = _dtype_named(f["dtype"])
        arrays.append(a if a.dtype == dtype else a.view(dtype))
    return _decode(meta["tree"], arrays)


def _note(message: str) -> None:
    if message not in problems:
        problems.append(message)
        warnings.warn(message, GoldenStoreWarning, stacklevel=4)


def _report(entry, label: str, why: str) -> None:
    stats["corrupt"] += 1
    _note(f"golden store: {label}: entry {entry} is corrupt ({why}); recomputed")


def _remove(top: int, key: str) -> None:
    try:
        shard = folder.subdir(top, key[:2], create=False)
    except OSError:
        return
    if shard is not None:
        try:
            folder.remove_in(shard, key)
        finally:
            os.close(shard)


def entries(where: Optional[Path] = None) -> list[tuple[float, int, Path]]:
    """(last use, bytes, folder) of every whole entry."""
    base = where or root()
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        return [(mtime, size, base / shard / key) for shard, key, mtime, size in folder.walk(fd)]
    finally:
        os.close(fd)


def evict(limit: int) -> int:
    """Remove least recently used entries until the store holds at most ``limit`` bytes."""
    with folder.open_root(root(), shared()) as top:
        found = sorted((mtime, size, key) for _, key, mtime, size in folder.walk(top))
        total = sum(size for _, size, _ in found)
        removed = 0
        for _, size, key in found:
            if total <= limit:
                break
            _remove(top, key)
            total -= size
            removed += 1
    stats["evicted"] += removed
    return removed
