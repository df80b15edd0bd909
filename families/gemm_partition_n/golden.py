"""The IRON GEMM operator with ``partition_N``: configurations, inputs and the reference.

C = A @ B with A (M, K) and B (K, N) in bf16. With partition_N = P the N columns are split into P
equal parts; part i is columns [i*N/P, (i+1)*N/P). The reference is computed (numpy's BLAS) from the
already-rounded bf16 values, in float64 when cheap and float32 otherwise. With bfp16 emulation
``expected`` first quantizes A and B to bfp16 the way the device does (blocks of 8 along K,
mantissas rounded as ``BLOCK_ROUNDING`` says), so only the accumulation order and the output
rounding remain to be allowed for (golden/tolerance.py).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Optional

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.golden import tolerance
from accel_regress.golden.case import Case
from accel_regress.golden import bulk
from accel_regress.golden.dtypes import BFP16_BLOCK, Bfp16, to_bf16, to_bfp16

OP = "gemm_partition_n"
MIN_CORR = 0.99     # seed 000's per-partition check

_F64_REFERENCE_MACS = 1 << 31


@dataclass(frozen=True)
class GemmConfig:
    M: int
    K: int
    N: int
    tile_m: int
    tile_k: int
    tile_n: int
    num_aie_columns: int
    b_col_maj: bool
    c_col_maj: bool
    partition_N: int = 1
    emulate_bfp16: bool = True
    inputs: str = gen.DEFAULT_CLASS      # input class (golden/inputs.py)

    @property
    def id(self) -> str:
        """The configuration (what a device builds): the input class is not part of it."""
        b = "T" if self.b_col_maj else "F"
        c = "T" if self.c_col_maj else "F"
        return (f"M{self.M}-K{self.K}-N{self.N}-m{self.tile_m}-k{self.tile_k}-n{self.tile_n}"
                f"-c{self.num_aie_columns}-b{b}-c{c}-P{self.partition_N}" + ("" if self.emulate_bfp16 else "-bf16"))

    @property
    def test_id(self) -> str:
        return f"{self.id}-{self.inputs}"

    def with_inputs(self, cls: str, emulate_bfp16: Optional[bool] = None) -> "GemmConfig":
        return replace(self, inputs=cls, emulate_bfp16=self.emulate_bfp16 if emulate_bfp16 is None else emulate_bfp16)

    @property
    def n_part(self) -> int:
        return self.N // self.partition_N

    def params(self) -> dict:
        return asdict(self)

    def standalone(self, part: int) -> "GemmConfig":
        """Partition ``part`` as its own partition_N=1 GEMM (seed 000's control)."""
        return replace(self, N=self.n_part, partition_N=1)


def make_case(cfg: GemmConfig, base_seed: int = 0) -> Case:
    if cfg.N % cfg.partition_N:
        raise ValueError(f"N={cfg.N} is not divisible by partition_N={cfg.partition_N}")
    gen.class_of({"inputs": cfg.inputs})
    return Case.make(OP, cfg.id, cfg.params(), base_seed, seed_id=gen.seed_id(cfg.id, cfg.inputs))


# bfp16 stores a signed 8-bit mantissa per element under a shared 8-bit block exponent: no
# encoding holds inf, NaN or a subnormal, so those classes need the bf16 path.
BFP16_CLASSES = ("normal", "shifted", "exact", "ties")


def format_excludes(case: Case) -> Optional[str]:
    """Why the case's number format cannot hold its input class, or None."""
    cls = gen.class_of(case.params)
    if case.params.get("emulate_bfp16", True) and cls not in BFP16_CLASSES:
        return (f"the {cls} input class needs inf/NaN/subnormal encodings, which bfp16 (8-bit block "
                "exponent, 8-bit mantissas) does not have: it runs on the bf16 path (emulate_bfp16=False)")
    return None


def config_of(case: Case) -> GemmConfig:
    return GemmConfig(**case.params)


# Seed 000 scales A by 4; B ~ N(0, 1). Rows are drawn in fixed chunks so that peak memory stays
# bounded and the bytes do not depend on the machine.
_ROWS_PER_DRAW = 64


def _bf16_normal(rng: np.random.Generator, shape, scale: float) -> np.ndarray:
    out = bulk.empty(shape)
    for rows in _row_chunks(shape[0]):
        gen.near_normal_bf16(rng, out[rows].shape, scale, out=out[rows])
    return out


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    """A (M, K) and B (K, N), bf16 values held in float32 (exactly), drawn by input class:

    - normal: A ~ 4 N(0, 1), B ~ N(0, 1) (seed 000's scales);
    - shifted: positive means, A ~ 4 + N(0, 2**2), B ~ 1 + N(0, 0.5**2): over K the rounding
      errors add up in one direction;
    - exact: ``accel_regress.golden.inputs.exact_operands`` with bfp16 blocks of 8 along K (the pivot shares
      its block with zeros only, so bfp16 holds every value exactly). |C| <= 256 in practice
      (ternary products, variance K/4), so C is exact in bf16 too: bit for bit, no tie;
    - ties: A[:, 0] = +-16, B[0, :] = 24 and ternary elsewhere: C = +-384 + a ternary sum, an
      integer mostly in [256, 512) where bf16 steps by 2: every odd C is exactly halfway;
    - specials: small integers in [-2, 2] with, per row of A, one event of
      ``accel_regress.golden.inputs.special_rows`` (+inf, -inf, NaN, +inf and -inf, the largest bf16 value,
      which x2 overflows to inf, -0s, or nothing); B keeps its zeros: inf x 0;
    - subnormal: the exact class with the subnormal pivot, A scaled by 2**-127 (subnormal
      inputs) and B by 2**-6: products are multiples of 2**-133, bf16's subnormal step, so C
      lands exactly on bf16 subnormals (|C| < 2**-126 in practice), and partial sums cross 2**-126.
    """
    p = case.params
    rng = gen.rng(case.seed)
    M, K, N = p["M"], p["K"], p["N"]
    cls = gen.class_of(p)
    if cls == "normal":
        return {"A": _bf16_normal(rng, (M, K), 4.0), "B": _bf16_normal(rng, (K, N), 1.0)}
    if cls == "shifted":
        return {"A": _bf16_draw(rng, (M, K), lambda g, s: gen.positive_mean(g, s, 4.0, 2.0)),
                "B": _bf16_draw(rng, (K, N), lambda g, s: gen.positive_mean(g, s, 1.0, 0.5))}
    if cls in ("exact", "subnormal"):
        pivot = gen.EXACT_PIVOT_LOG2 if cls == "exact" else gen.SUBNORMAL_PIVOT_LOG2
        a, b = gen.exact_operands(rng, M, K, N, pivot_log2=pivot, block=BFP16_BLOCK)
        if cls == "subnormal":
            a, b = a * 2.0 ** -127, b * 2.0 ** -6
    elif cls == "ties":
        a, b = gen.ternary(rng, (M, K)), gen.ternary(rng, (K, N))
        if K > 1:
            a[:, 0], b[0, :] = gen.signs(rng, M) * 16.0, 24.0
    else:
        a, b = _specials(rng, M, K, N)
    return {"A": _held_bf16(a), "B": _held_bf16(b)}


def _held_bf16(x: np.ndarray) -> np.ndarray:
    """Values already representable in bf16, held in float32 (asserted, not rounded)."""
    out = to_bf16(x).astype(np.float32)
    same = (out == x) | (np.isnan(out) & np.isnan(x))
    assert same.all() and (np.signbit(out) == np.signbit(x)).all(), "class inputs must be bf16 values"
    return out


def _specials(rng, M: int, K: int, N: int) -> tuple[np.ndarray, np.ndarray]:
    a = gen.small_integers(rng, (M, K), -2, 2)
    gen.special_rows(rng, a, gen.SUM_BIG, gen.DOT_SPECIAL_EVENTS)
    return a, gen.small_integers(rng, (K, N), -2, 2)


def _row_chunks(rows: int):
    return (slice(r, min(r + _ROWS_PER_DRAW, rows)) for r in range(0, rows, _ROWS_PER_DRAW))


def _bf16_draw(rng: np.random.Generator, shape, draw) -> np.ndarray:
    out = np.empty(shape, dtype=np.float32)
    for rows in _row_chunks(shape[0]):
        out[rows] = to_bf16(draw(rng, out[rows].shape)).astype(np.float32)
    return out


def standalone_inputs(inputs: dict[str, np.ndarray], cfg: GemmConfig, part: int) -> dict[str, np.ndarray]:
    cols = slice(part * cfg.n_part, (part + 1) * cfg.n_part)
    return {"A": inputs["A"], "B": np.ascontiguousarray(inputs["B"][:, cols])}


# The bfp16 block mantissas round as the AIE core's rounding mode says; IRON's GEMM sets conv_even
# (to nearest, ties to even) before its bf16 mmul unless built with round_conv_even=False, which
# leaves floor (amd/IRON iron/operators/gemm/op.py ``round_conv_even`` default True; its
# aie_kernels mm.cc ``set_rounding(round_mode)``). ``None``: the rounding is not known, so the
# reference stays unquantized and the quantization error is allowed for as noise (wide).
BLOCK_ROUNDING = "nearest-even"


def _quantizes(cfg: Optional[GemmConfig], block_rounding: Optional[str]) -> bool:
    return cfg is not None and cfg.emulate_bfp16 and block_rounding is not None


def quantized_operands(inputs: dict[str, np.ndarray], block_rounding: str) -> tuple[Bfp16, Bfp16]:
    """A and B quantized to bfp16 along K, with their block maxima (B's values in torch's memory)."""
    b = inputs["B"]
    return to_bfp16(inputs["A"], 1, block_rounding), to_bfp16(b, 0, block_rounding, out=bulk.empty(b.shape))


def quantized_tolerance(qa: Bfp16, qb: Bfp16, ref: np.ndarray) -> tolerance.ErrorModel:
    """The error model of ref = qa @ qb. ``qb``'s values are needed no more: the allowance takes
    their memory where it fits exactly (M = K, as in the vocab projection): no fresh pages."""
    spare = qb.values if qb.values.shape == ref.shape else None
    return tolerance.gemm_bfp16_quantized(qa.absmax, qb.absmax, ref, qa.values.shape[1], out=spare)


def expected(inputs: dict[str, np.ndarray], cfg: GemmConfig,
             block_rounding: Optional[str] = BLOCK_ROUNDING) -> tuple[np.ndarray, tolerance.ErrorModel]:
    """The reference and its error model, with the device's bfp16 quantization applied (once).

    Bit-exact input classes (golden/inputs.py): every product and partial sum is exact in f32
    (and bfp16 holds the inputs exactly), so the device's C is the exact C rounded once to bf16
    and the allowance is 0. The specials' exact C is an elementwise float64 sum (no BLAS, whose
    kernels may skip zeros): IEEE 754 makes inf x 0 and inf - inf NaN, a sum past the range inf."""
    if cfg.inputs in gen.BIT_EXACT_CLASSES:
        a, b = (np.asarray(inputs[n], np.float64) for n in ("A", "B"))
        with np.errstate(invalid="ignore", over="ignore"):
            exact = np.einsum("ik,kj->ij", a, b) if cfg.inputs == "specials" else \
                a @ b
            ref = to_bf16(exact.astype(np.float32)).astype(np.float32)
        return ref, np.zeros(ref.shape, np.float32)
    if _quantizes(cfg, block_rounding):
        qa, qb = quantized_operands(inputs, block_rounding)
        ref = matmul(qa.values, qb.values)
        return ref, quantized_tolerance(qa, qb, ref)
    ref = matmul(inputs["A"], inputs["B"])
    return ref, tolerance.gemm_bfp16(inputs["A"], inputs["B"], ref, bfp16=cfg.emulate_bfp16)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b by numpy's BLAS: in float64 when cheap, else float32 (at the machine's GEMM rate)."""
    macs = a.shape[0] * a.shape[1] * b.shape[1]
    dtype = np.float64 if macs <= _F64_REFERENCE_MACS else np.float32
    c = a.astype(dtype, copy=False) @ b.astype(dtype, copy=False)
    return c.astype(np.float32, copy=False)


def product(inputs: dict[str, np.ndarray], cfg: Optional[GemmConfig] = None,
              block_rounding: Optional[str] = None) -> np.ndarray:
    if _quantizes(cfg, block_rounding):
        qa, qb = quantized_operands(inputs, block_rounding)
        return matmul(qa.values, qb.values)
    return matmul(inputs["A"], inputs["B"])


def reference(case: Case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"C": the whole (M, N) product, with the device's bfp16 quantization}: what tolerances()
    models (the family's entry point of accel_regress.core.contracts.GoldenModule)."""
    return {"C": expected(inputs, config_of(case))[0]}


