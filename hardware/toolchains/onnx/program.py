"""One ONNX model per case: the kind of program the ``onnxruntime`` backends run.

A family registers a module in the entry-point group ``accel_regress.onnx_programs`` under its id
with ``model(case) -> OnnxModel``: the serialized ModelProto and how the case's named arrays map to
the graph's inputs and outputs (a sequence value's items are the arrays ``<name>[<j>]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol

import numpy as np

from accel_regress.core import registry
from accel_regress.core.contracts import ProgramKind
from accel_regress.golden.case import Case


@dataclass(frozen=True)
class OnnxModel:
    model: bytes
    # graph input / output name -> "tensor", "none" (an absent optional: not fed) or the item
    # count of a sequence, in graph order
    inputs: tuple[tuple[str, Any], ...]
    outputs: tuple[tuple[str, Any], ...]

    def feeds(self, arrays: Mapping[str, np.ndarray]) -> dict:
        out: dict = {}
        for name, kind in self.inputs:
            if kind == "tensor":
                out[name] = arrays[name]
            elif kind != "none":
                out[name] = [arrays[f"{name}[{j}]"] for j in range(int(kind))]
        return out

    def named(self, results) -> dict[str, np.ndarray]:
        """A runtime's results (graph output order) as the case's named arrays."""
        out = {}
        for (name, _), value in zip(self.outputs, results):
            if isinstance(value, (list, tuple)):
                out.update({f"{name}[{j}]": np.asarray(v) for j, v in enumerate(value)})
            elif value is not None:
                out[name] = np.asarray(value)
        return out


class OnnxProgram(Protocol):
    """``accel_regress.onnx_programs``: the case as an ONNX model."""

    def model(self, case: Case) -> Any: ...


class OnnxProgramOptional(Protocol):
    def unsupported(self, case: Case) -> Optional[str]: ...


ONNX_PROGRAMS = ProgramKind("onnx_program", "accel_regress.onnx_programs", OnnxProgram, OnnxProgramOptional)


def unsupported_case(case: Case) -> Optional[str]:
    reason = registry.missing_program(ONNX_PROGRAMS, case.op)
    if reason:
        return reason
    check = getattr(registry.module_for(ONNX_PROGRAMS, case.op), "unsupported", None)
    return check(case) if check is not None else None


def model_for(case: Case) -> OnnxModel:
    return registry.module_for(ONNX_PROGRAMS, case.op).model(case)
