"""Arrays between the pytest process and a worker: one file of raw bytes each in a per-job folder,
its dtype and shape in the index that travels in the (JSON) message.

The folder lives on /dev/shm when it is big enough (tmpfs: writing is a memory copy, and a big
array is read back as a copy-on-write memory map, so a 0.5 GB output costs one copy, never a
pickle through a pipe). Nothing is pickled: a file holds the array's bytes in C order and nothing
else. The dtype travels as its full ``dtype.str`` (byte order included: a byte-swapped ``>f4``, a
``V8`` void), or by name where ``str`` does not say it (ml_dtypes' bfloat16, ... read as ``<V2``):
the reader gets the dtype the backend returned, so the output contract sees it (issue 26 item 1).
Raw files, not .npy: both ends run this module's code, and np.save / np.load spend 60-120 us per
array on the .npy header (np.load parses it with ``ast.literal_eval``) for arrays that are mostly
kilobytes, several per run.
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
    plain bytes of its size (its fields cannot cross without a pickle; no contract asks for one).
    ml_dtypes' float8_e5m2 reads as ``<f1``, which np.dtype() refuses: a name, as the others."""
    try:
        if np.dtype(dtype.str) == dtype:
            return dtype.str
    except TypeError:
        pass
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
    """Save each array's bytes; return [[name, file, dtype tag, shape], ...] for the other side."""
    index = []
    for i, (name, value) in enumerate(arrays.items()):
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            raise TypeError(f"array {name!r} has dtype object; only numeric arrays can be transferred")
        path = folder / f"{prefix}{i}.bin"
        if _plain(arr.dtype):
            arr.tofile(path)             # C order whatever the array's layout
        else:
            np.ascontiguousarray(arr).reshape(-1).view(np.uint8).tofile(path)
        index.append([name, str(path), _tag(arr.dtype), list(arr.shape)])
    return index


def read_arrays(index: list, unlink: bool = False) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, path, tag, shape in index:
        dtype = dtype_by_name(tag)
        size = os.path.getsize(path)
        if size >= MMAP_MIN_BYTES:
            # Copy-on-write map: writable by the reader, never written back; stays valid after unlink.
            arr = np.asarray(np.memmap(path, dtype=np.uint8, mode="c")).view(dtype).reshape(shape)
        elif _plain(dtype):
            arr = np.fromfile(path, dtype=dtype)
            # In place, so the array owns its data as np.load's did (assigning .shape is deprecated
            # from numpy 2.5, seen on the GPU machine).
            arr.resize(tuple(shape), refcheck=False)
        else:
            arr = np.fromfile(path, dtype=np.uint8).view(dtype).reshape(shape)
        out[name] = arr
        if unlink:
            os.unlink(path)
    return out


def new_job_folder(root: Path, tag: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"accel-job-{tag}-", dir=root))


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
