"""PTO vector tiles (seed 002): row_expand_mul, set_validshape, fillpad and the store of the tile.

Semantics, as pto-isa and pypto define them:

- ``row_expand_mul(gated[R, C], scale[R, 1])``: out[i, j] = gated[i, j] * scale[i, 0].
- ``set_validshape(tile, valid_row, valid_col)``: metadata only; the data is untouched.
- ``fillpad(tile, pad)``: every element outside the valid region [0, valid_row) x [0, valid_col)
  becomes the pad value; the result's valid shape is the whole tile.
- the store writes the whole [R, C] tile back to global memory.

PTO's pad values (pto-isa ``getPadValue``, include/pto/cpu/TLoad.hpp): ``zero`` is 0; ``max``
and ``min`` are the dtype's largest and smallest value, which for a floating dtype that has an
infinity (f32, f16, bf16 all do) is +inf and -inf.

The operator family id is ``rowexpandmul_fillpad``; ``case.params`` holds rows, cols, valid_row,
valid_col, dtype, pad, variant and memory_reuse. Variants (seed 002's bisection):

- ``fused``: row_expand_mul, set_validshape and fillpad in one kernel block (the bug);
- ``split``: row_expand_mul, a round trip through global memory, then set_validshape + fillpad
  (the workaround);
- ``loaded``: a loaded tile narrowed and padded, no multiply (a control);
- ``mul``: plain elementwise mul with a [R, C] scale instead of row_expand_mul (a control).

``memory_reuse`` says whether the product tile aliases the input tile (pypto's MemoryReuse
pass on, the seed's repro A) or gets its own buffer (repro B).

Error model (``tolerance_for``). The inputs are drawn already rounded to the tile dtype and the
reference is computed in float64 from them, so the float64 product p = g * s is exact (two
significands of at most 24 bits multiply into at most 48 bits < 53). A correct device computes
the product in the tile dtype, which is ONE rounding of p to nearest: for a normal result
|fl(p) - p| <= u |p| with u = 2**-24 (f32), 2**-11 (f16), 2**-8 (bf16); for a result in the
subnormal range the error is at most half the subnormal spacing, 2**-150 (f32), 2**-25 (f16),
2**-134 (bf16). So the allowance in the valid region is u |p| + half the subnormal spacing. The
``loaded`` variant copies values, so its error is 0, within the same bound. Outside the valid
region the tile must hold the pad value exactly: allowance 0 (and an infinite pad compares
equal only to the same infinity). The inputs stay far from overflow (|g|, |s| < 8).

Statistical check (``error_model``, golden/tolerance.py kind ``rounding``): the one rounding to
nearest of each product has mean 0 and |error| <= half an ulp of the tile dtype, so over the
valid region the mean error must be about 0 and the rms error at most half an ulp; the padded
region is exact and carries no statistics.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Mapping, Optional

import numpy as np
import ml_dtypes
from ml_dtypes import bfloat16

from accel_regress.golden import inputs as gen
from accel_regress.golden.case import Case
from accel_regress.golden.compare import Census, Mismatch, census
from accel_regress.golden.tolerance import ErrorModel, exact_model

OP = "rowexpandmul_fillpad"

VARIANTS = ("fused", "split", "loaded", "mul")
CONTROLS = ("split", "loaded", "mul")
PADS = ("zero", "max", "min")

# name -> (numpy storage dtype, unit roundoff, half the subnormal spacing, bytes per element)
DTYPES = {
    "f32": (np.dtype(np.float32), 2.0 ** -24, 2.0 ** -150, 4),
    "f16": (np.dtype(np.float16), 2.0 ** -11, 2.0 ** -25, 2),
    "bf16": (np.dtype(bfloat16), 2.0 ** -8, 2.0 ** -134, 2),
}

BLOCK_BYTES = 32    # the UB block: a row of a vec tile is a whole number of these


def pad_value(pad: str, dtype: str) -> float:
    """The value PTO writes outside the valid region (all three dtypes have an infinity)."""
    if pad not in PADS:
        raise ValueError(f"pad {pad!r} is not one of {', '.join(PADS)}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return {"zero": 0.0, "max": float("inf"), "min": float("-inf")}[pad]


def round_to(x, dtype: str) -> np.ndarray:
    """Round to the tile dtype (to nearest even) and hold the result exactly in float32."""
    return np.asarray(x, np.float32).astype(DTYPES[dtype][0]).astype(np.float32)


def block_elements(dtype: str) -> int:
    return BLOCK_BYTES // DTYPES[dtype][3]


@dataclass(frozen=True)
class TileConfig:
    rows: int
    cols: int
    valid_row: int
    valid_col: int
    dtype: str = "f32"
    pad: str = "zero"
    variant: str = "fused"
    memory_reuse: bool = True
    valid_rows: Optional[int] = None     # the kernel's runtime argument; valid_row = min(rows, it)
    inputs: str = gen.DEFAULT_CLASS       # input class (golden/inputs.py)

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant {self.variant!r} is not one of {', '.join(VARIANTS)}")
        pad_value(self.pad, self.dtype)
        if not (0 <= self.valid_row <= self.rows and 0 <= self.valid_col <= self.cols):
            raise ValueError(f"valid shape ({self.valid_row}, {self.valid_col}) outside tile "
                             f"({self.rows}, {self.cols})")

    @property
    def id(self) -> str:
        vr = f"vr{self.valid_row}" if self.valid_rows in (None, self.valid_row) else \
            f"vrs{self.valid_rows}"
        reuse = "reuse" if self.memory_reuse else "noreuse"
        return (f"R{self.rows}-C{self.cols}-{vr}-vc{self.valid_col}-{self.dtype}-pad{self.pad}"
                f"-{self.variant}-{reuse}")

    @property
    def test_id(self) -> str:
        return f"{self.id}-{self.inputs}"

    def with_inputs(self, cls: str) -> "TileConfig":
        return replace(self, inputs=cls)

    @property
    def aligned(self) -> bool:
        """Whether a row is a whole number of 32-byte blocks (else the tile is padded to one)."""
        return self.cols % block_elements(self.dtype) == 0

    def params(self) -> dict:
        d = asdict(self)
        if d["valid_rows"] is None:
            d["valid_rows"] = self.valid_row
        return d


def seed_config(valid_rows: int, variant: str = "fused", memory_reuse: bool = True) -> TileConfig:
    """Seed 002's kernel: a [16, 256] f32 tile, valid_row = min(16, valid_rows), zero pad."""
    return TileConfig(16, 256, min(16, valid_rows), 256, "f32", "zero", variant, memory_reuse, valid_rows)


