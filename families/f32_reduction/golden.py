"""The f32 reduction family (seed 004): cases, inputs, float64 references and the error model.

Kinds with an f32 reduction: ``row_sum``, ``mean_var`` (mean and two-pass variance),
``layernorm``, ``rmsnorm``, ``softmax`` (max + sum(exp)), ``log_softmax`` (x - max - log(sum(exp))),
``matmul`` (f32) and ``bmm`` (f32 batched matmul). Controls that seed 004 found healthy (``has_f32_reduction`` False): ``rsqrt``,
``sqrt``, ``erf``, ``cvt`` (f32 -> i32 truncation and i32 -> f32), ``divide`` and ``i8_matmul``
(i8 x i8 -> i32).

Shapes (``params['shape']``): row kinds (M, N) reducing over N; ``matmul`` (M, K, N); ``bmm``
(B, M, K, N); ``i8_matmul`` (M, K, N); elementwise (N,).

Error model
-----------
u = 2**-24 (f32 unit roundoff), gamma_n = n*u / (1 - n*u).

Summation of n terms in any order. Every order of summing n numbers is a binary tree of n-1
additions (sequential order: a left-leaning chain; ``vfredusum``/pairwise: a balanced tree; VLEN
lanes of strided partial sums then a tree across the lanes: a forest joined by a tree). Each
addition rounds once, fl(a+b) = (a+b)(1+d) with |d| <= u, so the computed sum is
sum_i x_i * prod_{j in path(i)} (1+d_j), where path(i) is the set of additions above leaf i. A
path has at most n-1 additions whatever the tree's shape, and |prod (1+d_j) - 1| <= gamma_k for
k <= n-1 factors (Higham, Accuracy and Stability, Lemma 3.1). Hence
|fl(sum) - sum| <= gamma_{n-1} * sum |x_i| for a tree reduction and a sequential one alike; the
order changes which bound is tight, never the bound. Each further rounding a term goes through
(forming a product, a square, a division) adds one factor: gamma_{n-1+r}. An FMA rounds a
product and a sum once, which only removes a factor. The reference is float64 on the same f32
inputs, so the only error is the device's.

Library functions are held to the OpenCL C single-precision accuracy table (full profile):
exp 3 ulp, log 3 ulp, erf 16 ulp, rsqrt 2 ulp, sqrt 3 ulp, x/y 2.5 ulp; one ulp of y is at most 2u|y|.
Conversions and integer matmuls are exact (tolerance 0). Each kind's propagation is in its
``_tol_*`` function below; terms of second order (a product of two O(n*u) quantities) are kept
by dividing by (1 - eps) where they arise.

Statistical check (golden/tolerance.py ``ErrorModel``, kind ``accumulation``): a sum's bound
gamma_k * S counts k roundings, each within u*S; rounded to nearest they are zero-mean and
independent, so the error's sigma is at most bound/sqrt(k) (k = n-1 for a row sum, n+1 for a
mean, n+3 for the variance, K for a dot product). Library functions (exp, log, rsqrt, erf, ...) are
held only to an ulp bound with no promised mean: their share of the allowance (the allowance minus
the same model with no library error) may be a bias. LayerNorm, RMSNorm, softmax and log-softmax
share the row's mean, rsqrt, sum or log(sum) across the row, so a row is one term of the
statistics, whose sigma is the allowance less its library share (k = 1). The library
controls (rsqrt, sqrt, erf, divide) have nothing but a library bound (no statistical check);
conversions and the i8 matmul are exact (bit for bit).
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case, case_seed
from accel_regress.golden.dtypes import F32_UNIT_ROUNDOFF as U
from accel_regress.golden.tolerance import MEAN_RESOLUTION, P_FALSE_ALARM, ErrorModel, exact_model

OP = "f32_reduction"

REDUCTIONS = ("row_sum", "mean_var", "layernorm", "rmsnorm", "softmax", "log_softmax", "matmul", "bmm")
CONTROLS = ("rsqrt", "sqrt", "erf", "cvt", "divide", "i8_matmul")
KINDS = REDUCTIONS + CONTROLS

# Seed 004's micro-test shapes (mt_vit_d1_layernorm 64x128, mt_softmax_64x64, mt_bmm_4x64x64,
# mt_matmul_64x128 (64x128x128), the 64-element elementwise tests, mt_mm_i8_64x128). log_softmax
# is no seed-004 micro-test: it takes softmax's shape.
SEED_SHAPES = {
    "row_sum": (64, 128), "mean_var": (64, 128), "layernorm": (64, 128), "rmsnorm": (64, 128),
    "softmax": (64, 64), "log_softmax": (64, 64), "matmul": (64, 128, 128), "bmm": (4, 64, 64, 64),
    "rsqrt": (64,), "sqrt": (64,), "erf": (64,), "cvt": (64,), "divide": (64,),
    "i8_matmul": (64, 128, 128),
}
# Reduction lengths with tails: VLEN 128/256/512 hold 4/8/16 f32 per register (x LMUL per group);
# 1, 7, 33 and 127 leave a tail at every VLEN, 1000 at VLEN 512 and at LMUL >= 4 groups.
TAIL_LENGTHS = (1, 7, 33, 127, 1000)
TAIL_ROWS = 4

EPS = float(np.float32(1e-5))        # LayerNorm / RMSNorm epsilon, exactly as the f32 program holds it

# OpenCL C 1.2 full-profile single-precision ulp bounds (section 7.4, table 7.1).
ULP_BOUND = {"exp": 3.0, "log": 3.0, "erf": 16.0, "rsqrt": 2.0, "sqrt": 3.0, "divide": 2.5}


def gamma(n: int) -> float:
    n = max(int(n), 0)
    return n * U / (1.0 - n * U)


def has_f32_reduction(kind: str) -> bool:
    return kind in REDUCTIONS


def reduction_length(kind: str, shape) -> int:
    if kind in ROW_KINDS:
        return shape[1]
    if kind in ("matmul", "i8_matmul"):
        return shape[1]
    if kind == "bmm":
        return shape[2]
    return 1


def case_id(kind: str, shape, variant: str, vlen: int) -> str:
    return f"{kind}-{'x'.join(map(str, shape))}-{variant}-vlen{vlen}"


# Input classes (golden/inputs.py) per kind, and why a kind has no case of a class:
# shifted needs a reduction to cancel in; exact and ties need a result that is one rounding of an
# exact value, which only sums and dot products give here (a mean, a square root, exp, a quotient
# are not exact, and midpoints of a quotient or a square root do not exist in binary); cvt's
# f32 -> i32 of inf or NaN is undefined (LLVM fptosi: poison), so it has no specials.
CLASS_KINDS = {
    "normal": KINDS,
    "shifted": REDUCTIONS,
    "exact": ("row_sum", "matmul", "bmm"),
    "ties": ("row_sum", "matmul", "bmm"),
    "specials": ("row_sum", "softmax", "log_softmax", "matmul", "bmm", "sqrt", "rsqrt", "divide", "erf"),
    "subnormal": ("row_sum", "matmul", "bmm", "sqrt", "rsqrt", "divide"),
}
SUMS = ("row_sum", "matmul", "bmm")      # bit-exact under the bit-exact classes
ROW_KINDS = ("row_sum", "mean_var", "layernorm", "rmsnorm", "softmax", "log_softmax")
ELEMENTWISE = ("rsqrt", "sqrt", "erf", "divide")


def make_case(kind: str, shape, variant: str = "v", vlen: int = 256, base_seed: int = 0,
              inputs: str = gen.DEFAULT_CLASS) -> Case:
    """``variant`` names a RISC-V build (the IREE backends map it to flags: v, novec, v-vw0,
    v-zvl512b, v-reassoc); ``vlen`` the simulated vector length. Neither changes the numbers.
    ``inputs`` is the input class (``CLASS_KINDS`` says which kinds have which)."""
    if kind not in KINDS:
        raise ValueError(f"unknown f32_reduction kind {kind!r}; known: {', '.join(KINDS)}")
    if kind not in CLASS_KINDS[gen.class_of({"inputs": inputs})]:
        raise ValueError(f"f32_reduction kind {kind!r} has no {inputs!r} inputs (see CLASS_KINDS)")
    shape = tuple(int(d) for d in shape)
    dtype = "i8" if kind == "i8_matmul" else "f32"
    params = {"kind": kind, "shape": list(shape), "dtype": dtype, "variant": variant, "vlen": int(vlen),
              "has_f32_reduction": has_f32_reduction(kind), "inputs": inputs}
    # Inputs depend on kind, shape and class only, so every variant and VLEN sees the same numbers.
    input_id = gen.seed_id(f"{kind}-{'x'.join(map(str, shape))}", inputs)
    return Case(OP, case_id(kind, shape, variant, vlen), params, case_seed(OP, input_id, base_seed))


def test_id(case: Case) -> str:
    return f"{case.id}-{gen.class_of(case.params)}"


def bit_exact(case: Case) -> bool:
    return gen.class_of(case.params) in gen.BIT_EXACT_CLASSES and case.params["kind"] in SUMS


def zero_sign(case: Case) -> bool:
    """Elementwise results of the specials and subnormal classes carry an IEEE-defined zero sign
    (sqrt(-0) = -0, -0 / 1 = -0); a sum's zero sign depends on the accumulator's initial zero."""
    return gen.class_of(case.params) in ("specials", "subnormal") and case.params["kind"] in ELEMENTWISE


def _f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    """Deterministic inputs (golden/inputs.py generators), rounded once to the device dtype."""
    kind, shape = case.params["kind"], tuple(case.params["shape"])
    g = gen.rng(case.seed)
    cls = gen.class_of(case.params)
    if cls != "normal":
        with np.errstate(over="ignore"):
            return {k: _f32(v) for k, v in _class_inputs(g, cls, kind, shape).items()}
    if kind in ("row_sum", "mean_var"):
        return {"x": _f32(gen.near_normal(g, shape) + 0.25)}
    if kind == "layernorm":
        n = shape[1]
        return {"x": _f32(gen.near_normal(g, shape) + 0.25), "gamma": _f32(gen.uniform(g, (n,), 0.5, 1.5)),
                "beta": _f32(gen.uniform(g, (n,), -0.5, 0.5))}
    if kind == "rmsnorm":
        return {"x": _f32(gen.near_normal(g, shape) + 0.25), "gamma": _f32(gen.uniform(g, (shape[1],), 0.5, 1.5))}
    if kind == "softmax":
        return {"x": _f32(gen.near_normal(g, shape, scale=2.0))}
    if kind == "log_softmax":
        return {"x": _f32(logit_rows(g, shape))}
    if kind == "matmul":
        M, K, N = shape
        return {"a": _f32(gen.near_normal(g, (M, K))), "b": _f32(gen.near_normal(g, (K, N)))}
    if kind == "bmm":
        B, M, K, N = shape
        return {"a": _f32(gen.near_normal(g, (B, M, K))), "b": _f32(gen.near_normal(g, (B, K, N)))}
    if kind in ("rsqrt", "sqrt"):
        return {"x": _f32(gen.uniform(g, shape, 2.0 ** -4, 16.0))}
    if kind == "erf":
        return {"x": _f32(gen.uniform(g, shape, -3.0, 3.0))}
    if kind == "cvt":
        return {"x": _f32(gen.uniform(g, shape, -1000.0, 1000.0)),
                "k": g.integers(-(1 << 24), (1 << 24) + 1, size=shape, dtype=np.int64).astype(np.int32)}
    if kind == "divide":
        b = gen.uniform(g, shape, 0.5, 2.0) * np.where(g.integers(0, 2, size=shape) == 0, -1.0, 1.0)
        return {"a": _f32(gen.near_normal(g, shape)), "b": _f32(b)}
    if kind == "i8_matmul":
        M, K, N = shape
        return {"a": g.integers(-128, 128, size=(M, K), dtype=np.int64).astype(np.int8),
                "b": g.integers(-128, 128, size=(K, N), dtype=np.int64).astype(np.int8)}
    raise ValueError(kind)


def _dot_operands(g, cls: str, shape) -> dict[str, np.ndarray]:
    """matmul (M, K, N) or bmm (B, M, K, N) operands of a class, batch by batch."""
    *batch, M, K, N = shape
    pairs = []
    for _ in range(int(np.prod(batch)) if batch else 1):
        if cls == "shifted":
            pairs.append((gen.positive_mean(g, (M, K), 1.0, 0.5), gen.positive_mean(g, (K, N), 1.0, 0.5)))
        elif cls == "exact":
            pairs.append(gen.exact_operands(g, M, K, N))
        elif cls == "ties":
            pairs.append(gen.ties_operands(g, M, K, N))
        elif cls == "subnormal":
            a, b = gen.exact_operands(g, M, K, N, pivot_log2=gen.SUBNORMAL_PIVOT_LOG2)
            pairs.append((a * 2.0 ** -140, b * 2.0 ** -8))       # products: multiples of 2**-148
        else:
            a = gen.small_integers(g, (M, K), -2, 2)
            gen.special_rows(g, a, gen.SUM_BIG, gen.DOT_SPECIAL_EVENTS)
            pairs.append((a, gen.small_integers(g, (K, N), -2, 2)))
    a = np.stack([p[0] for p in pairs]).reshape(tuple(batch) + (M, K))
    b = np.stack([p[1] for p in pairs]).reshape(tuple(batch) + (K, N))
    return {"a": a, "b": b}


ELEMENT_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, float(np.finfo(np.float32).max), -1.0,
                             1.0, 4.0, 0.5])          # no subnormal: that is the subnormal class


SOFTMAXES = ("softmax", "log_softmax")
# log_softmax's normal rows: every other row of spread 2 (softmax's), the rest of spread 48, whose
# range passes 104 (all but 1 row in 20000 of length 33), where exp(x - max) underflows f32
# (e**-103.3 < 2**-149) and only the x - max - log(sum) form stays right: logits of a confident
# model, which is what a log-softmax is for.
LOGIT_SCALES = (2.0, 48.0)


def logit_rows(g, shape) -> np.ndarray:
    scale = np.where(np.arange(shape[0]) % 2 == 0, LOGIT_SCALES[0], LOGIT_SCALES[1])[:, None]
    return gen.near_normal(g, shape) * scale


def _class_inputs(g, cls: str, kind: str, shape) -> dict[str, np.ndarray]:
    """Inputs of the non-normal classes (golden/inputs.py); float64 values exact in f32."""
    if kind in ("matmul", "bmm"):
        return _dot_operands(g, cls, shape)
    if kind == "row_sum":
        rows, n = shape
        if cls == "shifted":
            return {"x": gen.shifted_rows(g, shape, near_constant=near_constant(kind))}
        if cls == "exact":
            return {"x": gen.pivot_rows(g, rows, n, gen.signs(g, rows) * 2.0 ** gen.EXACT_PIVOT_LOG2)}
        if cls == "ties":
            return {"x": gen.ties_rows(g, rows, n)}
        if cls == "subnormal":
            x = gen.pivot_rows(g, rows, n, gen.signs(g, rows) * 2.0 ** gen.SUBNORMAL_PIVOT_LOG2)
            return {"x": x * 2.0 ** -148}
        x = gen.small_integers(g, shape, -3, 3)
        gen.special_rows(g, x, gen.SUM_BIG)
        return {"x": x}
    if cls == "shifted":
        x = gen.shifted_rows(g, shape, scale=2.0 if kind in SOFTMAXES else 1.0, near_constant=near_constant(kind))
        if kind == "layernorm":
            return {"x": x, "gamma": gen.uniform(g, (shape[1],), 0.5, 1.5), "beta": gen.uniform(g, (shape[1],), -0.5, 0.5)}
        if kind == "rmsnorm":
            return {"x": x, "gamma": gen.uniform(g, (shape[1],), 0.5, 1.5)}
        return {"x": x}
    if kind in SOFTMAXES and cls == "specials":
        x = gen.near_normal(g, shape, scale=2.0)
        rows, n = shape
        what = g.integers(0, 5, size=rows)       # none, -inf mask, all -inf, one +inf, one NaN
        mask = g.integers(0, 4, size=shape) == 0
        for i in range(rows):
            if what[i] == 1:
                x[i, mask[i]] = -np.inf
            elif what[i] == 2:
                x[i] = -np.inf
            elif what[i] in (3, 4):
                x[i, g.integers(0, n)] = np.inf if what[i] == 3 else np.nan
        return {"x": x}
    if cls == "specials":
        def pick():      # every special value at least once, then random ones
            x = ELEMENT_SPECIALS[g.integers(0, len(ELEMENT_SPECIALS), size=shape)]
            head = min(len(ELEMENT_SPECIALS), shape[0])
            x[:head] = ELEMENT_SPECIALS[:head]
            return x
        if kind == "divide":
            # No largest value as a divisor: x / max is subnormal, which is the subnormal class's.
            b = pick()
            return {"a": pick(), "b": np.where(np.abs(b) == np.finfo(np.float32).max, 2.0, b)}
        return {"x": pick()}
    # subnormal: sqrt and rsqrt of subnormal inputs; quotients into and across the subnormal range
    m = gen.small_integers(g, shape, 1, 15)
    if kind in ("sqrt", "rsqrt"):
        return {"x": m * np.exp2(g.integers(-149, -129, size=shape))}
    a = m * gen.signs(g, shape) * np.exp2(g.integers(-149, -120, size=shape))
    return {"a": a, "b": gen.uniform(g, shape, 0.5, 2.0) * np.exp2(g.integers(-4, 9, size=shape))}


# Near-constant rows of the shifted class (every fourth row from row 1): a row variance of eps/64,
# under the eps scale, where one-pass variance cancels to nothing (or below 0) and a moved eps
# changes every output by sqrt(64 eps' / eps); RMSNorm's scale is the mean square, so its rows sit
# near 0 (mean square eps/16). Two-pass f32 keeps their variance to gamma_n relative (_tol_var).
NEAR_CONSTANT_SPREAD = EPS ** 0.5 / 8


def near_constant(kind: str):
    """(level, spread) of the shifted class's near-constant rows for ``kind``, or None."""
    if kind == "rmsnorm":
        return (EPS ** 0.5 / 4, EPS ** 0.5 / 256)
    return (1.0, NEAR_CONSTANT_SPREAD) if kind in ROW_KINDS else None


