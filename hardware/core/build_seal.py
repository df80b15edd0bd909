"""Build outputs kept in the cache root are code the suite runs: an IREE module, a qemu-rvv harness
(qemu-user is no sandbox: a guest's ``execve`` runs a host program). So an entry is used only
when it carries this machine's signature: an HMAC-SHA256 over its key and every file's size and
sha256, keyed by the golden store's signing key (golden/store.py ``signing_secret``: kept outside
the root, ``$ACCEL_GOLDEN_CACHE_KEY_FILE`` in CI), the rule golden entries follow. A checksum
alone is no seal: whoever can write a file can write its checksum too (issue 47 S1).

An entry is a folder holding ``index.json`` (schema
hardware/util/schemas/build-cache-entry.schema.json). What does not verify is never
used: an entry signed with another key or with none (a root restored from another machine, an
older suite) is ``Unsigned`` and rebuilt, said once per process and root; one signed with this
key that no longer matches (edited, truncated, forged) is a problem named by the caller.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
from pathlib import Path
from typing import Optional

from accel_regress.util import schemas
from accel_regress.util.atomic import write_atomic
from accel_regress.util.paths import PathRefused, member_path

INDEX = "index.json"
_SCHEMA = "build-cache-entry"
_said: set[str] = set()                      # notes already printed by this process
_verified: set[tuple] = set()                # entries checked, by their files' (inode, ctime, size)


class Unsigned(str):
    """Why an entry is not this machine's: not wrong, not ours (rebuilt, said once)."""


def note_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        print(f"accel-regress: {message}", file=sys.stderr)


def secret() -> Optional[bytes]:
    """The signing key; None (said once) when it cannot be had: then no entry is trusted."""
    from accel_regress.golden import store
    try:
        return store.signing_secret()
    except (OSError, store.GoldenStoreError) as exc:
        note_once(f"build cache: no signing key ({exc}): nothing in the cache root is run; "
                  "every IREE module and qemu-rvv harness is built for this session in a temporary folder")
        return None


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"accel-regress build cache key id\0" + key).hexdigest()[:16]


def _mac(key: bytes, doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k not in ("mac", "key_id")}
    return hmac.new(key, json.dumps(body, sort_keys=True).encode(), hashlib.sha256).hexdigest()


def sign(doc: dict) -> Optional[dict]:
    """``doc`` with its signature; None without a signing key."""
    key = secret()
    if key is None:
        return None
    return {**doc, "key_id": _key_id(key), "mac": _mac(key, doc)}


def signature_problem(doc: dict) -> Optional[str]:
    """None when ``doc`` (a parsed JSON object) carries this machine's signature of its content."""
    key = secret()
    if key is None:
        return Unsigned("no signing key")
    if doc.get("key_id") != _key_id(key) or not isinstance(doc.get("mac"), str):
        return Unsigned("signed with another key, or not signed")
    if not hmac.compare_digest(doc["mac"], _mac(key, doc)):
        return "its signature does not match its content (edited or forged)"
    return None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_index(folder: Path, key: str, output: str) -> bool:
    """Sign the entry being built in ``folder`` (before it is renamed into place); False without
    a signing key (the caller keeps the entry out of the cache)."""
    files = {p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "sha256": sha256(p)}
             for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}
    doc = sign({"key": key, "output": output, "files": files})
    if doc is None:
        return False
    write_atomic(folder / INDEX, json.dumps(doc, indent=1) + "\n")
    return True


def _stamp(path: Path) -> tuple:
    st = os.lstat(path)          # ctime cannot be set back by whoever rewrites the file
    return st.st_ino, st.st_ctime_ns, st.st_size, stat.S_IFMT(st.st_mode)


def entry_problem(folder: Path, key: str, output: str) -> Optional[str]:
    """None when the entry's index validates, is signed with this machine's key and every file it
    lists matches; else what is wrong (an ``Unsigned`` when it is only not ours)."""
    index = Path(folder) / INDEX
    try:
        doc = schemas.load_json(index, _SCHEMA)
    except schemas.InputError as exc:
        if not index.exists():
            return "no index.json (an unfinished entry or one from an older suite)"
        return str(exc)
    if doc["key"] != key or doc["output"] != output or output not in doc["files"]:
        return f"index.json describes another entry (key {doc['key'][:12]}..., output {doc['output']!r})"
    unsigned = signature_problem(doc)
    if unsigned:
        return unsigned
    try:
        paths = {name: member_path(folder, name) for name in doc["files"]}
        stamp = (str(folder), _stamp(index), tuple((n, _stamp(p)) for n, p in sorted(paths.items())))
    except (PathRefused, OSError) as exc:
        return str(exc)
    if stamp in _verified:
        return None
    for name, want in doc["files"].items():
        try:
            if paths[name].stat().st_size != want["size"] or sha256(paths[name]) != want["sha256"]:
                return f"{name} does not match its checksum (truncated or corrupted)"
        except OSError as exc:
            return f"{name}: {exc}"
    _verified.add(stamp)
    return None

