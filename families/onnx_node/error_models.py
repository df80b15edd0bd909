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
- ``transform``: DFT and STFT, y_k = sum_j x_j w^(jk) in float32: the n-1 complex sums give gamma_(n-1)
  of sum_j |x_j| (|x_j w_j| for an STFT window), and a twiddle made from the angle 2 pi jk / n
  (three roundings of an angle up to 2 pi (n-1)**2 / n, then a 4-ulp sin or cos) is off by at most
  (6 pi (n-1)**2 / n + 10) u, which multiplies the same sum; an inverse divides it by n.
- ``attention``: Attention at float32 or float16 (u the dtype's unit roundoff). The scores
  scale q.k (+ mask) of head size d are off by gamma_(d+2) scale sum|q||k| (+ 7u softcap through
  its 5-ulp tanh); a softmax weight moves by at most a relative 2 max_t(that) + gamma_(T+3) + 3u
  (exp), and Y = sum_t p_t v_t adds gamma_T: |dY| <= (that) sum_t p_t|v_t| + u|Y|; present_key /
  present_value are copies (exact); qk_matmul_output gets the scores' bound (softmax's for mode 3).
- ``normalization``: LayerNormalization and RMSNormalization at float32 over the n elements from
  ``axis`` on: the mean is off by gamma_n mean|x|, the variance (bounded as the one-pass
  mean(x^2) - mean^2, which covers the two-pass form) by gamma_(n+2) mean(x^2) + 2|mean| e_mean +
  u mean^2, so r = 1/sqrt(var + eps) by half that over var + eps plus 11u (sqrt 3 ulp, x/y 2.5 ulp);
  |dy_i| <= |g_i| r (u|x_i - m| + e_mean + |x_i - m| e_r) + 3u |g_i (x_i - m) r| + u|y_i|.
