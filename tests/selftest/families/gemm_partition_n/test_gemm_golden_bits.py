"""The GEMM golden's fast paths (golden/dtypes.py to_bfp16, golden/tolerance.py
gemm_bfp16_quantized, families/gemm_partition_n/golden.py expected) give bit for bit what the straightforward
formulas give: the block exponent by float32 log2, the quantization and the error model over
whole arrays, the reference from the fully quantized operands."""
import numpy as np
import pytest
import torch

from accel_regress.golden import bulk, dtypes, tolerance
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden.dtypes import bfloat16


# --- the straightforward formulas (the code these paths replaced) ---------------------------------

def _blocks_last(x, axis):
    moved = np.moveaxis(np.asarray(x, dtype=np.float32), axis, -1)
    n = moved.shape[-1]
    pad = (-n) % 8
    if pad:
        moved = np.concatenate([moved, np.zeros(moved.shape[:-1] + (pad,), np.float32)], axis=-1)
    return moved.reshape(moved.shape[:-1] + (-1, 8)), n


def _step(x, axis):
    blocks, _ = _blocks_last(x, axis)
    bmax = np.max(np.abs(blocks), axis=-1)
    with np.errstate(divide="ignore"):
        exp = np.floor(np.log2(np.where(bmax > 0, bmax, 1.0)))
    return np.where(bmax > 0, np.exp2(exp - 6), 0.0).astype(np.float32)


def _quantize(x, axis, rounding="nearest-even"):
    blocks, n = _blocks_last(x, axis)
    step = _step(x, axis)[..., None]
    safe = np.where(step > 0, step, 1.0)
    q = np.clip({"nearest-even": np.rint, "floor": np.floor}[rounding](blocks / safe), -128, 127) * step
    q = q.reshape(q.shape[:-2] + (-1,))[..., :n]
    return np.ascontiguousarray(np.moveaxis(q.astype(np.float32), -1, axis))


def _tolerance(a_q, b_q, ref, bfp16=True):
    amax, sa = np.max(np.abs(_blocks_last(a_q, 1)[0]), axis=-1), _step(a_q, 1)
    bmax, sb = np.max(np.abs(_blocks_last(b_q, 0)[0]), axis=-1), _step(b_q, 0)
    if not bfp16:
        sa, sb = np.zeros_like(sa), np.zeros_like(sb)
    absprod = 8 * ((amax + sa / 2) @ (bmax + sb / 2).T)
    e = 2 * tolerance.gamma(a_q.shape[1]) * absprod
    return (e + 2.0 ** -8 * (np.abs(ref) + e)).astype(np.float32)