def output_names(kind: str) -> tuple[str, ...]:
    return {"row_sum": ("sum",), "mean_var": ("mean", "var"), "cvt": ("to_int", "to_float"),
            "matmul": ("c",), "bmm": ("c",), "i8_matmul": ("c",)}.get(kind, ("y",))


def _erf(x: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """float64 results of the exact operations on the f32 inputs (integers: exact int64).

    Classes other than normal and shifted follow IEEE 754 (inf x 0, inf - inf, 0/0 are NaN; a
    result past the f32 range is inf). Sums and dot products of the bit-exact classes are exact
    in float64 (specials: an elementwise sum, not BLAS, whose kernels may skip zeros) and are
    returned rounded once to f32, which is what a correct device returns."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ref = _reference(case, inputs)
    cls = gen.class_of(case.params)
    if cls in ("specials", "subnormal"):
        with np.errstate(over="ignore"):
            ref = {k: np.where(np.isfinite(v.astype(np.float32)), v, v.astype(np.float32)) if v.dtype.kind == "f"
                   else v for k, v in ref.items()}
    if bit_exact(case):
        ref = {k: v.astype(np.float32).astype(np.float64) for k, v in ref.items()}
    return ref


def _reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    kind = case.params["kind"]
    d = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
    if kind == "row_sum":
        return {"sum": d["x"].sum(axis=1)}
    if kind == "mean_var":
        m = d["x"].mean(axis=1)
        return {"mean": m, "var": ((d["x"] - m[:, None]) ** 2).mean(axis=1)}
    if kind == "layernorm":
        x = d["x"]
        m = x.mean(axis=1, keepdims=True)
        v = ((x - m) ** 2).mean(axis=1, keepdims=True)
        return {"y": (x - m) / np.sqrt(v + EPS) * d["gamma"] + d["beta"]}
    if kind == "rmsnorm":
        x = d["x"]
        return {"y": x / np.sqrt((x * x).mean(axis=1, keepdims=True) + EPS) * d["gamma"]}
    if kind == "softmax":
        e = np.exp(d["x"] - d["x"].max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}
    if kind == "log_softmax":
        a = d["x"] - d["x"].max(axis=1, keepdims=True)
        return {"y": a - np.log(np.exp(a).sum(axis=1, keepdims=True))}
    if kind in ("matmul", "bmm"):
        if gen.class_of(case.params) == "specials":
            return {"c": np.einsum("...ik,...kj->...ij", d["a"], d["b"])}
        return {"c": np.matmul(d["a"], d["b"])}
    if kind == "rsqrt":
        return {"y": 1.0 / np.sqrt(d["x"])}
    if kind == "sqrt":
        return {"y": np.sqrt(d["x"])}
    if kind == "erf":
        return {"y": _erf(d["x"])}
    if kind == "cvt":
        return {"to_int": np.trunc(d["x"]).astype(np.int64), "to_float": d["k"]}
    if kind == "divide":
        return {"y": d["a"] / d["b"]}
    if kind == "i8_matmul":
        return {"c": np.matmul(inputs["a"].astype(np.int64), inputs["b"].astype(np.int64))}
    raise ValueError(kind)


def _ulps(y: np.ndarray, k: float) -> np.ndarray:
    """k ulp of f32 at |y| (bounded by 2u|y|, plus the subnormal spacing)."""
    return k * (2.0 * U * np.abs(y) + 2.0 ** -149)


def _tol_mean(x: np.ndarray):
    """n-1 additions and one division (or a multiply by a rounded 1/n: one more): gamma_{n+1}."""
    n = x.shape[1]
    return gamma(n + 1) * np.abs(x).sum(axis=1) / n


def _tol_var(x: np.ndarray, var: np.ndarray, e_m: np.ndarray):
    """Two-pass variance with the computed mean m' = m + e: sum (x - m')**2 / n equals
    var + e**2 exactly (the cross term sums to zero). The subtraction, the square, n-1
    additions and the division (<= 2 roundings) give each positive term at most n+3 factors."""
    n = x.shape[1]
    return gamma(n + 3) * (var + e_m * e_m) + e_m * e_m


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """Error model of every output: the per-element allowance |device - reference| and what the
    statistical check may assume (see the module docstring). The family's entry point of
    accel_regress.core.contracts.GoldenModule."""
    kind = case.params["kind"]
    if bit_exact(case):
        return {k: exact_model(v.shape, f"{gen.class_of(case.params)} inputs: compared bit for bit")
                for k, v in ref.items()}
    d = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _tolerance(kind, d, ref)


def _tolerance(kind: str, d, ref) -> dict[str, ErrorModel]:
    if kind == "row_sum":
        n = d["x"].shape[1]
        return {"sum": _summed(gamma(n - 1) * np.abs(d["x"]).sum(axis=1), n - 1)}
    if kind == "mean_var":
        n = d["x"].shape[1]
        e_m = _tol_mean(d["x"])
        # The variance about a mean that is off by e is larger by e**2: a bias, not a rounding.
        return {"mean": _summed(e_m, n + 1), "var": _summed(_tol_var(d["x"], ref["var"], e_m), n + 3, e_m * e_m)}
    if kind in ("layernorm", "rmsnorm", "softmax", "log_softmax"):
        tol_of = {"layernorm": lambda lib: _tol_layernorm(d, ref["y"], lib),
                  "rmsnorm": lambda lib: tol_rmsnorm(d, ref["y"], lib),
                  "softmax": lambda lib: tol_softmax(d["x"], ref["y"], lib),
                  "log_softmax": lambda lib: tol_log_softmax(d["x"], ref["y"], lib)}[kind]
        tol = tol_of(1.0)
        rows = {"log_softmax": lambda: row_parts_log_softmax(d["x"], ref["y"]),
                "rmsnorm": lambda: row_parts_rmsnorm(d, ref["y"])}.get(kind, lambda: {})()
        return {"y": ErrorModel(tol, "accumulation", lib=tol - tol_of(0.0), rows_correlated=True, **rows)}
    if kind in ("matmul", "bmm"):
        K = d["a"].shape[-1]
        return {"c": _summed(gamma(K) * np.matmul(np.abs(d["a"]), np.abs(d["b"])), K)}
    if kind in ("rsqrt", "sqrt", "erf", "divide"):
        return {"y": ErrorModel(_ulps(ref["y"], ULP_BOUND[kind]), None, why_not=(
            f"{kind} is held to the OpenCL bound of {ULP_BOUND[kind]:g} ulp, which promises no mean or spread"))}
    if kind == "cvt":
        return {"to_int": exact_model(ref["to_int"].shape), "to_float": exact_model(ref["to_float"].shape)}
    if kind == "i8_matmul":
        return {"c": exact_model(ref["c"].shape)}
    raise ValueError(kind)


def _summed(tol: np.ndarray, k: int, lib: Optional[np.ndarray] = None) -> ErrorModel:
    """The model of a sum's error: k zero-mean roundings within tol (``lib``: a part with no mean)."""
    return ErrorModel(tol, "accumulation", k=max(int(k), 1), lib=lib)


