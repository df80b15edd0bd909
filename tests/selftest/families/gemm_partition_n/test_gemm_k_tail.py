"""GEMM K tails (issue 29 item 10): the K = 100 cases (K past the last whole K tile and inside a
bfp16 block) pass clean over many seeds, and a kernel that drops the partial K tile
(tests/selftest/fixtures/tail_faults.py:k_tail_dropped) fails exactly them: every value check of
every K-tail case, and nothing of the default run's other GEMM cases."""
import re
from pathlib import Path

import pytest

from accel_regress.core import registry, runner
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden import assert_close

pytest_plugins = ["pytester"]

FAULTS = Path(__file__).parents[2] / "fixtures" / "tail_faults.py"
GEMM_TESTS = Path(__file__).resolve().parents[3] / "test_gemm_partition_n.py"


def _check(cfg, seed, backend="emu"):
    case = gemm.make_case(cfg, seed)
    inputs = gemm.make_inputs(case)
    ref, tol = gemm.expected(inputs, cfg)
    out = runner.execute(runner.Job(backend, case, inputs, None))
    assert_close(out["forward"], ref[None], tol=tol[None], min_corr=gemm.MIN_CORR)
    for i in range(cfg.partition_N):
        assert_close(out[f"C_{i}"][:cfg.M, :cfg.n_part], gemm.partition(ref, cfg, i),
                     tol=gemm.partition(tol, cfg, i), min_corr=gemm.MIN_CORR)


def test_k_tail_configs_reach_a_tail():
    for cfg in gemm.K_TAIL_CONFIGS:
        assert gemm.has_k_tail(cfg) and cfg.K % 8, cfg.id      # a partial K tile and a partial bfp16 block
    assert not any(gemm.has_k_tail(c) for c in gemm.CI_CONFIGS + gemm.BF16_CONFIGS + [gemm.VOCAB_MINI])


@pytest.mark.parametrize("cfg", gemm.K_TAIL_CONFIGS, ids=lambda c: c.id)
@pytest.mark.parametrize("seed", range(25))
def test_k_tail_clean_over_seeds(cfg, seed):
    _check(cfg, seed)


@pytest.mark.parametrize("seed", range(3))
def test_k_tail_clean_on_iree_cpu(seed):
    why = registry.get("iree-cpu").availability()
    if why:
        pytest.skip(why)
    (cfg,) = [c for c in gemm.K_TAIL_CONFIGS if not c.emulate_bfp16]
    _check(cfg, seed, "iree-cpu")


def test_k_tail_fault_fails_only_the_k_tail_cases(pytester):
    pytester.makepyfile(test_gemm=GEMM_TESTS.read_text())
    result = pytester.runpytest("--hw", "emu", "-rf", "--inject-fault", f"{FAULTS}:k_tail_dropped")
    failed = {m.group(1) for m in map(re.compile(r"^FAILED (\S+)").match, result.outlines) if m}
    outcomes = result.parseoutcomes()
    assert failed and all("-K100-" in f for f in failed), sorted(failed)
    # 3 K-tail cases (bfp16 and bf16 normal, bf16 specials) x (forward values, 4 partitions, 4 standalone)
    tail_value_checks = 3 * (1 + 4 + 4)
    assert len(failed) == tail_value_checks == outcomes["failed"], (sorted(failed), outcomes)
    assert outcomes["passed"] > 60            # every other default GEMM case ran and passed