def make_case(cfg: TileConfig, base_seed: int = 0) -> Case:
    gen.class_of({"inputs": cfg.inputs})
    return Case.make(OP, cfg.id, cfg.params(), base_seed, seed_id=gen.seed_id(cfg.id, cfg.inputs))


def config_of(case: Case) -> TileConfig:
    return TileConfig(**case.params)


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    """``gated`` [R, C] and ``scale`` ([R, 1], or [R, C] for the ``mul`` variant: the per-row
    scale broadcast, so every variant has the same reference), dtype values held in float32.

    Magnitudes (normal class): gated near-normal with scale 2, scale uniform in [0.25, 4) with
    a random sign, so products are normal numbers in every dtype and nowhere near overflow.

    Other input classes (golden/inputs.py), every value exact in the tile dtype:

    - shifted: gated rows with means of 1000x (every other row) or 1-10x their spread (2);
    - exact: gated in [-8, 8], scale in [-4, 4]: every product (<= 32) is exact in every dtype;
    - ties: gated an odd integer in [2**(p-1), 2**p / 1.5) (p the dtype's precision) times
      2**[-3, 1], scale +-1.5 x 2**[-2, 1]: every product is exactly halfway between two
      neighbours in the dtype;
    - specials: gated mixes [-3, 3] with +-inf, NaN, -0 and +-the dtype's largest value; scale
      per row one of 0, -0, +-0.5, +-1, +-2, +-inf, NaN (inf x 0, overflow, the sign of zero);
    - subnormal: gated [1, 15] x a power of two that is subnormal in the dtype, scale [1, 7] x
      2**[-2, 10]: products land in and above the dtype's subnormal range, each exact in the
      dtype (rounding is the ties class's; a flush to zero is this one's).
    """
    p = case.params
    rng = gen.rng(case.seed)
    rows, cols, dtype = p["rows"], p["cols"], p["dtype"]
    cls = gen.class_of(p)
    if cls == "normal":
        gated = round_to(np.clip(gen.near_normal(rng, (rows, cols), 2.0), -7.5, 7.5), dtype)
        mag = gen.uniform(rng, (rows, 1), 0.25, 4.0)
        sign = np.where(gen.small_integers(rng, (rows, 1), 0, 1) > 0, 1.0, -1.0)
        scale = round_to(mag * sign, dtype)
    else:
        gated, scale = _class_inputs(rng, cls, rows, cols, dtype)
    if p["variant"] == "mul":
        scale = np.ascontiguousarray(np.broadcast_to(scale, (rows, cols)))
    return {"gated": gated, "scale": scale}


