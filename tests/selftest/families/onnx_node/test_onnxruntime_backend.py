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


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="onnxruntime is not installed")
def test_a_model_newer_than_onnxruntime_reads_is_a_skip_with_its_words(monkeypatch):
    """onnx 1.23.2 writes IR version 14 for its newest cases, which onnxruntime 1.31.1 does not
    read (227 corpus cases): no verdict on a kernel; a missing kernel stays COMPILE_ERROR."""
    import numpy as np
    from onnx import TensorProto, helper
    from accel_regress.core.errors import CompileError, Unsupported
    from accel_regress.golden.case import Case
    from accel_regress.toolchains.onnx.program import OnnxModel

    def model(ir: int, op: str = "Identity", opset: int = 13) -> bytes:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
        g = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g", [x], [y])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir).SerializeToString()

    case = Case.make("onnx_node", "onnx-test_probe", {"name": "probe"}, 0)
    backend = B.OnnxRuntimeBackend()
    for ir, op, expected in ((99, "Identity", Unsupported), (8, "NoSuchOp", CompileError)):
        monkeypatch.setattr(B, "model_for", lambda c, m=model(ir, op): OnnxModel(m, (("x", "tensor"),), (("y", "tensor"),)))
        with pytest.raises(expected) as err:
            backend.run(case, {"x": np.ones(2, np.float32)})
        if expected is Unsupported:
            assert "max supported IR version" in str(err.value) and "does not read this model" in str(err.value)
