"""Prebuilt NPU artifacts: which xclbin, instruction binary and kernel run a case, and how the
case's inputs and outputs map onto the kernel's buffer arguments.

The manifest is a JSON file (``$ACCEL_NPU_ARTIFACTS``, a file or a directory holding
``manifest.json``; paths in it are relative to the file)::

    {"format": "accel-regress-npu/1",
     "entries": [{
        "op": "gemm_partition_n", "case": "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4",
        "xclbin": "gemm.xclbin", "insts": "gemm.bin", "kernel": "MLIR_AIE",   # kernel: optional
        "insts_count": "words",           # optional: 3rd kernel argument in uint32 words (default) or bytes
        "device_kinds": ["npu4", "npu5", "npu6"],          # optional: where these binaries run
        "wait_ms": 5000, "macs": 8388608,                  # optional: the per-run bound, or the work
        "buffers": {                                       # every kernel buffer argument, in bytes
            "A":   {"dtype": "bfloat16", "shape": [64, 512], "from": "A"},
            "B_0": {"dtype": "bfloat16", "shape": [256, 512], "from": "B", "cols": [0, 64], "transpose": true},
            "C_0": {"dtype": "bfloat16", "shape": [64, 256]}},
        "runlist": [["A", "B_0", "C_0"]],                  # one entry per kernel run, args after the 3 fixed
        "outputs": {
            "C_0": {"buffer": "C_0"},
            "forward": {"concat": [{"buffer": "C_0", "rows": [0, 64], "cols": [0, 64]}],
                        "axis": 1, "expand_dims": 0}}}]}

A buffer with ``from`` is filled from that input: optional ``rows`` / ``cols`` slices, then an
optional ``transpose``, then zero-padded into ``shape`` and cast to ``dtype``. A buffer without
``from`` starts as zeros. An output reads one buffer (as its ``shape`` and ``dtype``, then
``transpose``, ``rows``, ``cols``) or concatenates several such reads. Device dtypes come back as
standard numpy dtypes (bfloat16 -> float32).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np
from ml_dtypes import bfloat16

from accel_regress.golden.case import Case

FORMAT = "accel-regress-npu/1"
ENV = "ACCEL_NPU_ARTIFACTS"

DTYPES = {"bfloat16": np.dtype(bfloat16), "float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
          "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8), "int16": np.dtype(np.int16),
          "uint16": np.dtype(np.uint16), "int32": np.dtype(np.int32), "uint32": np.dtype(np.uint32)}


class ManifestError(ValueError):
    """The manifest is unreadable or inconsistent; the message names the file and the field."""


@dataclass
class Buffer:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    source: Optional[str] = None
    rows: Optional[tuple[int, int]] = None
    cols: Optional[tuple[int, int]] = None
    transpose: bool = False

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize


@dataclass
class Entry:
    file: Path
    where: str                      # "entries[3]" for messages
    op: str
    case: str
    xclbin: Path
    insts: Path
    kernel: Optional[str]
    insts_count: str
    buffers: dict[str, Buffer]
    runlist: list[list[str]]
    outputs: dict[str, dict]
    device_kinds: Optional[list[str]] = None
    wait_ms: Optional[int] = None
    macs: Optional[int] = None
    raw: dict = field(default_factory=dict)

    def bad(self, what: str) -> ManifestError:
        return ManifestError(f"{self.file}: {self.where} ({self.op}/{self.case}): {what}")


def location() -> Optional[Path]:
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    return path / "manifest.json" if path.is_dir() else path


def _pair(value, where: str, file: Path) -> Optional[tuple[int, int]]:
    if value is None:
        return None
    if (not isinstance(value, list) or len(value) != 2 or not all(isinstance(v, int) for v in value)
            or value[0] < 0 or value[1] < value[0]):
        raise ManifestError(f"{file}: {where}: expected [start, stop] with 0 <= start <= stop, got {value!r}")
    return value[0], value[1]


def _buffer(name: str, spec: Any, where: str, file: Path) -> Buffer:
    if not isinstance(spec, dict):
        raise ManifestError(f"{file}: {where}: expected an object, got {type(spec).__name__}")
    dtype = spec.get("dtype")
    if dtype not in DTYPES:
        raise ManifestError(f"{file}: {where}.dtype: {dtype!r} is not one of {', '.join(DTYPES)}")
    shape = spec.get("shape")
    if not isinstance(shape, list) or not shape or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ManifestError(f"{file}: {where}.shape: expected a list of positive ints, got {shape!r}")
    source = spec.get("from")
    if source is not None and not isinstance(source, str):
        raise ManifestError(f"{file}: {where}.from: expected an input name, got {source!r}")
    return Buffer(name, DTYPES[dtype], tuple(shape), source, _pair(spec.get("rows"), f"{where}.rows", file),
                  _pair(spec.get("cols"), f"{where}.cols", file), bool(spec.get("transpose", False)))


def _entry(raw: Any, i: int, file: Path) -> Entry:
    where = f"entries[{i}]"
    if not isinstance(raw, dict):
        raise ManifestError(f"{file}: {where}: expected an object")
    missing = [k for k in ("op", "case", "xclbin", "insts", "buffers", "runlist", "outputs") if k not in raw]
    if missing:
        raise ManifestError(f"{file}: {where}: missing {', '.join(missing)}")
    base = file.parent
    buffers = raw["buffers"]
    if not isinstance(buffers, dict) or not buffers:
        raise ManifestError(f"{file}: {where}.buffers: expected a non-empty object")
    entry = Entry(file, where, str(raw["op"]), str(raw["case"]), base / str(raw["xclbin"]),
                  base / str(raw["insts"]), raw.get("kernel"), raw.get("insts_count", "words"),
                  {n: _buffer(n, s, f"{where}.buffers.{n}", file) for n, s in buffers.items()},
                  raw["runlist"], raw["outputs"], raw.get("device_kinds"), raw.get("wait_ms"),
                  raw.get("macs"), raw)
    if entry.insts_count not in ("words", "bytes"):
        raise entry.bad(f"insts_count must be 'words' or 'bytes', got {entry.insts_count!r}")
    if not isinstance(entry.runlist, list) or not entry.runlist:
        raise entry.bad("runlist: expected a non-empty list of argument lists")
    for j, args in enumerate(entry.runlist):
        if not isinstance(args, list) or not args:
            raise entry.bad(f"runlist[{j}]: expected a non-empty list of buffer names")
        unknown = [a for a in args if a not in entry.buffers]
        if unknown:
            raise entry.bad(f"runlist[{j}]: unknown buffer(s) {', '.join(map(str, unknown))}")
        if len(set(args)) != len(args):
            raise entry.bad(f"runlist[{j}]: a buffer appears twice in one run")
    if not isinstance(entry.outputs, dict) or not entry.outputs:
        raise entry.bad("outputs: expected a non-empty object")
    for name, spec in entry.outputs.items():
        for part in (spec.get("concat") if isinstance(spec, dict) and "concat" in spec else [spec]):
            if not isinstance(part, dict) or part.get("buffer") not in entry.buffers:
                raise entry.bad(f"outputs.{name}: every read needs a known 'buffer', got {part!r}")
    for key in ("wait_ms", "macs"):
        value = getattr(entry, key)
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise entry.bad(f"{key}: expected a positive int, got {value!r}")
    return entry


_cache: dict[tuple, dict] = {}


def load(path: Path) -> dict[tuple[str, str], Entry]:
    """(op, case id) -> Entry. Raises ManifestError naming the file and what is wrong."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the NPU artifact manifest ({exc.strerror})") from None
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key in _cache:
        return _cache[key]
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ManifestError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestError(f"{path}: expected an object with \"format\": \"{FORMAT}\"")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise ManifestError(f"{path}: \"entries\" must be a list")
    table: dict[tuple[str, str], Entry] = {}
    for i, raw in enumerate(entries):
        entry = _entry(raw, i, path)
        if (entry.op, entry.case) in table:
            raise entry.bad("a second entry for the same op and case")
        table[(entry.op, entry.case)] = entry
    _cache.clear()
    _cache[key] = table
    return table


