"""Plain matmul C = A @ B (seed 003): bf16 x bf16 -> f32 and f32 x f32 -> f32, with its reference.

Inputs by input class (golden/inputs.py; the class ends the id):

``exact`` (what used to be ``int``): ``accel_regress.golden.inputs.exact_operands``: ternary values plus a
    +-2**23 pivot product at k=0 cancelled at k=K-1. Every product and partial sum, in any order,
    is an integer below 2**24, exact in f32: any correct device returns exactly the reference and
    any difference at all is a bug (IREE's own e2e matmul tests compare this way, bit for bit);
    an accumulator with fewer than 24 significant bits loses the odd units next to the pivot.
``ties``, ``specials``, ``subnormal``: bit for bit as well (golden/inputs.py says why each is
    exact); ``subnormal`` scales the exact operands by 2**-127 and 2**-8 (products are multiples
    of 2**-135: C is subnormal in f32, partial sums cross 2**-126).
``normal`` and ``shifted`` (positive means: 1 + 0.5 N(0, 1)): values rounded to the operand
    dtype, within the error model below. The reference is computed in float64 from the very same
    rounded operands and rounded to f32 once. Allowed difference per element, derived:

    1. Products. bf16 keeps 8 significant bits, so a bf16 x bf16 product has at most 16 and is
       exact in f32 (24 bits). An f32 x f32 product is rounded once (relative error <= u).
    2. Summation. Whatever order and blocking a device uses (tiles along K, split-K partial sums
       added later, FMA chains), a length-K dot product computed in f32 satisfies
       |fl(a.b) - a.b| <= gamma_K * sum_k |a_k||b_k|, gamma_K = K*u / (1 - K*u), u = 2**-24
       (Higham, Accuracy and Stability, eq. 3.5; it covers the product roundings of case 1 too).
    3. The reference: float64 summation adds gamma_K(2**-53) * sum|a||b| (negligible but counted),
       and its one rounding to f32 adds u/(1-u) * |ref|.
    4. sum|a||b| itself is computed as |A| @ |B| in f32; all its terms are non-negative, so the
       computed value S' satisfies S <= S' / (1 - gamma_K), which the allowance uses.

    So tol = (gamma_K(u) + gamma_K(2**-53)) * S' / (1 - gamma_K(u)) + u/(1-u) * |ref|. This is a
    worst case: a correct device can never exceed it, for any seed. Typical errors are about
    sqrt(K)*u*S (random-walk rounding), so the bound is ~sqrt(K) looser than what is seen, yet
    still about 2**8/sqrt(K) tighter than a device that accumulates in bf16 would need, and a
    wrong tile (errors of order |ref|) is far outside it.

    Statistical check (golden/tolerance.py ``ErrorModel``, kind ``accumulation``): the bound
    counts about K+1 roundings (K-1 additions, the products where they round, the reference's
    one rounding), each within u*S; rounded to nearest they are zero-mean and independent, so
    the error's sigma is at most tol/sqrt(K+1). int mode has no rounding at all: bit for bit.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

import numpy as np
from ml_dtypes import bfloat16

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case
from accel_regress.golden.dtypes import F32_UNIT_ROUNDOFF, to_bf16
from accel_regress.golden.tolerance import ErrorModel, exact_model

OP = "matmul"
OPERAND_DTYPES = ("bf16", "f32")
ACC_DTYPES = ("f32",)
_EXACT_K_LIMIT = 1 << 23                # 2**23 + K <= 2**24 keeps every partial sum exact in f32
_F64_UNIT_ROUNDOFF = 2.0 ** -53
_ROWS_PER_DRAW = 64                     # draw in fixed row chunks: bounded memory, same bytes anywhere

NUMPY_DTYPES = {"bf16": np.dtype(bfloat16), "f32": np.dtype(np.float32)}
ELEMENT_BYTES = {"bf16": 2, "f32": 4}


@dataclass(frozen=True)
class MatmulConfig:
    M: int
    K: int
    N: int
    lhs: str = "bf16"
    rhs: str = "bf16"
    acc: str = "f32"
    inputs: str = "exact"       # input class (golden/inputs.py)

    def __post_init__(self):
        for d in ("M", "K", "N"):
            v = getattr(self, d)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"matmul {d} must be a positive integer, got {v!r}")
        if self.lhs not in OPERAND_DTYPES or self.rhs not in OPERAND_DTYPES:
            raise ValueError(f"matmul operand dtypes must be in {OPERAND_DTYPES}, got {self.lhs}, {self.rhs}")
        if self.acc not in ACC_DTYPES:
            raise ValueError(f"matmul accumulator dtype must be in {ACC_DTYPES}, got {self.acc}")
        if self.inputs not in gen.CLASSES:
            raise ValueError(f"matmul input class must be in {gen.CLASSES}, got {self.inputs!r}")
        if self.inputs in gen.BIT_EXACT_CLASSES and self.K > _EXACT_K_LIMIT:
            raise ValueError(f"{self.inputs} inputs are exact only for K <= {_EXACT_K_LIMIT}, got K={self.K}")

    @property
    def id(self) -> str:
        return f"M{self.M}-K{self.K}-N{self.N}-{self.lhs}x{self.rhs}-{self.acc}-{self.inputs}"

    @property
    def bit_exact(self) -> bool:
        return self.inputs in gen.BIT_EXACT_CLASSES

    @property
    def dims(self) -> tuple[int, int, int]:
        return (self.M, self.K, self.N)

    @property
    def macs(self) -> int:
        return self.M * self.K * self.N

    def params(self) -> dict:
        return {k: (int(v) if isinstance(v, (int, np.integer)) else v) for k, v in asdict(self).items()}


def make_case(cfg: MatmulConfig, base_seed: int = 0) -> Case:
    return Case.make(OP, cfg.id, cfg.params(), base_seed)


def config_of(case: Case) -> MatmulConfig:
    return MatmulConfig(**case.params)


def _draw(rng: np.random.Generator, shape, dtype: str, draw) -> np.ndarray:
    out = np.empty(shape, dtype=NUMPY_DTYPES[dtype])
    for r in range(0, shape[0], _ROWS_PER_DRAW):
        rows = (min(_ROWS_PER_DRAW, shape[0] - r), shape[1])
        x = draw(rng, rows)
        out[r:r + rows[0]] = to_bf16(x) if dtype == "bf16" else x.astype(np.float32)
    return out


def _held(x: np.ndarray, dtype: str) -> np.ndarray:
    """Class values already exact in the operand dtype (asserted, not rounded)."""
    out = to_bf16(x) if dtype == "bf16" else x.astype(np.float32)
    back = out.astype(np.float64)
    assert (((back == x) | (np.isnan(back) & np.isnan(x))).all()
            and (np.signbit(back) == np.signbit(x)).all()), f"class inputs must be {dtype} values"
    return out


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    """``lhs`` (M, K) and ``rhs`` (K, N) in their operand dtype (ml_dtypes.bfloat16 for bf16)."""
    cfg = config_of(case)
    rng = gen.rng(case.seed)
    M, K, N = cfg.dims
    if cfg.inputs in ("normal", "shifted"):
        draw = (lambda g, s: gen.near_normal(g, s, 1.0)) if cfg.inputs == "normal" else \
            (lambda g, s: gen.positive_mean(g, s, 1.0, 0.5))
        return {"lhs": _draw(rng, (M, K), cfg.lhs, draw), "rhs": _draw(rng, (K, N), cfg.rhs, draw)}
    if cfg.inputs == "exact":
        a, b = gen.exact_operands(rng, M, K, N)
    elif cfg.inputs == "ties":
        a, b = gen.ties_operands(rng, M, K, N)
    elif cfg.inputs == "subnormal":
        a, b = gen.exact_operands(rng, M, K, N, pivot_log2=gen.SUBNORMAL_PIVOT_LOG2)
        a, b = a * 2.0 ** -127, b * 2.0 ** -8
    else:
        a = gen.small_integers(rng, (M, K), -2, 2)
        gen.special_rows(rng, a, gen.SUM_BIG, gen.DOT_SPECIAL_EVENTS)
        b = gen.small_integers(rng, (K, N), -2, 2)
    return {"lhs": _held(a, cfg.lhs), "rhs": _held(b, cfg.rhs)}


def product(inputs: dict[str, np.ndarray], inputs_class: str) -> np.ndarray:
    """C in f32: float64, rounded once. Bit-exact classes: float64 is exact; specials as an
    elementwise sum (IEEE 754: inf x 0, inf - inf are NaN; no BLAS, whose kernels may skip zeros)."""
    a = np.asarray(inputs["lhs"], np.float64)
    b = np.asarray(inputs["rhs"], np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if inputs_class == "specials":
            return np.einsum("ik,kj->ij", a, b).astype(np.float32)
        return (a @ b).astype(np.float32)


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"out": the product}: what tolerances() models (the family's entry point of
    accel_regress.core.contracts.GoldenModule)."""
    return {"out": product(dict(inputs), case.params["inputs"])}


