"""Run one exported function of a compiled module with ``iree-run-module`` from the
``iree-base-runtime`` wheel: inputs and outputs go through ``.npy`` files, which the tool copies
to and from the device.

The GPU backends run this way rather than through ``iree.runtime``: the Python binding's
``to_host()`` maps the device buffer into the host, which lavapipe refuses ("host allocation
import pointer does not satisfy Vulkan minImportedHostPointerAlignment 4096", measured with IREE
3.13); ``--output=@file.npy`` copies. A run in its own process also gives a hung or crashed
device call a bound (HANG) and an exit status (CRASH) without touching the worker.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional, Sequence

import ml_dtypes
import numpy as np

from accel_regress.core.errors import Crash, Hang
from accel_regress.core.isolation.bounds import describe_status

TAIL_CHARS = 4000


def runtime_version() -> str:
    try:
        return importlib.metadata.version("iree-base-runtime")
    except importlib.metadata.PackageNotFoundError:
        return "missing"


@lru_cache(maxsize=1)
def tool_path() -> Optional[str]:
    """The wheel's ``iree-run-module`` (None when iree-base-runtime is missing)."""
    try:
        from iree._runtime import libs
        path = os.path.join(libs.library_path, "iree-run-module")
        if os.access(path, os.X_OK):
            return path
    except Exception:
        pass
    return shutil.which("iree-run-module")


def run_text(argv: Sequence[str], timeout_s: float = 60.0) -> subprocess.CompletedProcess:
    """Run a query of the tool (``--dump_devices``); never raises for a bad exit."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)


# MLIR element types -> numpy. i1 is stored one byte per element by IREE's HAL.
DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": ml_dtypes.bfloat16,
          "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "i1": np.bool_}
_ALIAS = re.compile(r"^(![\w.$-]+)\s*=\s*(.+?)\s*$", re.M)
_TENSOR = re.compile(r"tensor<((?:\d+x)*)([a-z]+\d+)>")
# The torch dialect's value tensors, as IREE's ONNX importer writes a function's signature
# (``!torch.vtensor<[3,4,5],f32>``, ``!torch.vtensor<[],si64>``): signed integers are ``si``.
_VTENSOR = re.compile(r"!torch\.vtensor<\[([\d,]*)\],s?([a-z]+\d+)>")


def result_types(mlir: str, entry: str) -> list[tuple[tuple[int, ...], np.dtype]]:
    """Shapes and element types of ``entry``'s results, read from its signature (aliases resolved).

    The outputs come back as raw bytes (``--output=@file.bin``): the tool's numpy writer refuses
    bf16 ("numpy_io.c: UNIMPLEMENTED; unsupported data encoding", IREE 3.13)."""
    aliases = dict(_ALIAS.findall(mlir))
    m = re.search(rf"func\.func @{re.escape(entry)}\((.*?)\)\s*->\s*(.*?)\s*(?:attributes\b.*?)?\{{", mlir, re.S)
    if m is None:
        raise ValueError(f"no func.func @{entry} with results in the program")
    results = re.sub(r"![\w.$-]+", lambda a: aliases.get(a.group(0), a.group(0)), m.group(2))
    out = []
    found = sorted([(m.start(), m.group(1).split("x"), m.group(2)) for m in _TENSOR.finditer(results)]
                   + [(m.start(), m.group(1).split(","), m.group(2)) for m in _VTENSOR.finditer(results)])
    for _, dims, et in found:
        if et not in DTYPES:
            raise ValueError(f"@{entry} returns {et}, which this runner cannot read back")
        out.append((tuple(int(d) for d in dims if d), np.dtype(DTYPES[et])))
    return out


def run(vmfb: Path, device: str, entry: str, args: Sequence[np.ndarray], outputs: Sequence[str],
        types: Sequence[tuple[tuple[int, ...], np.dtype]], timeout_s: float, what: str,
        env: Optional[Mapping[str, str]] = None) -> dict[str, np.ndarray]:
    """``iree-run-module --device=DEVICE --function=ENTRY``; outputs by name, HANG past ``timeout_s``,
    CRASH on a failed run with the tool's last words. ``env``: the child's environment (default
    this process's)."""
    tool = tool_path()
    if tool is None:
        raise Crash("iree-run-module not found (the iree-base-runtime wheel is not installed)", stage="run")
    with tempfile.TemporaryDirectory(prefix="accel-run-module-") as tmp:
        folder = Path(tmp)
        argv = [tool, f"--device={device}", f"--module={vmfb}", f"--function={entry}"]
        for i, arg in enumerate(args):
            np.save(folder / f"in{i}.npy", np.require(arg, requirements="C"), allow_pickle=False)   # 0-d stays 0-d
            argv.append(f"--input=@{folder / f'in{i}.npy'}")
        if len(types) != len(outputs):
            raise Crash(f"{what}: {entry} returns {len(types)} results, the program declares {len(outputs)} "
                        f"({', '.join(outputs)})", stage="run")
        argv += [f"--output=@{folder / f'out{i}.bin'}" for i in range(len(outputs))]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired as exc:
            tail = (exc.stderr or b"")[-TAIL_CHARS:]
            raise Hang(f"{what}: iree-run-module gave no result within {timeout_s:g} s", stage="run",
                       detail={"argv": " ".join(argv), "stderr": tail.decode(errors="replace")
                               if isinstance(tail, bytes) else tail}) from None
        if proc.returncode != 0:
            words = (proc.stderr or proc.stdout).strip()[-TAIL_CHARS:]
            how = describe_status(proc.returncode << 8 if proc.returncode > 0 else -proc.returncode)
            first = next((ln for ln in words.splitlines() if ln.strip()), "")
            raise Crash(f"{what}: iree-run-module {how}: {first[:300]}", stage="run",
                        detail={"argv": " ".join(argv), "stderr": words, "exit_code": proc.returncode})
        files = [folder / f"out{i}.bin" for i in range(len(outputs))]
        missing = [i for i, (f, (shape, dtype)) in enumerate(zip(files, types))
                   if not f.is_file() or f.stat().st_size != dtype.itemsize * int(np.prod(shape))]
        if missing:
            raise Crash(f"{what}: iree-run-module wrote {len(outputs) - len(missing)} of the "
                        f"{len(outputs)} outputs {entry} declares, of their size ({', '.join(outputs)})",
                        stage="run", detail={"stdout": proc.stdout[-TAIL_CHARS:]})
        return {name: np.fromfile(f, dtype=dtype).reshape(shape)
                for name, f, (shape, dtype) in zip(outputs, files, types)}