def _same(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.fixture(params=["whole", "pieces"])
def pieces(request, monkeypatch):
    """As configured, and with every piecewise loop cut into many small pieces."""
    if request.param == "pieces":
        monkeypatch.setattr(dtypes, "_CACHE_ELEMENTS", 40)
        monkeypatch.setattr(tolerance, "_PIECE_ELEMENTS", 30)
    return request.param


def _cases():
    g = np.random.default_rng(0)
    for shape, axis in (((16, 64), 1), ((64, 24), 0), ((13, 21), 1), ((21, 13), 0), ((3, 20, 5), 1), ((7,), 0)):
        x = (g.standard_normal(shape) * np.exp2(g.integers(-30, 30, size=shape))).astype(np.float32)
        yield "random", x, axis
        yield "bf16", x.astype(bfloat16).astype(np.float32), axis
        yield "subnormal", (x * 2.0 ** -135).astype(np.float32), axis    # steps below f32, blocks of zeros
        z = np.zeros(shape, np.float32)
        z.flat[::3] = -0.0
        yield "zeros", z, axis
        y = x.copy()
        y.flat[::2] = 0.0
        y.flat[1::5] *= -1
        yield "mixed", y, axis


@pytest.mark.parametrize("rounding", ["nearest-even", "floor"])
def test_to_bfp16_is_the_elementwise_formula(rounding, pieces):
    for kind, x, axis in _cases():
        q = dtypes.to_bfp16(x, axis, rounding)
        assert _same(q.values, _quantize(x, axis, rounding)), (kind, x.shape, axis)
        assert _same(np.moveaxis(q.absmax, axis, -1), np.max(np.abs(_blocks_last(q.values, axis)[0]), axis=-1)), kind
        assert _same(dtypes.bfp16_step(x, axis), _step(x, axis)), kind


def test_to_bfp16_of_a_column_panel_into_a_buffer():
    x = np.random.default_rng(1).standard_normal((40, 30)).astype(np.float32)
    out = np.full((40, 7), np.nan, np.float32)
    q = dtypes.to_bfp16(x[:, 5:12], 0, out=out)
    assert q.values is out and _same(out, _quantize(x, 0)[:, 5:12])
    odd = np.full((13, 7), np.nan, np.float32)              # 13 rows: a padded block
    assert _same(dtypes.to_bfp16(x[:13, 5:12], 0, out=odd).values, _quantize(x[:13], 0)[:, 5:12])
    with pytest.raises(ValueError, match="C-contiguous"):
        dtypes.to_bfp16(x[:, :7], 0, out=out[:, :7].T.copy().T)


def test_block_exponent_field_is_floor_log2_on_every_bf16_and_near_every_power_of_two():
    bf16 = (np.arange(1, 0x7F80, dtype=np.uint32) << 16).view(np.float32)    # every positive finite bf16
    fields = np.arange(0, 256, dtype=np.uint32)[:, None] << 23
    edges = np.concatenate([np.arange(0, 1 << 12), np.arange(0x7EF000, 0x800000)]).astype(np.uint32)
    near = (fields | edges[None, :]).reshape(-1).view(np.float32)           # incl. subnormals, inf, NaN
    for m in (bf16, near):
        with np.errstate(invalid="ignore"):
            want = _step(np.abs(m)[:, None].repeat(8, axis=1), 1)[:, 0]
        assert _same(dtypes.block_step(np.abs(m)), want)


def test_the_old_exponent_formula_is_not_the_field_everywhere():
    """The fallback matters: float32 log2 rounds up to the next power of two just below it."""
    x = np.float32(np.nextafter(np.float32(2.0 ** 20), np.float32(0)))
    assert np.floor(np.log2(x)) == 20 and dtypes.block_step(np.array([x]))[0] == 2.0 ** 14


CONFIGS = [gemm.GemmConfig(64, 64, 40, 16, 64, 64, 4, True, False, 1),       # M = K: the allowance reuses B's memory
           gemm.GemmConfig(48, 72, 24, 16, 8, 8, 4, True, False, 4),
           gemm.GemmConfig(48, 72, 24, 16, 8, 8, 4, True, False, 4, emulate_bfp16=False)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
@pytest.mark.parametrize("inputs_class", ["normal", "shifted"])
def test_expected_is_the_straightforward_composition(cfg, inputs_class, pieces):
    cfg = cfg.with_inputs(inputs_class)
    inputs = gemm.make_inputs(gemm.make_case(cfg))
    ref, tol = gemm.expected(inputs, cfg)
    a, b = inputs["A"], inputs["B"]
    if cfg.emulate_bfp16:
        a, b = _quantize(a, 1), _quantize(b, 0)
    want = (torch.from_numpy(a).double() @ torch.from_numpy(b).double()).float().numpy()
    assert _same(ref, want)
    assert _same(tol.tol, _tolerance(a, b, want, cfg.emulate_bfp16)) and tol.kind == "rounding"
    assert _same(gemm.product(inputs, cfg, gemm.BLOCK_ROUNDING), ref)
    assert _same(gemm.tolerance_for(inputs, ref, cfg, gemm.BLOCK_ROUNDING).tol, tol.tol)


def test_bulk_empty_is_writable_numpy():
    x = bulk.empty((3, 4))
    x[...] = 1.5
    assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous and x.sum() == 18