PRECISION = {"f32": 24, "f16": 11, "bf16": 8}
SUBNORMAL_INPUT_EXP = {"f32": -134, "f16": -22, "bf16": -131}   # m * 2**e, m <= 15: subnormal


def _exact_values(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` as float32, asserting that every value is already exact in the tile dtype."""
    with np.errstate(over="ignore", invalid="ignore"):
        held = round_to(x, dtype)
    same = (held == x) | (np.isnan(held) & np.isnan(x))
    assert same.all() and (np.signbit(held) == np.signbit(x)).all(), f"class inputs must be {dtype} values"
    return held


def _class_inputs(rng, cls: str, rows: int, cols: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    if cls == "shifted":
        gated = gen.shifted_rows(rng, (rows, cols), 2.0)
        scale = gen.uniform(rng, (rows, 1), 0.25, 4.0) * gen.signs(rng, (rows, 1))
        return round_to(gated, dtype), round_to(scale, dtype)
    if cls == "exact":
        gated = gen.small_integers(rng, (rows, cols), -8, 8)
        scale = gen.small_integers(rng, (rows, 1), -4, 4)
    elif cls == "ties":
        p = PRECISION[dtype]
        lo, hi = 2 ** (p - 2), int(np.floor(2.0 ** p / 3.0 - 0.5)) + 1     # odd g = 2j+1 in [2**(p-1), 2**p/1.5)
        g = 2.0 * rng.integers(lo, hi, size=(rows, cols)) + 1.0
        gated = g * gen.signs(rng, (rows, cols)) * np.exp2(rng.integers(-3, 2, size=(rows, cols)))
        scale = 1.5 * gen.signs(rng, (rows, 1)) * np.exp2(rng.integers(-2, 2, size=(rows, 1)))
    elif cls == "specials":
        big = float(np.finfo(np.float32).max) if dtype == "f32" else float(ml_dtypes.finfo(DTYPES[dtype][0]).max)
        pool = np.array([np.inf, -np.inf, np.nan, -0.0, big, -big])
        gated = gen.small_integers(rng, (rows, cols), -3, 3)
        pick = rng.integers(0, 2 * len(pool), size=(rows, cols))           # half the elements special
        gated = np.where(pick < len(pool), pool[np.minimum(pick, len(pool) - 1)], gated)
        row_pool = np.array([0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, np.inf, -np.inf, np.nan])
        scale = row_pool[rng.integers(0, len(row_pool), size=(rows, 1))]
    else:
        gated = gen.small_integers(rng, (rows, cols), 1, 15) * gen.signs(rng, (rows, cols)) \
            * 2.0 ** SUBNORMAL_INPUT_EXP[dtype]
        scale = gen.small_integers(rng, (rows, 1), 1, 7) * np.exp2(rng.integers(-2, 11, size=(rows, 1)))
    return _exact_values(gated, dtype), _exact_values(scale, dtype)


def bit_exact(cfg: "TileConfig") -> bool:
    """Classes whose tile is checked bit for bit (golden/inputs.py): the device's one rounding
    of each product is the reference's."""
    return cfg.inputs in gen.BIT_EXACT_CLASSES


# --- the operations, in float64 ----------------------------------------------------------------

def row_expand_mul(gated: np.ndarray, scale: np.ndarray) -> np.ndarray:
    g = np.asarray(gated, np.float64)
    s = np.asarray(scale, np.float64)
    if s.ndim != 2 or s.shape[0] != g.shape[0] or s.shape[1] != 1:
        raise ValueError(f"row_expand_mul: scale must be [{g.shape[0]}, 1], got {list(s.shape)}")
    return g * s


def set_validshape(tile: np.ndarray, valid_row: int, valid_col: int) -> tuple[np.ndarray, int, int]:
    """Metadata only: the same data with a new valid shape."""
    return tile, valid_row, valid_col


def fillpad(tile: np.ndarray, valid_row: int, valid_col: int, pad: float) -> np.ndarray:
    out = np.array(tile, np.float64, copy=True)
    out[valid_row:, :] = pad
    out[:, valid_col:] = pad
    return out


def store(tile: np.ndarray) -> np.ndarray:
    """The store writes the whole tile; the suite reads back [R, C]."""
    return np.array(tile, np.float64, copy=True)


def tile_reference(inputs: Mapping[str, np.ndarray], cfg: TileConfig) -> np.ndarray:
    """The expected [R, C] output in float64 (exact: see the module docstring)."""
    with np.errstate(over="ignore", invalid="ignore"):     # IEEE 754: inf x 0 is NaN, overflow inf
        return _reference(inputs, cfg)


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"out": the stored tile}: what tolerances() models (the family's entry point of
    accel_regress.core.contracts.GoldenModule)."""
    return {"out": tile_reference(inputs, config_of(case))}


def _reference(inputs: Mapping[str, np.ndarray], cfg: TileConfig) -> np.ndarray:
    g = inputs["gated"]
    if cfg.variant == "loaded":
        prod = np.asarray(g, np.float64)
    elif cfg.variant == "mul":
        prod = np.asarray(g, np.float64) * np.asarray(inputs["scale"], np.float64)
    else:
        prod = row_expand_mul(g, inputs["scale"])
    tile, vr, vc = set_validshape(prod, cfg.valid_row, cfg.valid_col)
    out = store(fillpad(tile, vr, vc, pad_value(cfg.pad, cfg.dtype)))
    if bit_exact(cfg):
        # The float64 product is exact; its one rounding to the dtype (to nearest even, to inf
        # past the largest value) is what the device must return. Via f32 it rounds once: the
        # class inputs keep every product exact in f32.
        out = round_to(out, cfg.dtype).astype(np.float64)
    return out


def valid_mask(cfg: TileConfig) -> np.ndarray:
    m = np.zeros((cfg.rows, cfg.cols), bool)
    m[:cfg.valid_row, :cfg.valid_col] = True
    return m


def tolerance_for(ref: np.ndarray, cfg: TileConfig) -> np.ndarray:
    """Per-element allowance: u|ref| + half a subnormal step inside the valid region, 0 outside."""
    _, u, sub, _ = DTYPES[cfg.dtype]
    inside = valid_mask(cfg)
    tol = np.zeros(ref.shape, np.float64)
    if not bit_exact(cfg):
        tol[inside] = u * np.abs(ref[inside]) + sub
    return tol


def error_model(ref: np.ndarray, cfg: TileConfig) -> ErrorModel:
    """``tolerance_for`` with the statistics of one rounding to nearest in the tile dtype."""
    return ErrorModel(tolerance_for(ref, cfg), "rounding", dtype=cfg.dtype)


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """{"out": the error model of the stored tile ref["out"]} (bit for bit under the bit-exact input
    classes): the family's entry point of accel_regress.core.contracts.GoldenModule."""
    cfg, out = config_of(case), np.asarray(ref["out"])
    if bit_exact(cfg):
        return {"out": exact_model(out.shape, f"exact: {cfg.inputs} inputs, compared bit for bit")}
    return {"out": error_model(out, cfg)}


# --- the tile census ---------------------------------------------------------------------------

def _where(mask: np.ndarray) -> str:
    """Rows and column ranges of a boolean mask, in accel_regress.golden.compare's wording."""
    if not mask.any():
        return "nowhere"
    return census(mask.astype(np.float64), np.zeros(mask.shape)).where()


def padded_region_report(got: np.ndarray, cfg: TileConfig) -> tuple[bool, str]:
    """Whether every element outside the valid region holds the pad value, in words."""
    pad = pad_value(cfg.pad, cfg.dtype)
    outside = ~valid_mask(cfg)
    n = int(outside.sum())
    if n == 0:
        return True, "no padded region (the valid shape is the whole tile)"
    got = np.asarray(got, np.float64)
    wrong = outside & ~(got == pad)
    bad = int(wrong.sum())
    what = (f"rows {cfg.valid_row}-{cfg.rows - 1}" if cfg.valid_row < cfg.rows else "")
    if cfg.valid_col < cfg.cols:
        what += (" and " if what else "") + f"cols {cfg.valid_col}-{cfg.cols - 1}"
    if bad == 0:
        return True, f"padded region ({what}) is right: {n} / {n} elements equal the pad value {pad:g}"
    return False, (f"padded region ({what}) is wrong: {bad} / {n} elements differ from the pad value "
                   f"{pad:g}, at {_where(wrong)}")


def tile_findings(got: np.ndarray, ref: np.ndarray, tol: np.ndarray, cfg: TileConfig) -> list[str]:
    """The wrong elements of the valid region split by kind: values that are ~0 where the
    reference is not (never written) and other wrong values (garbage), each with where it lies;
    then the padded region's state."""
    got = np.asarray(got, np.float64)
    inside = valid_mask(cfg)
    with np.errstate(invalid="ignore"):
        diff = np.abs(got - ref)
    bad = inside & ~(diff <= tol)
    _, u, sub, _ = DTYPES[cfg.dtype]
    tiny = np.abs(got) <= 4 * sub + 1e-30
    zero_kind = bad & tiny
    garbage = bad & ~tiny
    lines = []
    n_valid = int(inside.sum())
    if garbage.any():
        lines.append(f"valid region, wrong values: {_where(garbage)}")
    if zero_kind.any():
        lines.append(f"valid region, about 0 where the reference is not: {_where(zero_kind)}")
    if not bad.any():
        lines.append(f"valid region is right: {n_valid} / {n_valid} elements within tolerance")
    lines.append(padded_region_report(got, cfg)[1])
    return lines


class TileMismatch(Mismatch):
    """A tile that is not close to its reference; the message adds the tile's own findings."""

    def __init__(self, c: Census, findings: list[str], arrays: Optional[dict] = None):
        super().__init__(c, arrays)
        self.findings = findings
        self.args = (c.describe() + "\n" + "\n".join(findings),)

    def __str__(self) -> str:
        return self.args[0]


def assert_tile_close(got: np.ndarray, ref: np.ndarray, cfg: TileConfig, name: str = "out") -> Census:
    """The whole tile against the reference, with the tile census when it is not close."""
    model = error_model(ref, cfg)
    tol = model.tol
    g = np.asarray(got)
    # A bit-exact class needs no statistics: every element is the one right value, zero sign included.
    c = census(g, ref, tol=tol, name=name, zero_sign=True) if bit_exact(cfg) else census(g, ref, tol=model, name=name)
    if not c.ok:
        findings = [] if c.shape_error else tile_findings(got, ref, tol, cfg)
        raise TileMismatch(c, findings, {"got": g, "expected": ref, "tol": tol})
    return c


# --- which cases ---------------------------------------------------------------------------------

# Seed 002: valid_rows 1..16 and beyond 16 (valid_row = min(16, valid_rows)).
SEED_VALID_ROWS = tuple(range(1, 17)) + (17, 64)
# Variant x memory reuse, as the seed bisected: fused with and without reuse fail alike.
VARIANT_SETS = (("fused", True), ("fused", False), ("split", True), ("loaded", True), ("mul", True))

# The sweep: (rows, cols, valid_row, valid_col). Row widths in 32-byte blocks and not: cols 64
# is whole blocks for every dtype; 40 is for f32 (160 B) and not for f16/bf16 (80 B); 100 is
# not for any (400 B / 200 B); 1-row and valid_row = 0 edges are included.
SWEEP_SHAPES = ((8, 64, 3, 48), (5, 40, 2, 33), (16, 100, 16, 97), (1, 64, 1, 5), (4, 64, 0, 64))


def seed_configs() -> list[TileConfig]:
    return [seed_config(v, var, reuse) for var, reuse in VARIANT_SETS for v in SEED_VALID_ROWS]


def sweep_configs() -> list[TileConfig]:
    """Every dtype x pad x variant over the shapes; the two edge shapes (1-row, valid_row = 0) in
    f32 only, and memory reuse off only in the seed cases, to keep the default run small."""
    out = []
    for dtype in DTYPES:
        shapes = SWEEP_SHAPES if dtype == "f32" else SWEEP_SHAPES[:3]
        for pad in PADS:
            for rows, cols, vr, vc in shapes:
                for var, reuse in VARIANT_SETS:
                    if var == "fused" and not reuse:
                        continue
                    out.append(TileConfig(rows, cols, vr, vc, dtype, pad, var, reuse))
    return out


def large_configs() -> list[TileConfig]:
    """Bigger tiles for -m large: 64 x 1024 in every dtype and pad, fused and split."""
    return [TileConfig(64, 1024, 37, 1000, d, p, var, True) for d in DTYPES for p in PADS
            for var in ("fused", "split")]

def output_contract(case: Case) -> dict:
    """What every backend must return for ``case``: output name ("*": every output) -> (numpy dtype
    name, shape or None). Checked by accel_regress.core.runner before any comparison: the right values in
    another dtype or shape are a FAIL, not a PASS."""
    return {"*": ("float32", None)}       # f16/bf16 tiles travel as the float32 holding them exactly