def find(case: Case) -> Optional[Entry]:
    path = location()
    if path is None:
        return None
    return load(path).get((case.op, case.id))


# --- inputs -> buffer contents, buffer contents -> outputs -------------------------------------

def _cut(a: np.ndarray, rows, cols) -> np.ndarray:
    if rows is not None:
        a = a[rows[0]:rows[1]]
    if cols is not None:
        a = a[:, cols[0]:cols[1]]
    return a


def fill(entry: Entry, buf: Buffer, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The host contents of ``buf``: zeros, or its input sliced, transposed and padded into shape."""
    out = np.zeros(buf.shape, dtype=np.float64 if buf.dtype.kind == "f" or buf.dtype == DTYPES["bfloat16"]
                   else buf.dtype)
    if buf.source is not None:
        if buf.source not in inputs:
            raise entry.bad(f"buffers.{buf.name}.from: the case has no input {buf.source!r} "
                            f"(it has {', '.join(inputs)})")
        src = np.asarray(inputs[buf.source])
        if (buf.rows or buf.cols) and src.ndim != 2:
            raise entry.bad(f"buffers.{buf.name}: rows/cols need a 2-D input, {buf.source} is {src.shape}")
        src = _cut(src, buf.rows, buf.cols)
        if buf.transpose:
            src = src.T
        if src.ndim != len(buf.shape) or any(s > d for s, d in zip(src.shape, buf.shape)):
            raise entry.bad(f"buffers.{buf.name}: input {buf.source} gives {src.shape}, "
                            f"which does not fit the buffer shape {buf.shape}")
        out[tuple(slice(0, s) for s in src.shape)] = src
    return np.ascontiguousarray(out.astype(buf.dtype))


def _host_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == DTYPES["bfloat16"] or dtype == np.float16 else dtype


def _read(entry: Entry, spec: dict, contents: Mapping[str, np.ndarray]) -> np.ndarray:
    buf = entry.buffers[spec["buffer"]]
    a = contents[buf.name].astype(_host_dtype(buf.dtype))
    if spec.get("transpose"):
        a = a.T
    return np.ascontiguousarray(_cut(a, spec.get("rows"), spec.get("cols")))


def outputs(entry: Entry, contents: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for name, spec in entry.outputs.items():
        if "concat" in spec:
            a = np.concatenate([_read(entry, part, contents) for part in spec["concat"]],
                               axis=int(spec.get("axis", 0)))
        else:
            a = _read(entry, spec, contents)
        if "expand_dims" in spec:
            a = np.expand_dims(a, int(spec["expand_dims"]))
        out[name] = np.ascontiguousarray(a)
    return out


def output_buffers(entry: Entry) -> list[str]:
    """Buffers some output reads (these are synced back from the device)."""
    names: list[str] = []
    for spec in entry.outputs.values():
        for part in spec.get("concat", [spec]):
            if part["buffer"] not in names:
                names.append(part["buffer"])
    return names