def tolerance_for(inputs: dict[str, np.ndarray], ref: np.ndarray, cfg: GemmConfig,
                  block_rounding: Optional[str] = None) -> tolerance.ErrorModel:
    """The error model of a reference made with the same ``block_rounding`` (None: unquantized)."""
    if _quantizes(cfg, block_rounding):
        return quantized_tolerance(*quantized_operands(inputs, block_rounding), ref)
    return tolerance.gemm_bfp16(inputs["A"], inputs["B"], ref, bfp16=cfg.emulate_bfp16)


def tolerances(case: Case, inputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, tolerance.ErrorModel]:
    """{"C": the error model of ref["C"]}, the whole (M, N) product that forward() and every C_p
    hold a part of, with the device's bfp16 quantization (as ``expected``): the family's entry
    point of accel_regress.core.contracts.GoldenModule."""
    cfg, c = config_of(case), ref["C"]
    if cfg.inputs in gen.BIT_EXACT_CLASSES:
        return {"C": tolerance.exact_model(c.shape, f"exact: {cfg.inputs} inputs, compared bit for bit")}
    return {"C": tolerance_for(inputs, c, cfg, BLOCK_ROUNDING)}


def partition(x: np.ndarray, cfg: GemmConfig, part: int) -> np.ndarray:
    """Columns of partition ``part`` of an (M, N) array."""
    return x[..., part * cfg.n_part:(part + 1) * cfg.n_part]