def gamma(n: int, u: float = F32_UNIT_ROUNDOFF) -> float:
    return n * u / (1.0 - n * u)


def _error_model(inputs: dict[str, np.ndarray], ref: np.ndarray, inputs_class: str) -> ErrorModel:
    """Error model: per-element allowed |got - ref| (float32 (M, N)), zero for the bit-exact input
    classes, and the statistical check's assumptions. See the module docstring."""
    if inputs_class in gen.BIT_EXACT_CLASSES:
        return exact_model(ref.shape, f"exact: {inputs_class} inputs, compared bit for bit")
    a = np.abs(np.asarray(inputs["lhs"], np.float32))
    b = np.abs(np.asarray(inputs["rhs"], np.float32))
    K = a.shape[1]
    s = (a @ b).astype(np.float64)
    g = gamma(K)
    tol = (g + gamma(K, _F64_UNIT_ROUNDOFF)) * s / (1.0 - g)
    tol += F32_UNIT_ROUNDOFF / (1.0 - F32_UNIT_ROUNDOFF) * np.abs(ref.astype(np.float64))
    # Rounded up to f32 so that storing the allowance never shrinks it.
    return ErrorModel(np.nextafter(tol.astype(np.float32), np.float32(np.inf)), "accumulation", k=K + 1)


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """{"out": the error model of ref["out"]}: the family's entry point of
    accel_regress.core.contracts.GoldenModule."""
    return {"out": _error_model(inputs, ref["out"], case.params["inputs"])}


