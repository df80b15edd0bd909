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

from dataclasses import asdict, dataclass
from typing import Mapping, Optional

import numpy as np
from ml_dtypes import bfloat16

from golden import inputs as gen
from golden.case import Case
from golden.compare import Census, Mismatch, census
from golden.tolerance import ErrorModel

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
    return Case.make(OP, cfg.id, cfg.params(), base_seed)


def config_of(case: Case) -> TileConfig:
    return TileConfig(**case.params)


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    """``gated`` [R, C] and ``scale`` ([R, 1], or [R, C] for the ``mul`` variant: the per-row
    scale broadcast, so every variant has the same reference), dtype values held in float32.

    Magnitudes: gated near-normal with scale 2, scale uniform in [0.25, 4) with a random sign,
    so products are normal numbers in every dtype and nowhere near overflow.
    """
    p = case.params
    rng = gen.rng(case.seed)
    rows, cols, dtype = p["rows"], p["cols"], p["dtype"]
    gated = round_to(np.clip(gen.near_normal(rng, (rows, cols), 2.0), -7.5, 7.5), dtype)
    mag = gen.uniform(rng, (rows, 1), 0.25, 4.0)
    sign = np.where(gen.small_integers(rng, (rows, 1), 0, 1) > 0, 1.0, -1.0)
    scale = round_to(mag * sign, dtype)
    if p["variant"] == "mul":
        scale = np.ascontiguousarray(np.broadcast_to(scale, (rows, cols)))
    return {"gated": gated, "scale": scale}


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


def reference(inputs: Mapping[str, np.ndarray], cfg: TileConfig) -> np.ndarray:
    """The expected [R, C] output in float64 (exact: see the module docstring)."""
    g = inputs["gated"]
    if cfg.variant == "loaded":
        prod = np.asarray(g, np.float64)
    elif cfg.variant == "mul":
        prod = np.asarray(g, np.float64) * np.asarray(inputs["scale"], np.float64)
    else:
        prod = row_expand_mul(g, inputs["scale"])
    tile, vr, vc = set_validshape(prod, cfg.valid_row, cfg.valid_col)
    return store(fillpad(tile, vr, vc, pad_value(cfg.pad, cfg.dtype)))


def valid_mask(cfg: TileConfig) -> np.ndarray:
    m = np.zeros((cfg.rows, cfg.cols), bool)
    m[:cfg.valid_row, :cfg.valid_col] = True
    return m


def tolerance_for(ref: np.ndarray, cfg: TileConfig) -> np.ndarray:
    """Per-element allowance: u|ref| + half a subnormal step inside the valid region, 0 outside."""
    _, u, sub, _ = DTYPES[cfg.dtype]
    inside = valid_mask(cfg)
    tol = np.zeros(ref.shape, np.float64)
    tol[inside] = u * np.abs(ref[inside]) + sub
    return tol


def error_model(ref: np.ndarray, cfg: TileConfig) -> ErrorModel:
    """``tolerance_for`` with the statistics of one rounding to nearest in the tile dtype."""
    return ErrorModel(tolerance_for(ref, cfg), "rounding", dtype=cfg.dtype)


# --- the tile census ---------------------------------------------------------------------------

def _where(mask: np.ndarray) -> str:
    """Rows and column ranges of a boolean mask, in golden.compare's wording."""
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
    c = census(g, ref, tol=model, name=name)
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
    name, shape or None). Checked by hardware.runner before any comparison: the right values in
    another dtype or shape are a FAIL, not a PASS."""
    return {"*": ("float32", None)}       # f16/bf16 tiles travel as the float32 holding them exactly