# Seed 001's CI list for iron/operators/gemm, and the Llama 3.2 1B vocab projection of seed 000.
CI_CONFIGS = [
    GemmConfig(1792, 896, 1152, 64, 32, 48, 8, False, True, 1),
    GemmConfig(192, 384, 64, 48, 96, 16, 4, False, False, 1),
    GemmConfig(192, 384, 64, 48, 96, 16, 4, True, True, 1),
    GemmConfig(2048, 2048, 2048, 64, 64, 64, 1, False, False, 1),
    GemmConfig(2048, 2048, 2048, 64, 64, 64, 2, True, False, 1),
    GemmConfig(2048, 2048, 2048, 64, 64, 64, 8, True, True, 1),
    GemmConfig(384, 1536, 1792, 32, 48, 64, 4, True, False, 1),
    GemmConfig(64, 512, 256, 16, 64, 64, 4, True, False, 4),
    GemmConfig(896, 1792, 640, 32, 64, 80, 8, False, True, 1),
]
LLAMA_VOCAB = GemmConfig(2048, 2048, 128256, 64, 64, 64, 8, True, False, 4)
# The vocab projection's structure at a size for every run: N/partition_N (1002) is not a multiple
# of tile_n * columns, so each partition is padded, as 32064 -> 32256 is for Llama.
VOCAB_MINI = GemmConfig(256, 512, 4008, 64, 64, 64, 8, True, False, 4)
# The same operator without bfp16 emulation (IRON's emulate_bf16_mmul_with_bfp16 off): what a
# compiler that computes bf16 x bf16 exactly in f32 (IREE) runs, on the seed's P4 shapes.
# M64-K128-N256-P4 is small enough for a simulator's default run.
BF16_CONFIGS = [replace(c, emulate_bfp16=False) for c in (CI_CONFIGS[7], CI_CONFIGS[1], VOCAB_MINI)] + [
    GemmConfig(64, 128, 256, 16, 64, 64, 4, True, False, 4, emulate_bfp16=False)]


