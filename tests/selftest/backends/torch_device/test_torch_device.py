"""The torch device backends (hardware/backends/torch_device): every family's torch program runs on
the CPU device and passes clean; emu's documented faults are caught when injected into its
results; the numerics settings are the torch's own, recorded, and applied per case; the GPU device
types that are not here are listed with what is missing."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress.core import faults, registry
from accel_regress.backends.torch_device import TORCH_PROGRAMS, numerics
from suite_in_process import run_suite

REPO = Path(__file__).resolve().parents[4]

# One small subset of each family's default-run cases (-k), and the built-in faults it must catch.
FAMILIES = {
    "gemm_partition_n": ("test_gemm_partition_n.py", "M64-K512-N256-m16-k64-n64-c4-bT-cF-P4-bf16-normal",
                         ("iron-gemm-forward-shape", "iron-gemm-stale-dma")),
    "matmul": ("test_matmul.py", "square-M2432-K2432-N2432 or cube-M512-K512-N640-bf16",
               ("aie-matmul-remainder-compile", "aie-matmul-4x2-herd-hang")),
    "f32_reduction": ("test_f32_reduction.py", "test_f32_reduction and (softmax or layernorm) and -v-vlen256",
                      ("saturn-f32-reduction-hang",)),
    "rowexpandmul_fillpad": ("test_rowexpandmul_fillpad.py",
                             "test_tile and (seed-R16-C256-vr1- or R8-C64-vr3-vc48-f32-padzero)",
                             ("pto-bare-tile-validshape", "pto-bare-tile-validshape-sim")),
    "fused_decode": ("test_fused_decode.py", "small-H64 and normal and not masked",
                     ("fused-stale-output", "fused-rope-theta", "fused-rmsnorm-no-weight", "fused-softmax-no-max")),
}


def _run(tmp_path, op, *extra):
    test_file, subset, _ = FAMILIES[op]
    session = run_suite(tmp_path / "reports", f"tests/{test_file}", "--hw", "torch-cpu", "-k", subset, *extra)
    return session.out, session.cases


# The ONNX node corpus's cases are ONNX models (onnxruntime, IREE's importer): NOT_APPLICABLE on torch devices.
WITHOUT_TORCH = {"onnx_node"}


def test_every_family_has_a_torch_program():
    families = set(registry.registrations("family"))
    assert families - WITHOUT_TORCH <= set(registry.registrations(TORCH_PROGRAMS))
    assert set(FAMILIES) == families - WITHOUT_TORCH


@pytest.mark.parametrize("op", FAMILIES)
def test_each_family_passes_clean_on_torch_cpu(tmp_path, op):
    out, cases = _run(tmp_path, op)
    verdicts = [c["verdict"] for c in cases]
    assert verdicts and "PASS" in verdicts, out[-3000:]
    assert set(verdicts) <= {"PASS", "NOT_APPLICABLE", "SKIP"}, out[-3000:]
    devices = {c.get("versions", {}).get("device_type") for c in cases if c["verdict"] == "PASS"}
    assert "cpu" in devices, devices


@pytest.mark.parametrize("op, fault", [(op, f) for op, (_, _, fs) in FAMILIES.items() for f in fs])
def test_each_documented_fault_is_caught_on_torch_cpu(tmp_path, op, fault):
    assert fault in faults.builtin()
    out, cases = _run(tmp_path, op, "--inject-fault", fault, "--ignore-expectations")
    caught = [c["nodeid"] for c in cases if c["verdict"] in ("FAIL", "HANG", "CRASH", "COMPILE_ERROR")]
    assert caught, f"{fault} not caught on torch-cpu:\n{out[-3000:]}"


# --- numerics -----------------------------------------------------------------------------------

def test_the_record_holds_the_settings_of_the_torch_found(monkeypatch):
    import torch
    monkeypatch.delenv(numerics.ENV, raising=False)
    v = registry.get("torch-cpu").versions()
    assert v["numerics.cuda.matmul.allow_tf32"] == str(torch.backends.cuda.matmul.allow_tf32)
    assert v["numerics.cudnn.allow_tf32"] == str(torch.backends.cudnn.allow_tf32)
    assert v["numerics.cuda.matmul.allow_bf16_reduced_precision_reduction"] == \
        str(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
    assert v["numerics.mkldnn.enabled"] == str(torch.backends.mkldnn.enabled)
    assert v["numerics.float32_matmul_precision"] == torch.get_float32_matmul_precision()
    avx512 = torch.backends.cpu.get_cpu_capability().startswith("AVX512")
    assert v["onednn-bf16-gemm"] == ("1" if avx512 and torch.backends.mkldnn.enabled else "0")
    monkeypatch.setenv(numerics.ENV, "mkldnn.enabled=0")
    assert registry.get("torch-cpu").versions()["onednn-bf16-gemm"] == "0"   # the known-bug entry then does not hold
    monkeypatch.setenv(numerics.ENV, "cuda.matmul.allow_tf32=1")
    assert registry.get("torch-cpu").versions()["numerics.cuda.matmul.allow_tf32"] == f"True ({numerics.ENV})"


def test_settings_are_applied_for_the_run_and_put_back():
    import torch
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.mkldnn.enabled
    with numerics.applied(torch, {"cuda.matmul.allow_tf32": not before[0], "mkldnn.enabled": not before[1]}):
        assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.mkldnn.enabled) == (not before[0], not before[1])
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.mkldnn.enabled) == before


def test_a_session_setting_changes_the_numbers_it_is_meant_to(monkeypatch):
    """oneDNN's bf16 GEMM (torch's default on an AVX512 CPU) flushes a subnormal result; the same run
    with mkldnn.enabled off keeps it (expectations/torch-cpu.toml)."""
    import torch
    from accel_regress.golden.case import Case
    backend = registry.get("torch-cpu")
    case = Case("gemm_partition_n", "c", {"M": 32, "K": 64, "N": 16, "tile_m": 16, "tile_k": 16, "tile_n": 16,
                                          "num_aie_columns": 1, "b_col_maj": False, "c_col_maj": False,
                                          "partition_N": 1, "emulate_bfp16": False}, 0)
    inputs = {"A": np.full((32, 64), 2.0 ** -130, np.float32), "B": np.ones((64, 16), np.float32)}
    monkeypatch.setenv(numerics.ENV, "mkldnn.enabled=0")
    off = backend.run(case, inputs)
    assert off["C_0"][0, 0] == np.float32(64 * 2.0 ** -130)
    assert torch.backends.mkldnn.enabled          # put back after the run
    monkeypatch.delenv(numerics.ENV)
    if torch.backends.mkldnn.is_available() and torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        assert backend.run(case, inputs)["C_0"][0, 0] == 0      # the default: oneDNN's flush


def test_a_bad_session_setting_is_a_reason_not_a_traceback(monkeypatch):
    from accel_regress.golden.case import Case
    monkeypatch.setenv(numerics.ENV, "cuda.matmul.allow_tf32=maybe")
    reason = registry.get("torch-cpu").supports(Case("matmul", "c", {}, 0))
    assert "'cuda.matmul.allow_tf32=maybe' is not name=0|1" in reason


# --- devices that are not here --------------------------------------------------------------------

def test_the_listing_names_every_torch_device_and_why_it_cannot_run():
    out = subprocess.run([sys.executable, "-m", "accel_regress"], cwd=REPO, capture_output=True, text=True)
    rows = {line.split()[0]: line for line in out.stdout.splitlines() if line.startswith("torch-")}
    assert set(rows) == {"torch-cpu", "torch-cuda", "torch-xpu", "torch-mps", "torch-npu", "torch-privateuse1",
                         "torch-cpu-avx2", "torch-cpu-avx512-core", "torch-cpu-avx512-core-bf16"}
    assert rows["torch-cpu"].split()[2] == "yes"
    for name, row in rows.items():
        if name != "torch-cpu" and row.split()[2] == "no":
            assert len(row.split(None, 3)[3]) > 20, row        # the reason, in words


def test_torch_programs_are_device_side_for_the_golden_store():
    """Editing a torch program (or an emu model, an IREE program) keeps every golden warm: the store
    hashes no module of a group a backend reads."""
    from accel_regress.golden import store
    hashed = [what for what, _ in store.golden_sources()]
    assert "builtin:matmul/golden.py" in hashed
    assert not [w for w in hashed if w.endswith(("/torch_program.py", "/emu.py", "/iree_program.py"))], hashed
