"""Issue 38: the default run's reduction, fused-block and K-tail cases reach the mutants that only
they reach, and the statistics keep their power as K grows. Each test fails on the code before
issue 38 (say which in its docstring) and passes clean."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from ml_dtypes import bfloat16

from accel_regress.golden import census
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.fused_decode import emu as emu_fd
from accel_regress.families.fused_decode import golden as F
from accel_regress.families.gemm_partition_n import golden as gemm

ROOT = Path(__file__).resolve().parents[3]


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MUT = _load(ROOT / "tests/selftest/fixtures/reduction_mutants.py", "_reduction_mutants")
FUSED_MUT = _load(ROOT / "tests/selftest/fixtures/fused_mutants.py", "_fused_mutants")
TAIL = (R.TAIL_ROWS, 33)


def _default_ids(test_file: str) -> set:
    """The ids of a test module's parameters that run by default (no opt-in mark)."""
    mod = _load(ROOT / "tests" / test_file, "_ids_" + test_file[:-3])
    return {p.id for p in mod.CONFIGS if not any(m.name in ("large", "input_classes") for m in p.marks)} \
        if hasattr(mod, "CONFIGS") else {p.id for p in mod.DEFAULT + mod.CLASS_CASES}


def test_default_run_holds_shifted_tail_and_specials_cases():
    """Before issue 38 mean_var, layernorm and rmsnorm had no default tail case of the shifted class
    (layernorm and rmsnorm no shifted case at all), the GEMM K-tail ran the normal class only, and
    the odd fused block neither the shifted class nor massive activations."""
    red = _default_ids("test_f32_reduction.py")
    for kind in R.ROW_KINDS:
        for cls in ("normal", "shifted"):
            assert f"{kind}-4x33-v-vlen256-{cls}" in red, (kind, cls)
    assert {"row_sum-4x33-v-vlen256-specials", "softmax-4x33-v-vlen256-specials",
            "log_softmax-4x33-v-vlen256-specials", "log_softmax-64x64-v-vlen256-normal"} <= red
    assert "M64-K100-N256-m16-k64-n64-c4-bT-cF-P4-bf16-specials" in _default_ids("test_gemm_partition_n.py")
    fused = _default_ids("test_fused_decode.py")
    assert f"small-odd-{F.SMALL_ODD.id}-shifted" in fused
    assert f"small-odd-large-{F.SMALL_ODD_LARGE.id}-normal" in fused
    assert F.SMALL_ODD_LARGE.head_dim & (F.SMALL_ODD_LARGE.head_dim - 1)      # not a power of two


@pytest.mark.parametrize("kind", R.ROW_KINDS)
def test_shifted_rows_hold_near_constant_rows_under_eps(kind):
    x = R.make_inputs(R.make_case(kind, TAIL, inputs="shifted"))["x"].astype(np.float64)
    scale = (x * x).mean(axis=1) if kind == "rmsnorm" else x.var(axis=1)
    assert (scale < R.EPS / 8).any(), scale
    assert (np.abs(x.mean(axis=1)) > 500 * x.std(axis=1)).any()


def _caught(kind, cls, mutant, shape=TAIL, seed=0) -> bool:
    case = R.make_case(kind, shape, base_seed=seed, inputs=cls)
    ins = R.make_inputs(case)
    ref = R.reference(case, ins)
    tol = R.tolerances(case, ins, ref)
    got = MUT.compute(kind, ins, **MUT.MUTANTS[mutant]) if mutant else MUT.compute(kind, ins)
    return any(not census(got[o], ref[o], tol=tol[o], name=o).ok for o in ref)


@pytest.mark.parametrize("kind", R.ROW_KINDS)
def test_tail_cases_pass_a_correct_f32_device(kind):
    for cls in ("normal", "shifted"):
        assert not _caught(kind, cls, None), (kind, cls)


@pytest.mark.parametrize("kind, mutant", [("mean_var", "onepass_var"), ("layernorm", "onepass_var"),
                                          ("layernorm", "eps_moved"), ("rmsnorm", "eps_moved")])
def test_shifted_tail_catches_what_normal_rows_miss(kind, mutant):
    """One-pass variance passes every normal row; a moved eps passes normal rows of 4096 (their
    variance, about 1, hides eps); the shifted tail case (near-constant rows) catches both."""
    assert _caught(kind, "shifted", mutant)
    assert not _caught(kind, "normal", mutant, shape=(16, 4096) if mutant == "eps_moved" else TAIL)