def _rsqrt_rel(rel_arg: np.ndarray, lib: float = 1.0) -> np.ndarray:
    """Relative error of rsqrt(s') when s' = s(1 + r), |r| <= rel_arg: (1+r)**-1/2 - 1 is at
    most r/2/(1-r) in size; plus rsqrt's own 2 ulp (<= 4u)."""
    return 0.5 * rel_arg / (1.0 - rel_arg) + lib * 2.0 * ULP_BOUND["rsqrt"] * U


def _tol_layernorm(d, y, lib: float = 1.0):
    """y = (x - m') * r' * g + b, r = rsqrt(var + eps). Errors: e_m in the mean; the variance
    (``_tol_var``) plus the rounding of ``+ eps`` move r by eps_r; the subtraction, the two
    multiplications and the final addition round once each. ``lib`` scales the library
    functions' ulp bounds (0: the IEEE roundings alone)."""
    x, g = d["x"], d["gamma"]
    m = x.mean(axis=1, keepdims=True)
    var = ((x - m) ** 2).mean(axis=1, keepdims=True)
    e_m = _tol_mean(x)[:, None]
    e_v = _tol_var(x, var, e_m)
    r = 1.0 / np.sqrt(var + EPS)
    eps_r = _rsqrt_rel(e_v / (var + EPS) + U, lib)
    dev = np.abs(x - m)
    e_d = e_m + U * (dev + e_m)                            # |(x - m')(1+d) - (x - m)|
    e_t = np.abs(g) * r * (e_d + dev * (eps_r + 2 * U)) / (1.0 - eps_r - 3 * U)
    return e_t + U * (np.abs(y) + e_t)


