"""Every family's documented emu faults, injected into iree-vulkan runs (``--inject-fault``, as
for iree-cpu), are caught: each selection passes clean (the default run) and is not PASS with the
fault. Runs on lavapipe; SKIPs where iree-vulkan is unavailable."""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_regress.backends.iree_vulkan import IreeVulkanBackend
from accel_regress.core import faults
from suite_in_process import run_suite

EQUIVALENTS = Path(__file__).parents[2] / "fixtures" / "gpu_equivalent_faults.py"
GEMM = ("test_gemm_partition_n.py", "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4-bf16 and normal")
TILE = ("test_rowexpandmul_fillpad.py", "test_tile and seed-R16-C256-vr1-vc256-f32-padzero-fused-reuse-normal")
FUSED = ("test_fused_decode.py", "test_compare_mode and small-H64-NH4-KV2-D16-I128-T15-normal")
CUBE = ("test_matmul.py", "cube-M512-K512-N640-f32xf32")
# fault -> (test file, -k selection, the verdict it must give)
CASES = {
    "iron-gemm-forward-shape": (*GEMM, "FAIL"),
    "iron-gemm-stale-dma": (*GEMM, "FAIL"),
    "pto-bare-tile-validshape": (*TILE, "FAIL"),
    "pto-bare-tile-validshape-sim": (*TILE, "CRASH"),
    "saturn-f32-reduction-hang": ("test_f32_reduction.py", "softmax-64x64-v-vlen256-normal", "HANG"),
    "aie-matmul-remainder-compile": (*CUBE, "COMPILE_ERROR"),
    "aie-matmul-4x2-herd-hang": (*CUBE, "HANG"),       # through its equivalent below
    "fused-stale-output": (*FUSED, "FAIL"),
    "fused-rope-theta": (*FUSED, "FAIL"),
    "fused-rmsnorm-no-weight": (*FUSED, "FAIL"),
    "fused-softmax-no-max": (*FUSED, "FAIL"),
}
INJECT = {"aie-matmul-4x2-herd-hang": f"{EQUIVALENTS}:herd_hang_bf16_rule"}


def test_every_builtin_fault_has_a_vulkan_case():
    assert set(CASES) == set(faults.builtin())


@pytest.mark.parametrize("fault", sorted(CASES))
def test_fault_is_caught_on_iree_vulkan(fault, tmp_path):
    reason = IreeVulkanBackend().availability()
    if reason:
        pytest.skip(reason)
    file, select, verdict = CASES[fault]
    session = run_suite(tmp_path, f"tests/{file}", "--hw", "iree-vulkan", "-k", select,
                            "--inject-fault", INJECT.get(fault, fault))
    verdicts = [c["verdict"] for c in session.cases]
    assert session.cases and verdict in verdicts, (verdicts, session.out[-2000:])


@pytest.mark.parametrize("file,select", sorted({(f, k) for f, k, _ in CASES.values()}))
def test_selection_passes_clean(file, select, tmp_path):
    """The control: without a fault the same selection is PASS (or an expected verdict) only."""
    reason = IreeVulkanBackend().availability()
    if reason:
        pytest.skip(reason)
    session = run_suite(tmp_path, f"tests/{file}", "--hw", "iree-vulkan", "-k", select)
    verdicts = {c["verdict"] for c in session.cases}
    assert verdicts and verdicts <= {"PASS", "XFAIL", "NOT_APPLICABLE"}, (verdicts, session.out[-2000:])
