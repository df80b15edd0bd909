"""A corpus case's ONNX model is the corpus's own (accel_regress.onnx_programs)."""
from __future__ import annotations

from typing import Optional

from accel_regress.golden.case import Case
from accel_regress.families.onnx_node import golden as G
from accel_regress.toolchains.onnx.program import OnnxModel


def _kinds(names, values) -> tuple:
    return tuple((n, v["kind"] if v["kind"] != "sequence" else len(v["items"])) for n, v in zip(names, values))


def model(case: Case) -> OnnxModel:
    e = G.entry(case)
    return OnnxModel(G.corpus_of(case.params["corpus_key"]).model_bytes(e["name"]),
                     _kinds(e["input_names"], e["inputs"]), _kinds(e["output_names"], e["outputs"]))


def unsupported(case: Case) -> Optional[str]:
    """A random draw has no reference a runtime can be held to (error_models.py, ``random``)."""
    if case.params["error_model"] == "random":
        return f"not applicable: {case.params['judged_by']}"
    return None