def tol_rmsnorm(d, y, lib: float = 1.0):
    """y = x * r' * g, r = rsqrt(sum(x*x)/n + eps): the mean square has n+2 roundings per
    (positive) term, ``+ eps`` one more, then rsqrt; two multiplications round y."""
    x = d["x"]
    n = x.shape[1]
    ms = (x * x).mean(axis=1, keepdims=True)
    rel_s = gamma(n + 2) * ms / (ms + EPS) + U
    eps_r = _rsqrt_rel(rel_s, lib)
    return np.abs(y) * (eps_r + 2 * U) / (1.0 - eps_r - 2 * U)


def row_parts_rmsnorm(d, y) -> dict:
    """The row statistic's parts (golden/statistics.py ``row_bias``), relative to y: r' = r(1 + e_r)
    is one error shared by the row (tol_rmsnorm's eps_r, within rsqrt's ulp bound), and each
    element's two multiplications round on their own (2u)."""
    x = d["x"]
    n = x.shape[1]
    ms = (x * x).mean(axis=1, keepdims=True)
    eps_r = _rsqrt_rel(gamma(n + 2) * ms / (ms + EPS) + U, 1.0)
    return {"row_unit": y, "row_offset": eps_r / (1.0 - eps_r), "row_terms": np.full(y.shape, 2.0 * U / (1.0 - 2.0 * U))}


