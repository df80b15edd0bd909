"""iree-vulkan, iree-cuda, iree-hip: the target each compiles for, the copy path results come
back through, compile-only where the GPU is missing."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress import CompileError
from accel_regress.backends.iree_cuda import IreeCudaBackend, candidates_for
from accel_regress.backends.iree_hip import IreeHipBackend
from accel_regress.backends.iree_vulkan import IreeVulkanBackend
from accel_regress.backends.iree_vulkan import device as vk
from accel_regress.backends.iree_vulkan.target import cannot_hold, target_attr, with_target
from accel_regress.core import registry
from accel_regress.core.errors import Unsupported
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.matmul.iree_program import mlir as matmul_mlir
from accel_regress.toolchains.iree import compiler, run_module
from accel_regress.toolchains.iree.gpu_backend import first_target

LAVAPIPE = Path(__file__).parents[2] / "fixtures" / "vulkan" / "lavapipe-mesa-22.3.6.json"
BF16_ADD = ("func.func @f(%a: tensor<8xbf16>) -> tensor<8xbf16> {\n"
            "  %0 = arith.addf %a, %a : tensor<8xbf16>\n  return %0 : tensor<8xbf16>\n}\n")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def lavapipe():
    return vk.parse_profile(json.loads(LAVAPIPE.read_text()))


def test_profile_of_lavapipe(lavapipe):
    assert lavapipe.name.startswith("llvmpipe") and lavapipe.api_version[:2] == (1, 3)
    assert lavapipe.has("shaderInt16") and lavapipe.has("storageBuffer16BitAccess")
    assert lavapipe.limits["maxComputeSharedMemorySize"] == 32768


def test_target_is_what_the_device_reports_not_the_baseline(lavapipe):
    attr = target_attr(lavapipe)
    assert "storage = b32|b64|b16|b8" in attr and "int16" in attr and "fp16" in attr
    assert "subgroup = shuffle|arithmetic" in attr and "subgroup_size_choices = [8]" in attr
    assert "max_thread_count_per_workgroup = 1024" in attr and "max_workgroup_memory_bytes = 32768" in attr
    assert 'features = "spirv:v1.6,cap:Shader"' in attr


def test_what_the_device_cannot_hold_is_named(lavapipe):
    assert cannot_hold(BF16_ADD, lavapipe) is None
    no16 = dataclasses.replace(lavapipe, features={**lavapipe.features, "storageBuffer16BitAccess": False})
    assert "does not report storageBuffer16BitAccess" in cannot_hold(BF16_ADD, no16)
    assert cannot_hold(matmul_mlir(4, 4, 4), no16) is not None     # types behind !aliases count too


def test_compiler_takes_the_device_target_over_its_default(lavapipe, cache):
    """Without the module's target iree-compile uses vp_android_baseline_2022 (no subgroups,
    128 threads); with it, the executables are built for what lavapipe reports."""
    flags = ("--iree-hal-target-device=vulkan", "--compile-to=executable-targets")
    program = matmul_mlir(16, 32, 8)
    default = compiler.compile_cached(program, flags, name="default", output="t.mlir").output.read_text()
    ours = compiler.compile_cached(with_target(program, lavapipe), flags, name="device", output="t.mlir").output.read_text()
    assert 'arch = "vp_android_baseline_2022"' in default and "subgroup = none" in default
    assert "subgroup = shuffle|arithmetic" in ours and "max_thread_count_per_workgroup = 1024" in ours
    assert "vp_android_baseline_2022" not in ours


def test_result_types_resolve_aliases():
    assert run_module.result_types(matmul_mlir(3, 5, 7), "matmul") == [((3, 7), np.dtype(np.float32))]
    assert run_module.result_types(BF16_ADD, "f")[0][1].name == "bfloat16"


def test_result_types_of_an_imported_onnx_signature():
    # IREE's ONNX importer writes torch value tensors (iree-org/iree
    # compiler/bindings/python/iree/compiler/tools/import_onnx/__main__.py): the ONNX corpus's
    # cases on iree-vulkan read "returns 0 results, the program declares 1" before.
    sig = ("func.func @test_add(%arg0: !torch.vtensor<[3,4,5],f32>) -> (!torch.vtensor<[3,4,5],f32>, "
           "!torch.vtensor<[],si64>) attributes {torch.onnx_meta.ir_version = 7 : si64} {")
    assert run_module.result_types(sig, "test_add") == [((3, 4, 5), np.dtype(np.float32)), ((), np.dtype(np.int64))]


@pytest.fixture(scope="module")
def vulkan():
    b = IreeVulkanBackend()
    reason = b.availability()
    if reason:
        pytest.skip(reason)
    return b


def test_vulkan_runs_a_reduction_and_records_the_device(vulkan):
    case = R.make_case("softmax", (16, 64))
    out = vulkan.run(case, R.make_inputs(case))
    (y,) = out.values()
    assert y.shape == (16, 64) and np.allclose(y.sum(axis=-1), 1, atol=1e-5)
    assert vulkan.versions()["vulkan-device"].startswith("llvmpipe")


def test_cuda_target_falls_back_from_what_this_compiler_cannot_build(cache):
    assert candidates_for("9.0")[:3] == ["sm_90", "sm_89", "sm_87"]
    assert candidates_for("8.0") == ["sm_80", "sm_75", "sm_70"]
    target, skipped = first_target((("sm_90", ("--iree-cuda-target=sm_90",)),
                                    ("sm_89", ("--iree-cuda-target=sm_89",))), "cuda")
    assert target == "sm_89" and "missing GPU target" in skipped[0]


@pytest.mark.parametrize("cls", [IreeCudaBackend, IreeHipBackend])
def test_without_the_gpu_cases_compile_then_skip_with_what_is_missing(cls, cache):
    b = cls()
    if b.compile_only() is None:
        pytest.skip(f"{b.name}'s GPU is present here")
    case = R.make_case("row_sum", (4, 7))
    with pytest.raises(Unsupported, match="compiled for .*; not run: .*(libcuda|amdhip64)") as info:
        b.run(case, {})
    assert not info.value.never
    assert b.name not in registry.parse(None)          # not in the default selection
    assert registry.parse(b.name) == [b.name]          # runs when named


def test_compile_failure_is_compile_error_with_the_compilers_words(cache):
    from accel_regress.golden.case import Case
    from accel_regress.toolchains.iree.program import Program
    bad = Program(mlir="func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %y : tensor<4xf32>\n}\n",
                  entry="main", inputs=("x",), outputs=("y",))
    with pytest.raises(CompileError) as info:
        IreeHipBackend().compile(Case("f32_reduction", "bad", {}), bad)
    assert "%y" in info.value.detail["diagnostic"]


def test_python_m_lists_the_gpu_backends():
    out = subprocess.run([sys.executable, "-m", "accel_regress"], capture_output=True, text=True).stdout
    lines = {ln.split()[0]: ln for ln in out.splitlines() if ln.startswith("iree-")}
    assert " yes " in lines["iree-vulkan"] or "vulkaninfo" in lines["iree-vulkan"]
    for name in ("iree-cuda", "iree-hip"):
        assert " yes " in lines[name] or "compiles here, runs SKIP:" in lines[name]


@pytest.mark.parametrize("large", [False, True])
def test_vulkan_over_budget_cases_are_opt_in_not_skip_rows(large):
    argv = [sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", "iree-vulkan",
            "--collect-only", "-q", "-p", "no:cacheprovider", *(["-m", "large or not large"] if large else [])]
    out = subprocess.run(argv, cwd=Path(__file__).resolve().parents[4], capture_output=True, text=True).stdout
    n4008 = [ln for ln in out.splitlines() if "iree-vulkan" in ln and "-N4008-" in ln]
    assert bool(n4008) == large
    assert large or "deselected" in out


def test_vulkan_default_run_keeps_an_f32_tile_with_an_infinite_pad():
    """Issue 49 item 3: the seed configs pad f32 with zeros only, so the budget keeps the fused 8 x 64
    f32 tile with +inf and -inf pads (tests/selftest/fixtures/pad_faults.py fails them)."""
    argv = [sys.executable, "-m", "pytest", "tests/test_rowexpandmul_fillpad.py", "--hw", "iree-vulkan",
            "--collect-only", "-q", "-p", "no:cacheprovider"]
    out = subprocess.run(argv, cwd=Path(__file__).resolve().parents[4], capture_output=True, text=True).stdout
    kept = [ln for ln in out.splitlines() if "iree-vulkan" in ln and "-f32-pad" in ln and "-padzero-" not in ln]
    assert len(kept) == 4 and all("R8-C64-vr3-vc48" in ln and "-fused-" in ln for ln in kept), kept