# K tails (issue 29 item 10): K = 100 is no multiple of tile_k (64: one whole K tile and 36 past
# it) nor of the bfp16 block (8: the last block holds 4 values). IRON's partition_N AIEGEMM pads K
# up to tile_k with zeros on the host (tonyjie/IRON@46df5832 iron/operators/gemm/op.py:68-79,
# ``_get_padded_dims``, ``_pad_A``, ``_pad_B``; amd/IRON's later AIEGEMM the same, its
# ``__init__`` and ``pad_B``), so the device's kernel only ever sees whole tiles, and the partial
# bfp16 block shares its exponent with zeros, which cannot raise it: the golden's zero-padded
# blocks (golden/dtypes.py block_view) are the same blocks. IRON's GEMMs without partition_N
# refuse the shape instead (amd/IRON@4a379b3a iron/operators/gemm/op.py:39 ``assert K % min_K == 0``,
# min_K = tile_k; the declarative GEMM's validate(), "K (...) must be a multiple of tile_k") and the
# npu backend already answers those revisions unsupported (no partition_N). The shape is seed
# 000's P4 CI configuration with K = 100; the bf16 twin runs where bfp16 is not emulated (IREE).
K_TAIL_CONFIGS = [GemmConfig(64, 100, 256, 16, 64, 64, 4, True, False, 4),
                  GemmConfig(64, 100, 256, 16, 64, 64, 4, True, False, 4, emulate_bfp16=False)]


def has_k_tail(cfg: GemmConfig) -> bool:
    """K ends in a partial K tile (the device pads it with zeros)."""
    return cfg.K % cfg.tile_k != 0


def output_contract(case: Case) -> dict:
    """What every backend must return for ``case``: output name ("*": every output) -> (numpy dtype
    name, shape or None). Checked by accel_regress.core.runner before any comparison: the right values in
    another dtype or shape are a FAIL, not a PASS."""
    # bf16 results travel as the float32 that holds them exactly; forward()'s shape is a test of its own
    return {"*": ("float32", None)}
