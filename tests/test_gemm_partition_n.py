"""IRON GEMM with partition_N (seeds 000 and 001): output shape, every partition, and the control.

Each partition is checked on its own (Pearson correlation > 0.99, as seed 000's script does, and
every element within the error model of golden/tolerance.py), so a bug that breaks only some
partitions names them. The reference applies the device's bfp16 quantization, so the model is
about one output ulp, and the census also checks the errors' mean and spread over the whole
output (a wrong rounding mode or a narrow accumulator). The control runs each partition as its
own partition_N=1 GEMM.
"""
import pytest

from accel_regress.golden import assert_close, store
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden import inputs as classes
from accel_regress.core.budget import simulator_budget
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(gemm.OP)

# Input classes (golden/inputs.py): every configuration with normal inputs; one small
# configuration with every other class by default, the rest with -m input_classes (the 2048^3
# GEMMs stay normal-only). Classes bfp16 cannot hold run on the bf16 path.
CLASS_DEFAULT = (gemm.CI_CONFIGS[1],)
CLASS_MAX_MACS = 1 << 31
# The K-tail configuration (K = 100: a partial last K tile) meets inf, NaN and -0 by default, where
# stale or padded tile memory meets them (issue 38); its bf16 path runs the specials.
K_TAIL_CLASS_DEFAULT = ("specials",)
# The bf16 path (no bfp16 emulation: what iree-cpu, iree-vulkan and torch devices run) meets exact
# round-half ties too (issue 49): near-normal bf16 products almost never sum to a tie, so a device
# that rounds ties away from zero passed there. The small P4 configuration by default, the others
# with -m input_classes.
BF16_TIES_DEFAULT = (gemm.BF16_CONFIGS[3],)


def _param(cfg, prefix="", marks=()):
    return pytest.param(cfg, id=prefix + cfg.test_id, marks=(*marks, *simulator_budget(cfg.M * cfg.K * cfg.N)))


def _classed(cfg, prefix="", marks=()):
    out = [_param(cfg, prefix, marks)]
    if marks or cfg.M * cfg.K * cfg.N > CLASS_MAX_MACS or not cfg.emulate_bfp16:
        return out
    for cls in classes.CLASSES[1:]:
        default = cfg in CLASS_DEFAULT or (cfg in gemm.K_TAIL_CONFIGS and cls in K_TAIL_CLASS_DEFAULT)
        c = cfg.with_inputs(cls, emulate_bfp16=False if cls not in gemm.BFP16_CLASSES else None)
        out.append(_param(c, prefix, () if default else (pytest.mark.input_classes,)))
    return out


CONFIGS = [p for c in gemm.CI_CONFIGS for p in _classed(c)] + _classed(gemm.VOCAB_MINI, "vocab-mini-") + [
    _param(gemm.LLAMA_VOCAB, "vocab-", (pytest.mark.large,))] + [_param(c) for c in gemm.BF16_CONFIGS] + [
    _param(c.with_inputs("ties"), marks=() if c in BF16_TIES_DEFAULT else (pytest.mark.input_classes,))
    for c in gemm.BF16_CONFIGS if c.M * c.K * c.N <= CLASS_MAX_MACS] + [
    p for c in gemm.K_TAIL_CONFIGS for p in _classed(c)]


def _partitions(configs, standalone=False):
    """Each configuration's partitions; ``standalone``: each partition run alone, whose
    simulator budget is its own multiply-adds, not the whole GEMM's."""
    out = []
    for p in configs:
        cfg = p.values[0]
        base = p.id[:-len(cfg.inputs) - 1]
        marks = p.marks
        if standalone:
            marks = [*(m for m in p.marks if m.name != "large_on"), *simulator_budget(cfg.M * cfg.K * cfg.n_part)]
        for i in range(cfg.partition_N):
            out.append(pytest.param(cfg, i, id=f"{base}-C{i}-{cfg.inputs}", marks=marks))
    return out


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg, golden_seed):
    return gemm.make_case(cfg, golden_seed)


@pytest.fixture(scope="module")
def inputs(case):
    return store.cached("inputs", case, lambda: gemm.make_inputs(case))


@pytest.fixture(scope="module")
def expected(case, inputs, cfg):
    return store.cached("expected", case, lambda: gemm.expected(inputs, cfg))


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_forward_shape(run, cfg):
    got = run["forward"]
    assert got.shape == (1, cfg.M, cfg.N), (
        f"forward() returned shape {got.shape}, expected (1, {cfg.M}, {cfg.N}) "
        f"({got.shape[-1]} of {cfg.N} columns)")


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_forward_values(run, cfg, expected):
    ref, tol = expected
    assert_close(run["forward"], ref[None], tol=tol[None], min_corr=gemm.MIN_CORR, name="forward() output")


@pytest.mark.parametrize("cfg, part", _partitions(CONFIGS), indirect=["cfg"])
def test_partition(run, cfg, part, expected):
    ref, tol = expected
    got = run[f"C_{part}"][:cfg.M, :cfg.n_part]
    assert_close(got, gemm.partition(ref, cfg, part), tol=gemm.partition(tol, cfg, part),
                 min_corr=gemm.MIN_CORR, origin=(0, part * cfg.n_part),
                 name=f"C_{part} (columns {part * cfg.n_part}-{(part + 1) * cfg.n_part - 1})")


@case_fixture(scope="function")
def standalone_case(cfg, part, golden_seed):
    """Partition ``part`` of the configuration as a GEMM of its own."""
    return gemm.make_case(cfg.standalone(part), golden_seed)


@pytest.mark.parametrize("cfg, part", [p for p in _partitions(CONFIGS, standalone=True) if p.values[0].partition_N > 1],
                         indirect=["cfg"])
def test_standalone_partition(hw, cfg, part, standalone_case, inputs, expected):
    ref, tol = expected
    run = hw.run(standalone_case, gemm.standalone_inputs(inputs, cfg, part))
    assert_close(run["C_0"][:cfg.M, :cfg.n_part], gemm.partition(ref, cfg, part),
                 tol=gemm.partition(tol, cfg, part), min_corr=gemm.MIN_CORR,
                 name=f"standalone partition {part}")