def expected(case: Case, inputs: dict[str, np.ndarray]) -> tuple[np.ndarray, ErrorModel]:
    """The reference of "out" and its error model (tolerances), in one call."""
    ref = product(inputs, case.params["inputs"])
    return ref, tolerances(case, inputs, {"out": ref})["out"]


# --- which shapes matter (seed 003) --------------------------------------------------------------

SEED_SQUARES = (2048, 2304, 2432)          # 2304 = 2048+256, 2432 = 2048+256+128
SEED_CUBES = ((2048, 2432), (512, 640))    # the seed's two sweep tables


def cube(dims: Iterable[int]) -> list[tuple[int, int, int]]:
    """Every (M, K, N) over ``dims``, M slowest, in the seed's table order."""
    d = sorted(set(int(x) for x in dims))
    return [(m, k, n) for m in d for k in d for n in d]


# Shapes a tiling compiler gets wrong: one element, one past a power-of-two tile, skinny, primes.
EDGE_SHAPES = (
    (1, 1, 1), (9, 9, 9), (17, 17, 17), (65, 65, 65), (127, 129, 131),
    (1, 64, 64), (1, 257, 63), (64, 1, 64), (63, 1, 257), (64, 64, 1), (257, 63, 1),
    (7, 13, 11), (31, 37, 41), (97, 101, 103),
)

def output_contract(case: Case) -> dict:
    """What every backend must return for ``case``: output name ("*": every output) -> (numpy dtype
    name, shape or None). Checked by accel_regress.core.runner before any comparison: the right values in
    another dtype or shape are a FAIL, not a PASS."""
    cfg = config_of(case)
    return {"out": ("float32", (cfg.M, cfg.N))}       # the f32 accumulator, whatever the operands
