"""Which error model judges a corpus case, from what its operator computes.

Classes (``classify``), each with its allowance (golden.py ``tolerances``):

- ``exact``: data movement (the output's elements are the input's, moved) and integer or boolean
  arithmetic: bit for bit, NaN by position, and the sign of zero by position, since moving a value
  (and abs, negation, floor, ceil, round: IEEE 754 sign-bit operations and roundToIntegral) keeps it.
- ``exact-value``: selections whose result is one of the inputs (max, min, relu, max-pool, sign):
  bit for bit and NaN by position, but not the sign of a zero, which IEEE 754 leaves open for
  maximum(-0, +0) (IEEE 754-2019 9.6: "maximum(+0, -0) ... either").
- ``ulp``: elementwise functions of float32, a bound in float32 ulps of the float64 result per
  function: the OpenCL C 1.2 full-profile single-precision table (Khronos, section 7.4, table 7.1),
  the accuracy accelerators' math libraries are held to; add, subtract and multiply are correctly
  rounded there (0.5 ulp) and x/y, 1/x are 2.5 ulp. Sigmoid is no OpenCL function:
  1/(1 + exp(-x)) with exp's 3 ulp (<= 6u relative), one rounding of the sum, 2.5 ulp of the
  quotient (<= 5u): (1 + 5u) / (1 - 7u - 6u**2) - 1 < 12.1u relative, and one ulp of y is > u|y|, so
  13 ulp.
- ``accumulation``: float32 sums and dot products, gamma_k times the sum of the terms' magnitudes
  (families/f32_reduction/golden.py's model, Higham Lemma 3.1: any order of summation): ReduceSum
  and ReduceL1 k = n-1, ReduceSumSquare k = n (the square rounds), ReduceMean k = n+1 (and the
  division), MatMul k = K, Gemm k = K+2 (alpha's product, beta's product and their sum). The sum
  of magnitudes is the operator itself, in float64, on |inputs| (alpha and beta as |alpha|, |beta|).
- ``corpus``: no model yet (expanded functions, whose nodes' errors compound; other dtypes; other
  operators): the corpus's own rtol / atol, and the case's ``error_model`` parameter says so.

The ``ulp`` and ``accumulation`` classes need a float64 reference: the single-node model with
every float32 tensor retyped to double, run by onnx.reference.ReferenceEvaluator on the inputs
widened to float64 (``float64_outputs``; done once, when the corpus is generated).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

DATA_MOVEMENT = frozenset({
    "Identity", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "GatherElements", "GatherND",
    "Squeeze", "Unsqueeze", "Flatten", "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "Compress",
    "Where", "ReverseSequence", "Trilu", "Shape", "Size", "OneHot", "CenterCropPad", "Abs", "Neg",
    "Floor", "Ceil", "Round", "SequenceAt", "SequenceConstruct", "SequenceInsert", "SequenceErase",
    "SequenceLength", "SequenceEmpty", "SplitToSequence", "ConcatFromSequence", "Optional",
    "OptionalHasElement", "OptionalGetElement", "IsNaN", "IsInf", "Equal", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "ArgMax", "ArgMin", "NonZero",
})
SELECTION = frozenset({"Max", "Min", "Relu", "ReduceMax", "ReduceMin", "MaxPool", "Sign", "TopK"})

# OpenCL C 1.2, 7.4 table 7.1 (single precision, full profile), in ulp.
OPENCL_ULP = {"Exp": 3.0, "Log": 3.0, "Sqrt": 3.0, "Erf": 16.0, "Tanh": 5.0, "Sin": 4.0, "Cos": 4.0, "Tan": 5.0,
              "Asin": 4.0, "Acos": 4.0, "Atan": 5.0, "Sinh": 4.0, "Cosh": 4.0, "Asinh": 4.0, "Acosh": 4.0,
              "Atanh": 5.0, "Pow": 16.0, "Reciprocal": 2.5, "Div": 2.5, "Add": 0.5, "Sub": 0.5, "Mul": 0.5}
ULP = {**OPENCL_ULP, "Sigmoid": 13.0}
ULP_SOURCE = {op: "OpenCL C 1.2 table 7.1" for op in OPENCL_ULP} | {
    "Sigmoid": "1/(1+exp(-x)) from OpenCL C 1.2 table 7.1's exp and x/y"}

ACCUMULATION = frozenset({"ReduceSum", "ReduceL1", "ReduceSumSquare", "ReduceMean", "MatMul", "Gemm"})
NEEDS_FLOAT64 = frozenset(ULP) | ACCUMULATION

_INTEGER_KINDS = "iub"


def _kinds(dtypes) -> set:
    out = set()
    for d in dtypes:
        if d in ("str", "bytes"):
            out.add("U")
        elif d.startswith(("seq(", "none")):
            out.add("seq")
        else:
            try:
                out.add(np.dtype(d).kind)
            except TypeError:        # an ml_dtypes name (bfloat16, float8_*, int4): not numpy's
                out.add("ml")
    return out


def wants_float64(op_type: str, expanded: bool, in_dtypes, out_dtypes) -> bool:
    """Whether a case of this operator gets a float64 reference (a float32 single-node case of a
    ``ulp`` or ``accumulation`` operator)."""
    floats = [d for d in list(in_dtypes) + list(out_dtypes) if d not in ("int64", "int32")]
    return (not expanded and op_type in NEEDS_FLOAT64 and bool(floats)
            and all(d == "float32" for d in floats))


def classify(params, has_float64: bool, float64_why: str = "") -> tuple[str, str]:
    """(class, what judges it, in words) for a case's parameters."""
    op, expanded = params["op_type"], params["expanded"]
    ins, outs = _kinds(params["in_dtypes"]), _kinds(params["out_dtypes"])
    if op in DATA_MOVEMENT and "ml" not in ins | outs:
        return "exact", "data movement: bit for bit, NaN and the sign of zero by position"
    if op in SELECTION and "ml" not in ins | outs:
        return "exact-value", "a selection: bit for bit and NaN by position (IEEE 754 leaves max(-0, +0)'s sign open)"
    if outs and (ins | outs) <= set(_INTEGER_KINDS) and "seq" not in ins | outs:
        return "exact", "integer or boolean arithmetic: bit for bit"
    if expanded:
        return "corpus", "no error model yet: an expanded function (its nodes' errors compound)"
    if op in NEEDS_FLOAT64 and wants_float64(op, expanded, params["in_dtypes"], params["out_dtypes"]):
        if not has_float64:
            return "corpus", f"no float64 reference ({float64_why or 'not computed'}): the corpus's own tolerance"
        if op in ULP:
            return "ulp", f"{ULP[op]:g} ulp of the float64 result ({ULP_SOURCE[op]})"
        return "accumulation", "gamma_k times the float64 sum of the terms' magnitudes (Higham Lemma 3.1)"
    return "corpus", f"no error model yet for {op} at {'/'.join(sorted(set(params['out_dtypes'])))}"