def row_parts_log_softmax(x, y) -> dict:
    """The row statistic's parts (golden/statistics.py ``row_bias``), absolute: L' = log s' is one
    error shared by the row, and each element's a_j = x_j - max and a_j - L' round on their own
    ((1 + u) u |a_j| + u |y_j|). L's error is tol_log_softmax's e_l with the sum's share taken as
    what its k = n - 1 roundings (zero mean, each within u s) reach at P_FALSE_ALARM / rows
    (Bernstein, plus MEAN_RESOLUTION k u), not gamma_k's worst case: that grows as k u and passes
    the rounding of max + log s (u |max|) from n ~ 1000 on (error-models.md); the exp terms' 3 ulp
    (no promised mean) stay worst case."""
    rows = x.shape[0]
    a = np.abs(x - x.max(axis=1, keepdims=True))
    masked = np.isneginf(x)
    a_in = np.where(masked, 0.0, a)
    e = np.exp(-a_in) * ~masked
    s = e.sum(axis=1, keepdims=True)
    k = np.maximum((~masked).sum(axis=1, keepdims=True) - 1, 0)
    L = np.log(2.0 * rows / P_FALSE_ALARM)
    t = L * U / 3.0 + np.sqrt((L * U / 3.0) ** 2 + 2.0 * L * k * U * U)
    eps_e = a_in * U / (1.0 - a_in * U) + 2.0 * ULP_BOUND["exp"] * U
    with np.errstate(invalid="ignore", divide="ignore"):
        eps_s = t + MEAN_RESOLUTION * k * U + (1.0 + t) * (e * eps_e + 2.0 ** -126).sum(axis=1, keepdims=True) / s
        d_log = eps_s / (1.0 - eps_s)
        e_l = d_log + _ulps(np.log(s) + d_log, ULP_BOUND["log"])
    own = (1.0 + U) * U * a + U * np.abs(y)
    return {"row_unit": np.ones(y.shape), "row_offset": np.broadcast_to((1.0 + U) * e_l, y.shape), "row_terms": own}


