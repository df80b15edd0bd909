"""Answers of probes of this machine (which CPU IREE resolves ``host`` to, which ISA oneDNN picks),
kept until the machine reboots so that each session and xdist worker does not probe again.

They live in a folder of this user's under the temporary directory, not under the cache root: a
root travels between machines (CI restores it), and a probe's answer is true only of the machine
that gave it. The key holds the boot id and the CPU fingerprint besides the caller's own parts.
A memo that cannot be read or written costs a probe, never an error.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from accel_regress.util import host_cpu
from accel_regress.util.atomic import write_atomic


def folder() -> Path:
    return Path(tempfile.gettempdir()) / f"accel-regress-machine-{os.getuid()}"


def _usable(path: Path) -> bool:
    """Ours and no link: another user's folder of that name would let them answer for this machine."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not (st.st_mode & 0o022)


def memo(name: str, parts: Sequence[str], compute: Callable[[], dict]) -> dict:
    """``compute()`` (a JSON-able dict of strings) once per boot for ``name`` and ``parts``."""
    h = hashlib.sha256()
    for part in (name, host_cpu.boot_id(), host_cpu.host().fingerprint(), *parts):
        h.update(str(part).encode())
        h.update(b"\x00")
    where = folder()
    path = where / f"{name}-{h.hexdigest()[:24]}.json"
    if _usable(where):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd) as f:
                found = json.load(f)
            if isinstance(found, dict) and all(isinstance(v, str) for v in found.values()):
                return found
        except (OSError, ValueError):
            pass
    answer = compute()
    if _usable(where):
        try:
            write_atomic(path, json.dumps(answer, sort_keys=True))
        except OSError:
            pass
    return answer
