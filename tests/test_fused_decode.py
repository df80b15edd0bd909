"""Fused Llama decode block (seed 001): compare mode step by step, and the fused block end to end.

Compare mode (seed 001's FusedCompareCallable): every step of families/fused_decode/golden.py's runlist
against its operator's reference, re-seeded from the backend's own inputs to that step, so a
failure names the first divergent step and no error accumulates. End to end: the block run as one
fused program (a second case, same inputs) against the float64 golden of the whole block. A backend whose steps are all right
alone but whose fused program is wrong has a fusion bug, and the end-to-end failure says so.
Compare mode runs every input class of the family (families/fused_decode/golden.py CLASSES), and
each step is judged per element and by its error statistics (``step_model``). Reference mode
(the whole runlist on the CPU, no device) is
``python repros/fused_decode_compare.py --mode reference``.
"""
import numpy as np
import pytest

from accel_regress.golden import assert_close, store
from accel_regress.families.fused_decode import golden as F
from accel_regress.core.budget import on_simulators
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(F.OP)

SIZES = (("small", F.SMALL, (), F.CLASSES), ("small-odd", F.SMALL_ODD, (), ("normal", "shifted")),
         ("small-odd-large", F.SMALL_ODD_LARGE, (), ("normal",)),
         ("small-masked", F.SMALL_MASKED, (), ("normal",)),
         ("small-negative", F.SMALL_NEGATIVE, (), ("normal",)),
         ("small-massive", F.SMALL_MASSIVE, (), ("normal",)),
         ("llama-3.2-1b", F.LLAMA_3_2_1B, (pytest.mark.large,), F.CLASSES))
# Every input class on the small block in compare mode (F.CLASSES: what each reaches); end to end
# and the model's sizes with the normal class, the other classes there with -m input_classes. The
# odd block (lengths not powers of two, where 1/n is not exact in bf16) with the normal class; the
# masked block (padding mask: partly and fully masked attention rows) with the normal class. The
# odd block (head size 12) also with the shifted class and with massive activations (F.SMALL_ODD_LARGE).
# The small block with attention rows negative everywhere (F.SCORES: below -120, and below -1.5e5
# from massive q/k activations), where a softmax max that starts above -inf goes wrong.
# The odd block's shifted and massive-activation cases run the odd block's compiled steps on other
# numbers: ~40 s each under qemu (loaded 2-core machine), so a simulator runs them with -m large.
SIMULATOR_LARGE = {(F.SMALL_ODD, "shifted"), (F.SMALL_ODD_LARGE, "normal")}
ON_SIMULATORS = on_simulators("the odd block's steps on other inputs (the normal case runs them)")
CONFIGS = [pytest.param((cfg, cls), id=f"{name}-{cfg.id}-{cls}",
                        marks=marks + ((pytest.mark.input_classes,) if cls != "normal" and marks else ())
                        + ((ON_SIMULATORS,) if (cfg, cls) in SIMULATOR_LARGE else ()))
           for name, cfg, marks, classes in SIZES for cls in classes]
NORMAL = [p for p in CONFIGS if p.values[0][1] == "normal"]


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg, golden_seed):
    block, cls = cfg
    return F.make_case(block, golden_seed, "steps", inputs=cls)


@pytest.fixture(scope="module")
def inputs(case):
    return store.cached("inputs", case, lambda: F.make_inputs(case))


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


@case_fixture
def fused_case(case):
    """The block as one program (end to end), on the same inputs."""
    return F.as_program(case, "fused")


@pytest.fixture(scope="module")
def fused_run(hw, fused_case, inputs):
    return hw.run(fused_case, inputs)


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_compare_mode(run, case, inputs):
    results = F.compare_steps(case, inputs, run.outputs)
    if F.first_divergent(results) is not None:
        raise F.PipelineMismatch(results)


@pytest.mark.parametrize("cfg", NORMAL, indirect=True)
def test_end_to_end(fused_run, run, case, inputs):
    expected, tol = F.end_to_end_expected(case, inputs)
    got = np.asarray(fused_run[F.FUSED_OUTPUT], np.float64)
    try:
        assert_close(got, expected, tol=tol, name=f"fused block output {F.FUSED_OUTPUT!r}")
    except AssertionError as exc:
        if run.verdict is None and F.first_divergent(F.compare_steps(case, inputs, run.outputs)) is None:
            exc.add_note("fusion bug: every step is right when run alone (compare mode passes), "
                         "the fused program is wrong")
        raise