# log-softmax's default cases (tests/test_f32_reduction.py) and the mutant that each must catch.
LSM_DEFAULT = [(R.SEED_SHAPES["log_softmax"], "normal"), (TAIL, "normal"), (TAIL, "shifted"), (TAIL, "specials")]


@pytest.mark.parametrize("mutant", ["lsm_naive", "lsm_no_max", "lsm_max_plus_log", "acc_bf16", "acc_f16"])
def test_log_softmax_default_cases_catch_its_mutants(mutant):
    """Before issue 38 there was no log_softmax kind (make_case raised ValueError)."""
    assert any(_caught("log_softmax", cls, mutant, shape=shape) for shape, cls in LSM_DEFAULT)


def test_log_softmax_outputs_get_the_statistics():
    """Its error model is the other row kinds' (kind accumulation, the exp and log ulp bounds as the
    library share, a row one term, sigma = the rest of the allowance), so bias, magnitude bias and
    the clipped spread are judged on every default case, in units of sigma."""
    for shape, cls in LSM_DEFAULT:
        case = R.make_case("log_softmax", shape, inputs=cls)
        ins = R.make_inputs(case)
        ref = R.reference(case, ins)
        model = R.tolerances(case, ins, ref)["y"]
        assert model.kind == "accumulation" and model.rows_correlated and model.lib is not None
        c = census(MUT.compute("log_softmax", ins)["y"], ref["y"], tol=model, name="y")
        assert c.ok and c.stats is not None and c.stats["unit"] == "sigma" and c.stats["spread"]["ok"], (shape, cls)


def test_log_softmax_wide_rows_are_what_catch_a_naive_log_of_softmax():
    """log(softmax(x)) is right to a few ulp wherever exp(x - max) stays a normal f32: it passes
    every default case but the normal class, whose rows of spread 48 (R.LOGIT_SCALES) reach
    x - max < -104, where it returns -inf. Every seed's 4 x 33 case holds such a row."""
    for shape, cls in LSM_DEFAULT:
        assert _caught("log_softmax", cls, "lsm_naive", shape=shape) == (cls == "normal"), (shape, cls)
    for seed in range(50):
        x = R.make_inputs(R.make_case("log_softmax", TAIL, base_seed=seed))["x"].astype(np.float64)
        assert (x.max(axis=1) - x.min(axis=1) > 104).any(), seed


def test_log_softmax_shifted_rows_catch_max_plus_log_order():
    """x - (max + log(sum)) rounds max + log(sum) at the scale of max (pytorch#11752): on rows of
    mean +-2000 every element is off by up to 2**-14; rows of mean near 0 hide it."""
    assert _caught("log_softmax", "shifted", "lsm_max_plus_log")
    assert not _caught("log_softmax", "normal", "lsm_max_plus_log")


def test_massive_activations_reach_an_f16_sum_of_squares():
    """The odd block's normal inputs pass an f16 RMSNorm accumulator; its massive activations
    (squares of 2**20) overflow it."""
    def caught(cfg):
        case = F.make_case(cfg, 0, "steps")
        ins = F.make_inputs(case)
        clean = emu_fd.run(case, ins)
        assert F.first_divergent(F.compare_steps(case, ins, dict(clean))) is None
        got = FUSED_MUT.rmsnorm_f16_sumsq(case, dict(clean))
        return F.first_divergent(F.compare_steps(case, ins, got)) is not None
    assert not caught(F.SMALL_ODD)
    assert caught(F.SMALL_ODD_LARGE)


def _tile_bf16(a, b, tk=64):
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], tk):
        acc = (acc + (a[:, k0:k0 + tk].astype(np.float64) @ b[k0:k0 + tk].astype(np.float64))
               .astype(np.float32)).astype(bfloat16).astype(np.float32)
    return acc


def test_spread_catches_bf16_partial_sums_at_k_8192():
    """GEMM partial sums stored in bf16 between K tiles: at K = 8192 every element is within its
    allowance and, before the spread's clip (golden/statistics.py SPREAD_CLIP), the spread passed
    too (0.187 of 0.252 allowed); a correct f32 accumulation passes."""
    cfg = gemm.GemmConfig(64, 8192, 64, 16, 64, 64, 4, True, False, 1, emulate_bfp16=False)
    ins = gemm.make_inputs(gemm.make_case(cfg))
    ref, model = gemm.expected(ins, cfg)
    a, b = ins["A"], ins["B"]
    clean = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32).astype(bfloat16).astype(np.float32)
    assert census(clean, ref, tol=model).ok
    got = census(_tile_bf16(a, b).astype(bfloat16).astype(np.float32), ref, tol=model)
    assert not got.ok and got.stats["spread"]["ok"] is False and got.over_tolerance == 0, got
