"""The onnxruntime backends: unavailable with the reason where onnxruntime or an EP is missing,
NOT_APPLICABLE on the families that have no ONNX model."""
import importlib.util

import pytest

from accel_regress.backends import onnxruntime as B
from accel_regress.core import registry

EPS = ("onnxruntime-cuda", "onnxruntime-rocm", "onnxruntime-migraphx", "onnxruntime-openvino",
       "onnxruntime-vitisai", "onnxruntime-cann", "onnxruntime-qnn")


def test_every_ep_is_registered():
    assert {"onnxruntime", *EPS} <= set(registry.names())


def test_without_onnxruntime_every_ep_says_how_to_get_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnxruntime" else real(name, *a))
    for cls in (B.OnnxRuntimeBackend, B.OnnxRuntimeCudaBackend, B.OnnxRuntimeQnnBackend):
        reason = cls().availability()
        assert reason and "onnxruntime is not installed" in reason and "accel-regress[corpus]" in reason


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime is not installed")
def test_an_ep_this_onnxruntime_lacks_is_unavailable_with_the_providers_it_has():
    import onnxruntime as ort
    have = ort.get_available_providers()
    for name in EPS:
        backend = registry.get(name)
        if backend.provider in have:
            continue
        reason = registry.availability(name)
        assert reason and backend.provider in reason and ort.__version__ in reason


@pytest.mark.parametrize("op", ["gemm_partition_n", "matmul", "f32_reduction", "rowexpandmul_fillpad", "fused_decode"])
def test_families_without_an_onnx_model_are_not_applicable(op):
    reason = B.OnnxRuntimeBackend().supports_op(op)
    assert reason and "accel_regress.onnx_programs" in reason
    assert B.OnnxRuntimeBackend().supports_op("onnx_node") is None
