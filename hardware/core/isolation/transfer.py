"""Arrays between the pytest process and a worker: one .npy file each in a per-job folder.

The folder lives on /dev/shm when it is big enough (tmpfs: writing is a memory copy, and a big
array is read back as a copy-on-write memory map, so a 0.5 GB output costs one copy, never a
pickle through a pipe). Files are read with ``allow_pickle=False``. Dtypes numpy cannot describe
in a .npy header without pickling (ml_dtypes' bfloat16, ...) travel as raw bytes plus their name;
every other dtype that is not a native builtin (a byte-swapped ``>f4``, a ``V8`` void) as raw
bytes plus its full ``dtype.str``, byte order included: the reader gets the dtype the backend
returned, so the output contract sees it (issue 26 item 1).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping

import numpy as np

# Below this size a plain read is cheaper than setting up a memory map.
MMAP_MIN_BYTES = 1 << 20
SHM = Path("/dev/shm")
SHM_MIN_BYTES = 4 << 30   # a /dev/shm smaller than this (e.g. Docker's 64 MB) is not used


def default_root() -> Path:
    """Where job folders go: $ACCEL_ISOLATION_TMP, else a big enough /dev/shm, else the temp dir."""
    env = os.environ.get("ACCEL_ISOLATION_TMP")
    if env:
        return Path(env)
    try:
        st = os.statvfs(SHM)
        if st.f_frsize * st.f_bavail >= SHM_MIN_BYTES and os.access(SHM, os.W_OK):
            return SHM
    except OSError:
        pass
    return Path(tempfile.gettempdir())


def _plain(dtype: np.dtype) -> bool:
    return dtype.isbuiltin == 1 and dtype.kind not in "OV"


def _tag(dtype: np.dtype) -> str:
    """What names ``dtype`` exactly on the other side: its ``str`` (``>f4``) when that round-trips,
    else its name (ml_dtypes' types all read as ``<V2`` ... through ``str``); a structured dtype as
    plain bytes of its size (its fields cannot cross without a pickle; no contract asks for one)."""
    if np.dtype(dtype.str) == dtype:
        return dtype.str
    if dtype.fields is not None or dtype.subdtype is not None:
        return f"|V{dtype.itemsize}"
    return dtype.name


def dtype_by_name(name: str) -> np.dtype:
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def write_arrays(folder: Path, prefix: str, arrays: Mapping[str, np.ndarray]) -> list[list]:
    """Save each array; return [[name, file, raw_dtype_or_None, shape], ...] for the other side."""
    index = []
    for i, (name, value) in enumerate(arrays.items()):
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            raise TypeError(f"array {name!r} has dtype object; only numeric arrays can be transferred")
        path = folder / f"{prefix}{i}.npy"
        if _plain(arr.dtype):
            np.save(path, arr, allow_pickle=False)
            index.append([name, str(path), None, list(arr.shape)])
        else:
            raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            np.save(path, raw, allow_pickle=False)
            index.append([name, str(path), _tag(arr.dtype), list(arr.shape)])
    return index


def read_arrays(index: list, unlink: bool = False) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, path, raw_dtype, shape in index:
        size = os.path.getsize(path)
        if size >= MMAP_MIN_BYTES:
            # Copy-on-write map: writable by the reader, never written back; stays valid after unlink.
            arr = np.asarray(np.load(path, mmap_mode="c", allow_pickle=False))
        else:
            arr = np.load(path, allow_pickle=False)
        if raw_dtype is not None:
            arr = arr.view(dtype_by_name(raw_dtype)).reshape(shape)
        out[name] = arr
        if unlink:
            os.unlink(path)
    return out


def new_job_folder(root: Path, tag: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"accel-job-{tag}-", dir=root))


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
