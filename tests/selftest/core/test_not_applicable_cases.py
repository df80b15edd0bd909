"""Configurations a backend can never run are NOT_APPLICABLE, counted once per family x backend,
not a SKIP per case (issue 29 item 8).

A backend says so by returning its reason as ``accel_regress.core.errors.NotApplicable`` from
``supports`` / ``supports_inputs``: RISC-V flag variants and VLENs on the host (iree-cpu), bfp16
emulation on IREE (the GEMM program), a VLEN below what a variant's code assumes (qemu-rvv), an
input class a backend's data path cannot hold. Whatever can change (a backend or toolchain
missing, a simulator's budget, --max-hangs) stays a SKIP that matters, with its reason.

Not run on IREE, decided: the bfp16 quantization written as the program's first step would test
IREE's arithmetic on our own transcription of IRON's emulate_bf16_mmul_with_bfp16, not the AIE's
bfp16 datapath the configuration is about; the same GEMM without it (``-bf16``) runs there.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.core import registry, runner
from accel_regress.core.backend import Backend
from accel_regress.core.errors import NotApplicable, Unsupported
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.gemm_partition_n import iree_program

REPO = Path(__file__).resolve().parents[3]
needs_iree_cpu = pytest.mark.skipif(registry.availability("iree-cpu") is not None, reason="iree-cpu unavailable")


@pytest.fixture
def in_process():
    return runner.Context()      # in this process: no isolated worker, no hang guard, no devices


@needs_iree_cpu
def test_host_never_runs_a_riscv_variant(in_process):
    case = R.make_case("softmax", R.SEED_SHAPES["softmax"], "v-zvl512b", 512)
    run = runner.run_case("iree-cpu", case, R.make_inputs(case), context=in_process)
    assert run.never and "has no meaning on the host" in run.skip
    with pytest.raises(Unsupported) as exc:
        run.outputs
    assert exc.value.never


def test_iree_never_emulates_bfp16_and_a_data_path_never_holds_what_it_cannot():
    case = gemm.make_case(gemm.CI_CONFIGS[1])
    assert case.params["emulate_bfp16"] and isinstance(iree_program.unsupported(case), NotApplicable)
    cls = R.make_case("row_sum", R.SEED_SHAPES["row_sum"], inputs="specials")

    class Finite(Backend):
        name, input_classes = "finite", ("normal",)
    assert isinstance(Finite().supports_inputs(cls), NotApplicable)


@needs_iree_cpu
def test_structural_cases_are_counted_once_per_family_and_backend(tmp_path):
    argv = [sys.executable, "-m", "pytest", "tests/test_f32_reduction.py", "tests/test_gemm_partition_n.py",
            "--hw", "iree-cpu", "-k", "layernorm-64x128 or M192", "--isolation", "none",
            "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=REPO)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    cases = json.loads((tmp_path / "rep" / "results.json").read_text())["cases"]
    verdicts = [c["verdict"] for c in cases]
    assert "SKIP" not in verdicts, [c["message"] for c in cases if c["verdict"] == "SKIP"]
    na = {f: sum(1 for c in cases if c["family"] == f and c["verdict"] == "NOT_APPLICABLE")
          for f in ("f32_reduction", "gemm_partition_n")}
    assert na["f32_reduction"] > 0 and na["gemm_partition_n"] > 0
    # One line per rule (issue 37 item 4: hardware/results/skip_rules.py), each family's cases counted once.
    for family, n in na.items():
        lines = [ln for ln in out.splitlines() if ln.startswith("not applicable (") and f"; {family} on iree-cpu)" in ln]
        assert lines and sum(int(ln.split("(", 1)[1].split()[0]) for ln in lines) == n, out
        rules = [ln.split("): ", 1)[1] for ln in lines]
        assert len(rules) == len(set(rules)), out