- ``random``: a draw from a random number generator (Bernoulli, RandomNormal/Uniform(Like),
  Multinomial, training-mode Dropout with a nonzero ratio): the corpus's output is numpy's draw,
  which no other generator reproduces, so no backend is judged against it (NOT_APPLICABLE).
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
TRANSFORM = frozenset({"DFT", "STFT"})
ATTENTION = frozenset({"Attention"})
NORMALIZATION = frozenset({"LayerNormalization", "RMSNormalization"})
NEEDS_FLOAT64 = frozenset(ULP) | ACCUMULATION | TRANSFORM | ATTENTION | NORMALIZATION
UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float16": 2.0 ** -11}
RANDOM = frozenset({"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                    "Multinomial"})

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
    if op_type in ATTENTION:        # one float dtype throughout, float32 or float16 (a mask may be bool)
        kinds = {d for d in list(in_dtypes) + list(out_dtypes) if d not in ("int64", "int32", "bool")}
        return not expanded and len(kinds) == 1 and kinds <= set(UNIT_ROUNDOFF)
    floats = [d for d in list(in_dtypes) + list(out_dtypes) if d not in ("int64", "int32")]
    return (not expanded and op_type in NEEDS_FLOAT64 and bool(floats)
            and all(d == "float32" for d in floats))


def classify(params, has_float64: bool, float64_why: str = "") -> tuple[str, str]:
    """(class, what judges it, in words) for a case's parameters."""
    op, expanded = params["op_type"], params["expanded"]
    ins, outs = _kinds(params["in_dtypes"]), _kinds(params["out_dtypes"])
    if params.get("random_draw"):
        return "random", ("a random draw: the corpus's output is numpy's generator's, which no backend's "
                          "generator reproduces")
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
        if op in ATTENTION:
            return "attention", ("(2 max_t gamma_(d+2) scale sum|q||k| + gamma_(T+3) + 3u + gamma_T) times the "
                                 "float64 sum_t p_t|v_t|, plus u|Y| (u of the case's dtype)")
        if op in NORMALIZATION:
            return "normalization", ("gamma_n of the mean and gamma_(n+2) of a one-pass variance through "
                                     "1/sqrt(var + eps) (11u), times |scale|, plus 3u of the product")
        if op in TRANSFORM:
            return "transform", ("(gamma_(n-1) + (6 pi (n-1)^2/n + 10) u) times the float64 sum of |x_j| "
                                 "(twiddles from the angle 2 pi jk/n)")
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


def transform_bound(n: int, u: float) -> tuple[float, float]:
    """(the relative factor of sum_j |x_j| for an n-point DFT, the twiddles' part of it)."""
    twiddle = (6.0 * np.pi * (n - 1) ** 2 / n + 10.0) * u
    return (n - 1) * u / (1.0 - (n - 1) * u) + twiddle, twiddle


def random_draw(op: str, feeds: dict, node) -> bool:
    """Whether the case's output is a random draw (see ``random`` above)."""
    if op in RANDOM:
        return True
    if op != "Dropout":
        return False
    names = list(node.input) + [""] * 3
    training = feeds.get(names[2]) if names[2] else None
    if training is None or not bool(np.asarray(training)):
        return False
    ratio = feeds.get(names[1]) if names[1] else None
    return bool(0.5 if ratio is None else float(np.asarray(ratio)))


def _node_inputs(model, inputs: list) -> list:
    """The node's inputs by position (None where absent), from the graph's inputs."""
    feeds = dict(zip([i.name for i in model.graph.input], inputs))
    return [feeds.get(n) if n else None for n in model.graph.node[0].input]


def _int_attr(node, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def transform_magnitude(model, op: str, inputs: list, out_shape) -> tuple[np.ndarray, int]:
    """(sum_j |x_j| over each output's terms, broadcast to the output's shape; n the transform's length)."""
    node = model.graph.node[0]
    args = _node_inputs(model, inputs)
    x = np.asarray(args[0], np.float64)
    a = np.hypot(x[..., 0], x[..., 1]) if x.shape[-1] == 2 else np.abs(x[..., 0])
    out_shape = tuple(out_shape)
    if op == "DFT":
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
        if opset >= 20:
            axis = int(np.asarray(args[2])) if len(args) > 2 and args[2] is not None else -2
        else:
            axis = _int_attr(node, "axis", 1)
        axis %= x.ndim
        onesided_inverse = bool(_int_attr(node, "inverse", 0) and _int_attr(node, "onesided", 0))
        n = max(x.shape[axis], out_shape[axis])
        total = a.sum(axis=axis, keepdims=True) * (2.0 if onesided_inverse else 1.0)
        if _int_attr(node, "inverse", 0):
            total = total / n
        return np.broadcast_to(total[..., None], out_shape).copy(), n
    # STFT: signal [batch, length, 1|2], frame_step, window?, frame_length?
    step = int(np.asarray(args[1]))
    window = np.abs(np.asarray(args[2], np.float64)) if len(args) > 2 and args[2] is not None else None
    if len(args) > 3 and args[3] is not None:
        n = int(np.asarray(args[3]))
    elif window is not None:
        n = len(window)
    else:
        raise ValueError("an STFT with neither window nor frame_length")
    w = np.ones(n) if window is None else window
    frames = out_shape[1]
    mag = np.stack([(a[:, f * step:f * step + n] * w).sum(axis=1) for f in range(frames)], axis=1)
    return np.broadcast_to(mag[:, :, None, None], out_shape).copy(), n


def _attention_variant(model, qk_mode: Optional[int]):
    """The Attention model at double; ``qk_mode``: with qk_matmul_output in that mode as its only
    output (None: as it is)."""
    import onnx
    m = _retyped(model, False)
    if qk_mode is None:
        return m
    node = m.graph.node[0]
    out = list(node.output) + [""] * 4
    out[3] = out[3] or "accel_qk"
    del node.output[:]
    node.output.extend(out[:4])
    kept = [a for a in node.attribute if a.name != "qk_matmul_output_mode"]
    del node.attribute[:]
    node.attribute.extend(kept + [onnx.helper.make_attribute("qk_matmul_output_mode", qk_mode)])
    del m.graph.output[:]
    m.graph.output.extend([onnx.helper.make_tensor_value_info(out[3], onnx.TensorProto.DOUBLE, None)])
    return m


def attention_magnitudes(model, names: list, wide: list) -> list:
    """[scale sum_h |q_h||k_h| per score (B, Hq, S, T), sum_t p_t |v_t| in Y's layout]."""
    from onnx.reference import ReferenceEvaluator
    node = model.graph.node[0]
    feeds = dict(zip(names, wide))
    absqk = dict(feeds)
    for slot in (0, 1, 4):       # Q, K, past_key
        if len(node.input) > slot and node.input[slot]:
            absqk[node.input[slot]] = np.abs(feeds[node.input[slot]])
    scores, = ReferenceEvaluator(_attention_variant(model, 0)).run(None, absqk)
    absv = dict(feeds)
    for slot in (2, 5):          # V, past_value
        if len(node.input) > slot and node.input[slot]:
            absv[node.input[slot]] = np.abs(feeds[node.input[slot]])
    pv = list(ReferenceEvaluator(_attention_variant(model, None)).run(None, absv))[0]
    return [np.asarray(scores, np.float64), np.asarray(pv, np.float64)]


def attention_allowances(node_attrs: dict, q_shape, ref: list, mags: list, slots: list,
                         u: float) -> list:
    """Each graph output's allowance (see ``attention`` above), in the graph's order; ``slots``:
    each one's position among the node's outputs (0 Y, 1-2 present key / value, 3 qk_matmul_output)."""
    scores, pv = mags
    q_heads = int(node_attrs.get("q_num_heads", 0) or 0)
    d = int(q_shape[-1]) if len(q_shape) == 4 else int(q_shape[-1]) // max(q_heads, 1)
    T = scores.shape[-1]
    g = lambda k: k * u / (1.0 - k * u)      # noqa: E731
    softcap = float(node_attrs.get("softcap", 0.0) or 0.0)
    e_scores = g(d + 2) * scores + 7.0 * u * softcap
    with np.errstate(invalid="ignore"):
        row = np.nanmax(np.where(np.isfinite(e_scores), e_scores, np.nan), axis=-1)      # (B, Hq, S)
    row = np.nan_to_num(row)
    factor = 2.0 * row + g(T + 3) + 3.0 * u + g(T)
    y = np.asarray(ref[list(slots).index(0)], np.float64)
    if y.ndim == 4:
        fy = factor[..., None]
    else:                         # 3D Y (B, S, Hq * Hv)
        hv = y.shape[-1] // factor.shape[1]
        fy = np.repeat(np.transpose(factor, (0, 2, 1)), hv, axis=-1)
    mode = int(node_attrs.get("qk_matmul_output_mode", 0) or 0)
    out = []
    for slot, value in zip(slots, ref):
        r = np.asarray(value, np.float64)
        if slot == 0:
            out.append(np.broadcast_to(fy, y.shape) * np.abs(pv) + u * np.abs(y))
        elif slot == 3:
            finite = np.abs(np.where(np.isfinite(r), r, 0.0))
            out.append(factor[..., None] * finite + u * finite if mode == 3
                       else np.broadcast_to(e_scores, r.shape) + u * finite)
        else:
            out.append(np.zeros(r.shape))           # present_key / present_value: copies
    return out


def normalization_allowances(op: str, attrs: dict, inputs: list, ref: list, u: float = 2.0 ** -24) -> list:
    """Each output's allowance (Y; LayerNormalization's Mean and InvStdDev), see ``normalization``."""
    x = np.asarray(inputs[0], np.float64)
    scale = np.abs(np.asarray(inputs[1], np.float64))
    axis = int(attrs.get("axis", -1)) % x.ndim
    eps = float(attrs.get("epsilon", 1e-5))
    dims = tuple(range(axis, x.ndim))
    n = int(np.prod([x.shape[d] for d in dims]))
    g = lambda k: k * u / (1.0 - k * u)      # noqa: E731
    if op == "RMSNormalization":
        mean = np.zeros_like(x.sum(axis=dims, keepdims=True))
        e_mean = mean
        var = (x * x).mean(axis=dims, keepdims=True)
        e_var = g(n + 1) * var
    else:
        mean = x.mean(axis=dims, keepdims=True)
        e_mean = g(n) * np.abs(x).mean(axis=dims, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=dims, keepdims=True)
        e_var = g(n + 2) * (x * x).mean(axis=dims, keepdims=True) + 2 * np.abs(mean) * e_mean + u * mean ** 2
    r = 1.0 / np.sqrt(var + eps)
    e_r = 0.5 * e_var / (var + eps) + 11.0 * u
    d = np.abs(x - mean)
    y = np.asarray(ref[0], np.float64)
    out = [scale * r * (u * d + e_mean + d * e_r) + 3.0 * u * scale * d * r + u * np.abs(y)]
    for extra in ref[1:]:          # LayerNormalization's Mean, then InvStdDev
        out.append(np.broadcast_to(e_mean if len(out) == 1 else e_r * r, np.shape(extra)).copy())
    return out


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
        if vi.type.tensor_type.elem_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16):
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
    wide = [np.asarray(v, np.float64) if np.asarray(v).dtype in (np.float32, np.float16) else np.asarray(v)
            for v in inputs]
    try:
        with np.errstate(all="ignore"):
            ref = list(ReferenceEvaluator(_retyped(model, False)).run(None, dict(zip(names, wide))))
            mag: Optional[list] = None
            if op_type in ATTENTION:
                mag = attention_magnitudes(model, names, wide)
            elif op_type in TRANSFORM:
                mag = [transform_magnitude(model, op_type, wide, np.shape(ref[0]))[0]]
            elif op_type in ACCUMULATION:
                absin = [np.abs(v) if v.dtype == np.float64 else v for v in wide]
                mag = list(ReferenceEvaluator(_retyped(model, True)).run(None, dict(zip(names, absin))))
    except Exception as exc:
        return None, None, f"ReferenceEvaluator at double raised {type(exc).__name__}"
    for r in list(ref) + list(mag or []):
        if np.asarray(r).dtype != np.float64:
            return None, None, f"ReferenceEvaluator at double returned {np.asarray(r).dtype}"
    return [np.asarray(r) for r in ref], None if mag is None else [np.asarray(r) for r in mag], ""
