"""A few corpus cases on iree-cpu through IREE's ONNX importer, judged by the same error models."""
import pytest

from accel_regress.core import registry, runner
from accel_regress.golden import census
from accel_regress.families.onnx_node import golden as G
from accel_regress.families.onnx_node import iree_program as P

pytestmark = pytest.mark.skipif(registry.availability("iree-cpu") is not None,
                                reason=f"iree-cpu: {registry.availability('iree-cpu')}")
# gemm_default_scalar_bias: a 0-d operand, which iree-cpu passed as 1-d (np.ascontiguousarray) until 0-d stayed 0-d.
CASES = ("onnx-test_softmax_axis_1", "onnx-test_matmul_2d", "onnx-test_exp", "onnx-test_gemm_default_scalar_bias")


def test_imported_cases_pass_on_iree_cpu_and_the_rest_skip_with_the_reason(in_corpus_root, monkeypatch, tmp_path):
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "iree"))
    by = {c.id: c for c in in_corpus_root}
    for cid in CASES:
        case = by[cid]
        assert registry.get("iree-cpu").supports(case) is None
        inputs = G.make_inputs(case)
        got = runner.execute(runner.Job("iree-cpu", case, inputs))
        ref = G.reference(case, inputs)
        tol = G.tolerances(case, inputs, ref)
        for n in ref:
            c = census(G.widened(got[n]), ref[n], tol=tol[n], zero_sign=G.zero_sign(case))
            assert c.ok, f"{cid}:{n}: {c.describe()}"
    reason = registry.get("iree-cpu").supports(by["onnx-test_reduce_sum_keepdims_random"])
    assert reason and "ReduceSum" in reason and "Softmax" in reason
    assert "onnx.Softmax" in P.program(by[CASES[0]]).mlir       # the importer's torch-dialect text
