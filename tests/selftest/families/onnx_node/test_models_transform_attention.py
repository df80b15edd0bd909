"""The transform (DFT, STFT), attention (f32 and f16), normalization (LayerNormalization,
RMSNormalization) and random classes on real onnxruntime runs (issue 45): clean runs pass, a
doubled smallest |y| of Attention's and the normalizations' first output is caught on every case
onnxruntime runs (a DFT's is within its float32 rounding), and a random draw is NOT_APPLICABLE
with the reason."""
from pathlib import Path

import numpy as np
import pytest

from accel_regress.backends.onnxruntime import OnnxRuntimeBackend
from accel_regress.core import registry, runner
from accel_regress.core.errors import CompileError, Crash
from accel_regress.golden import census
from accel_regress.families.onnx_node import corpus as C
from accel_regress.families.onnx_node import error_models as M
from accel_regress.families.onnx_node import golden as G


pytestmark = pytest.mark.skipif(registry.availability("onnxruntime") is not None,
                                reason=f"onnxruntime: {registry.availability('onnxruntime')}")
FAULTS = Path(__file__).parent / "faults.py"
MODULES = ("dft", "stft", "attention", "layernormalization", "rmsnormalization", "dropout", "bernoulli")
FAULT_CAUGHT = ("attention", "normalization")
# Declared in expectations/onnxruntime.toml (the qk output's finite mask sentinel; the shorter mask).
DECLARED = {"onnx-test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal",
            "onnx-test_attention_4d_with_past_and_present_qk_matmul_bias_4d_mask_causal"}


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    if C.unavailable():
        pytest.skip(C.unavailable())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACCEL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield G.cases(0, MODULES)


def _judge(case, outputs) -> bool:
    inputs = G.make_inputs(case)
    ref = G.reference(case, inputs)
    tol = G.tolerances(case, inputs, ref)
    return all(census(G.widened(outputs[n]), ref[n], tol=tol[n], zero_sign=G.zero_sign(case)).ok for n in ref)


def _run(case, fault=None):
    return runner.execute(runner.Job("onnxruntime", case, G.make_inputs(case), fault))


def test_classes(cases):
    by = {c.id: c.params["error_model"] for c in cases}
    assert by["onnx-test_dft"] == by["onnx-test_stft_with_window"] == "transform"
    assert by["onnx-test_attention_4d_fp16"] == by["onnx-test_attention_3d_gqa"] == "attention"
    assert by["onnx-test_layer_normalization_4d_axis1"] == by["onnx-test_rms_normalization_2d_axis0"] == "normalization"
    assert by["onnx-test_training_dropout"] == by["onnx-test_bernoulli_seed"] == "random"
    assert by["onnx-test_training_dropout_zero_ratio"] != "random" and by["onnx-test_dropout_default"] != "random"


def test_a_random_draw_is_not_applicable_with_the_reason(cases):
    case = next(c for c in cases if c.id == "onnx-test_training_dropout")
    reason = OnnxRuntimeBackend().supports(case)
    assert reason and "random draw" in reason and "numpy" in reason


def test_clean_runs_pass_and_a_doubled_smallest_y_fails(cases):
    ran, bad, missed = 0, [], []
    for case in cases:
        if case.params["error_model"] not in ("transform", *FAULT_CAUGHT) or case.id in DECLARED:
            continue
        try:
            clean = _run(case)
        except (CompileError, Crash):
            continue                  # a kernel onnxruntime lacks (local_window: COMPILE_ERROR) or declared
        ran += 1
        if not _judge(case, clean):
            bad.append(case.id)
        if case.params["error_model"] in FAULT_CAUGHT:
            faulty = _run(case, f"{FAULTS}:smallest_element_doubled")
            if _judge(case, faulty):
                missed.append(case.id)
    assert ran >= 100
    assert not bad, f"clean runs failed their model: {bad}"
    assert not missed, f"a doubled smallest element passed on {missed}"


def test_the_transform_bound_is_what_its_docstring_says():
    factor, twiddle = M.transform_bound(10, 2.0 ** -24)
    assert twiddle == pytest.approx((6 * np.pi * 81 / 10 + 10) * 2.0 ** -24)
    assert factor == pytest.approx(twiddle + 9 * 2.0 ** -24, rel=1e-6)