def tol_softmax(x, y, lib: float = 1.0):
    """y_j = e_j / s, e_j = exp(x_j - max) (max is exact), s = sum e_j. The rounded argument
    a_j(1+d) moves exp by a factor exp(|a_j| u) - 1 <= |a_j| u / (1 - |a_j| u), exp adds 3 ulp;
    the positive sum adds gamma_{n-1} plus the terms' own error; the division (or reciprocal and
    multiply) rounds twice."""
    n = x.shape[1]
    a = np.abs(x - x.max(axis=1, keepdims=True))
    a = np.where(np.isneginf(x), 0.0, a)            # exp(-inf) = 0 exactly: a masked entry adds no error
    eps_e = a * U / (1.0 - a * U) + lib * 2.0 * ULP_BOUND["exp"] * U
    eps_s = gamma(n - 1) + eps_e.max(axis=1, keepdims=True) * (1.0 + gamma(n - 1))
    return y * (eps_e + eps_s + 2 * U) / (1.0 - eps_s - 2 * U)


def tol_log_softmax(x, y, lib: float = 1.0):
    """y_j = a_j - L, a_j = x_j - max (one rounding), L = log s, s = sum_k e_k, e_k = exp(a_k). Each
    e_k errs by e_k eps_k (tol_softmax's eps_e) + 2**-126 (a subnormal's 3 ulp, or flushed to 0), the
    positive sum adds gamma_{n-1}: |s' - s| <= eps_s s; log(s') is off by eps_s / (1 - eps_s) plus
    log's 3 ulp (e_L); the two subtractions give (1 + u)(u|a_j| + e_L) + u|y_j|."""
    n = x.shape[1]
    a = np.abs(x - x.max(axis=1, keepdims=True))
    a_in = np.where(np.isneginf(x), 0.0, a)         # exp(-inf) = 0 exactly: a masked entry adds no error
    e = np.exp(-a_in) * ~np.isneginf(x)
    s = e.sum(axis=1, keepdims=True)
    eps_e = a_in * U / (1.0 - a_in * U) + lib * 2.0 * ULP_BOUND["exp"] * U
    eps_s = (gamma(n - 1) * s + (1.0 + gamma(n - 1)) * (e * eps_e + 2.0 ** -126).sum(axis=1, keepdims=True)) / s
    d_log = eps_s / (1.0 - eps_s)
    e_l = d_log + lib * _ulps(np.log(s) + d_log, ULP_BOUND["log"])
    return (1.0 + U) * (U * a + e_l) + U * np.abs(y)


def cases(variants, vlens, kinds=KINDS, shapes=None, base_seed: int = 0) -> list[Case]:
    out = []
    for kind in kinds:
        for shape in (shapes or {}).get(kind, [SEED_SHAPES[kind]]):
            for variant in variants:
                for vlen in vlens:
                    out.append(make_case(kind, shape, variant, vlen, base_seed))
    return out

def output_contract(case: Case) -> dict:
    """What every backend must return for ``case``: output name ("*": every output) -> (numpy dtype
    name, shape or None). Checked by accel_regress.core.runner before any comparison: the right values in
    another dtype or shape are a FAIL, not a PASS."""
    kind, shape = case.params["kind"], tuple(case.params["shape"])
    if kind in ("row_sum", "mean_var"):
        return {name: ("float32", shape[:1]) for name in output_names(kind)}
    if kind in ("matmul", "i8_matmul"):
        return {"c": ("int32" if kind == "i8_matmul" else "float32", (shape[0], shape[2]))}
    if kind == "bmm":
        return {"c": ("float32", (shape[0], shape[1], shape[3]))}
    if kind == "cvt":
        return {"to_int": ("int32", shape), "to_float": ("float32", shape)}
    return {"y": ("float32", shape)}
