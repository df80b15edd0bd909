"""The GEMM error model: clean emu runs stay inside it (per element and in distribution) over many
seeds, it is not vacuous, and the bugs smaller than one element's old allowance are caught."""
import numpy as np
import pytest

from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden.compare import census
from accel_regress.golden.dtypes import quantize_bfp16, ulp
from accel_regress.families.gemm_partition_n import emu as model

SEEDS = range(20)
# Every default configuration except the three 2048^3 ones (a second each; covered by the suite).
CONFIGS = [c for c in gemm.CI_CONFIGS + [gemm.VOCAB_MINI] if c.M * c.K * c.N < 2048 ** 3]
K64 = gemm.GemmConfig(64, 64, 256, 16, 64, 64, 4, True, False, 1)


def _run(cfg, seed=0, block_rounding=gemm.BLOCK_ROUNDING):
    case = gemm.make_case(cfg, seed)
    inputs = gemm.make_inputs(case)
    out = model.run(case, inputs)["forward"][0]
    ref, tol = gemm.expected(inputs, cfg, block_rounding)
    return out, ref, tol, inputs


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: c.id)
def test_clean_runs_fit_the_model_over_20_seeds(cfg):
    worst = 0.0
    for seed in SEEDS:
        got, ref, tol, _ = _run(cfg, seed)
        c = census(got, ref, tol=tol, min_corr=gemm.MIN_CORR)
        assert c.ok, f"seed {seed}: {c.describe()}"
        worst = max(worst, float((np.abs(got - ref) / np.asarray(tol)).max()))
    # The bound is a bound, not a blanket: the real error reaches a visible share of it.
    assert 0.3 < worst < 1.0, worst


def test_unquantized_reference_keeps_the_wide_sound_model():
    """block_rounding None: the quantization is noise; per element only, and a clean run passes."""
    got, ref, tol, _ = _run(gemm.VOCAB_MINI, 0, None)
    c = census(got, ref, tol=tol)
    assert c.ok and c.stats is None and "not independent" in c.stats_note
    _, _, tight, _ = _run(gemm.VOCAB_MINI, 0)
    assert np.median(np.asarray(tol) / np.asarray(tight)) > 5


def test_block_rounding_is_a_parameter_of_the_reference():
    x = gemm.make_inputs(gemm.make_case(K64))["A"]
    near, floor = quantize_bfp16(x, 1), quantize_bfp16(x, 1, "floor")
    assert np.all(floor <= near) and np.any(floor < near)
    # a device that floors its block mantissas is not the default model's device
    got, ref, tol, _ = _run(K64, 0, "floor")
    assert not census(got, ref, tol=tol).ok


def test_one_element_off_by_two_percent_of_a_typical_value_is_caught():
    got, ref, tol, _ = _run(gemm.CI_CONFIGS[7])
    i = np.unravel_index(np.argmin(np.abs(np.abs(ref) - np.median(np.abs(ref)))), ref.shape)
    got = got.copy()
    got[i] += 0.02 * abs(ref[i])
    c = census(got, ref, tol=tol)
    assert c.over_tolerance == 1 and c.regions[0]["rows"] == [i[0], i[0]]


@pytest.mark.parametrize("cfg", [gemm.CI_CONFIGS[7], K64], ids=lambda c: c.id)
def test_bf16_output_rounded_toward_zero_is_caught(cfg):
    got, ref, tol, _ = _run(cfg)
    case = gemm.make_case(cfg)
    inputs = gemm.make_inputs(case)
    saved = model.to_bf16
    try:
        model.to_bf16 = lambda x: (np.trunc(x / ulp(x, "bf16")) * ulp(x, "bf16")).astype(np.float32)
        rtz = model.run(case, inputs)["forward"][0]
    finally:
        model.to_bf16 = saved
    c = census(rtz, ref, tol=tol)
    assert not c.stats["magnitude_bias"]["ok"] and "toward zero" in c.describe()


def test_bf16_accumulation_at_k64_is_caught():
    got, ref, tol, inputs = _run(K64)
    a, b = quantize_bfp16(inputs["A"], 1), quantize_bfp16(inputs["B"], 0)
    acc = np.zeros(ref.shape, np.float32)
    for k in range(a.shape[1]):
        acc = gemm.to_bf16(acc + a[:, k:k + 1] * b[k:k + 1, :]).astype(np.float32)
    c = census(acc, ref, tol=tol)
    assert not c.ok and not c.stats["spread"]["ok"]


def test_without_bfp16_the_model_tightens_to_bf16_rounding():
    cfg = gemm.GemmConfig(64, 512, 256, 16, 64, 64, 4, True, False, 4, emulate_bfp16=False)
    got, ref, tol, _ = _run(cfg)
    assert census(got, ref, tol=tol).ok
    assert np.all(np.asarray(tol) <= 2.0 ** -8 * np.abs(ref) * 1.01 + 1e-2 * np.abs(ref).mean())


def test_bfp16_quantization_error_is_within_half_a_step():
    from accel_regress.golden.dtypes import bfp16_step
    x = gemm.make_inputs(gemm.make_case(gemm.VOCAB_MINI))["A"]
    q = quantize_bfp16(x, axis=1)
    step = np.repeat(bfp16_step(x, axis=1), 8, axis=-1)[:, :x.shape[1]]
    assert np.all(np.abs(q - x) <= step / 2)
    assert np.any(q != x)
