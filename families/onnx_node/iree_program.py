"""A corpus case for the IREE backends (accel_regress.iree_programs): its ONNX model imported by
IREE's own ONNX importer, ``python -m iree.compiler.tools.import_onnx model.onnx -o model.mlir``
(the ``iree-import-onnx`` entry point of iree-base-compiler; iree-org/iree
``compiler/bindings/python/iree/compiler/tools/import_onnx/__main__.py``), whose torch-dialect
module iree-compile takes as it is. The function is named after the graph (the case's name), its
arguments and results in graph order.

Only the operator types in ``OP_TYPES`` for now, on tensors of numpy dtypes: the rest of the corpus
SKIPs on the IREE backends with the reason. The imported text is kept in the cache root, keyed by
the model's bytes and the importer's (iree-base-compiler's) version, so a session imports each model
once; iree-compile's own cache keys the module.
"""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from accel_regress.core.errors import CompileError
from accel_regress.golden.case import Case
from accel_regress.families.onnx_node import golden as G
from accel_regress.families.onnx_node import onnx_program
from accel_regress.util.derived_cache import DerivedCache

RISCV_VARIANTS = False           # the case's parameters name no RISC-V build
# Why a static-library harness (qemu-rvv's) cannot run these programs: the module iree-compile
# builds from the importer's torch-dialect function has no hal.device.queue.execute.indirect for
# the harness to replay (its build check said so for every case of the default sample).
HARNESS_CANNOT_RUN = ("the ONNX importer's module runs through IREE's runtime only: it has no "
                      "hal.device.queue.execute.indirect schedule for a static-library harness to replay")
# The operator types run through the importer so far (single-node float32 cases of every error class).
OP_TYPES = frozenset({"Softmax", "Exp", "Erf", "Sigmoid", "Tanh", "MatMul", "Gemm", "Transpose", "Relu", "Add"})
_DTYPES = {"float32", "int64", "int32"}
IMPORT_TIMEOUT_S = 300.0
_MLIR = DerivedCache("onnx-mlir", "ACCEL_ONNX_MLIR_CACHE", ".mlir", 8192)


def unsupported(case: Case) -> Optional[str]:
    p = case.params
    if p["op_type"] not in OP_TYPES:
        return f"the IREE path of the ONNX corpus runs {', '.join(sorted(OP_TYPES))} so far, not {p['op_type']}"
    odd = sorted(set(p["in_dtypes"] + p["out_dtypes"]) - _DTYPES)
    if odd:
        return f"the IREE path of the ONNX corpus carries {', '.join(sorted(_DTYPES))} tensors so far, not {', '.join(odd)}"
    return None


def _importer_version() -> str:
    from importlib import metadata
    try:
        return metadata.version("iree-base-compiler")
    except metadata.PackageNotFoundError:
        return "none"


def imported(model: bytes, name: str) -> str:
    """The model's MLIR as IREE's ONNX importer writes it (cached)."""
    key = hashlib.sha256(_importer_version().encode() + b"\0" + model).hexdigest()
    cached = _MLIR.read(key)
    if cached is not None:
        return cached.decode()
    with tempfile.TemporaryDirectory(prefix="accel-onnx-import-") as tmp:
        src, out = Path(tmp) / "model.onnx", Path(tmp) / "model.mlir"
        src.write_bytes(model)
        argv = [sys.executable, "-m", "iree.compiler.tools.import_onnx", str(src), "-o", str(out)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CompileError(f"IREE's ONNX importer took more than {IMPORT_TIMEOUT_S:g} s on {name}",
                               detail={"diagnostic": "timeout"}) from None
        if done.returncode != 0 or not out.is_file():
            words = (done.stderr or done.stdout).strip()
            raise CompileError(f"IREE's ONNX importer rejected {name} (exit {done.returncode}): {words[-1500:]}",
                               detail={"diagnostic": words}) from None
        text = out.read_text()
    _MLIR.write(key, text.encode())
    return text


_MODULE = re.compile(r"\A\s*module\s*\{\n(?P<body>.*)\n\}\s*\Z", re.S)


def unwrapped(text: str) -> str:
    """The importer's functions without its bare ``module { ... }``: a backend that wraps the
    program in a module of its own (iree-vulkan's ``hal.device.targets``) otherwise nests it, and
    iree-compile's torch input conversion leaves the inner module's functions unconverted ("failed
    to legalize unresolved target materialization ... !torch.vtensor": every case on iree-vulkan)."""
    m = _MODULE.match(text)
    return m.group("body") if m else text


def program(case: Case):
    from accel_regress.toolchains.iree.program import Program
    e = G.entry(case)
    onnx = onnx_program.model(case)
    return Program(mlir=unwrapped(imported(onnx.model, case.id)), entry=e["name"], inputs=tuple(e["input_names"]),
                   outputs=tuple(e["output_names"]))