def reduction_terms(op: str, in_shapes, out_shapes, attrs: dict) -> Optional[int]:
    """n (the terms of each output's sum) or K (a dot product's length)."""
    if op == "MatMul":
        return int(in_shapes[0][-1]) if in_shapes[0] else 1
    if op == "Gemm":
        a = in_shapes[0]
        return int(a[0] if attrs.get("transA", 0) else a[1])
    size_in, size_out = int(np.prod(in_shapes[0])), int(np.prod(out_shapes[0]))
    return max(1, size_in // size_out) if size_out else None


def roundings(op: str, n: int) -> int:
    """k of gamma_k for ``op`` over n terms (see the module docstring)."""
    return {"ReduceSum": n - 1, "ReduceL1": n - 1, "ReduceSumSquare": n, "ReduceMean": n + 1,
            "MatMul": n, "Gemm": n + 2}[op]


# -- float64 references (run in the child that generates the corpus) -----------------------------

def _retyped(model, magnitude: bool):
    """The model with its float32 tensors as double (``magnitude``: Gemm's alpha and beta as their
    absolute values, so the model on |inputs| is the sum of the terms' magnitudes)."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        if vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    if magnitude:
        for node in m.graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.FLOAT:
                    a.f = abs(a.f)
    return m


def float64_outputs(model, op_type: str, inputs: list) -> tuple[Optional[list], Optional[list], str]:
    """(float64 outputs, float64 outputs on |inputs| for an accumulation, why not) of a float32
    single-node case: its model retyped to double, run by ReferenceEvaluator."""
    from onnx.reference import ReferenceEvaluator
    names = [i.name for i in model.graph.input]
    wide = [np.asarray(v, np.float64) if np.asarray(v).dtype == np.float32 else np.asarray(v) for v in inputs]
    try:
        with np.errstate(all="ignore"):
            ref = ReferenceEvaluator(_retyped(model, False)).run(None, dict(zip(names, wide)))
            mag = None
            if op_type in ACCUMULATION:
                absin = [np.abs(v) if v.dtype == np.float64 else v for v in wide]
                mag = ReferenceEvaluator(_retyped(model, True)).run(None, dict(zip(names, absin)))
    except Exception as exc:
        return None, None, f"ReferenceEvaluator at double raised {type(exc).__name__}"
    for r in list(ref) + list(mag or []):
        if np.asarray(r).dtype != np.float64:
            return None, None, f"ReferenceEvaluator at double returned {np.asarray(r).dtype}"
    return [np.asarray(r) for r in ref], None if mag is None else [np.asarray(r) for r in mag], ""
