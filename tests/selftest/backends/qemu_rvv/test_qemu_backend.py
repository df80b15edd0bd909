"""qemu-rvv end to end: SKIP reasons, a clean run, HANG and CRASH verdicts, the qemu 7.2
vfcvt.rtz defect (probes/), and the harness's file-output build (the FireSim build's sibling)."""
import subprocess
from pathlib import Path

import numpy as np
import pytest

from accel_regress.golden import assert_close
from accel_regress.families.f32_reduction import golden as R
from accel_regress import Crash, Hang
from accel_regress.backends.qemu_rvv import QemuRvvBackend, build, protocol

PROBES = Path(__file__).resolve().parents[4] / "hardware" / "backends" / "qemu_rvv" / "probes"


@pytest.fixture(scope="module")
def backend():
    b = QemuRvvBackend()
    reason = b.availability()
    if reason:
        pytest.skip(reason)
    return b


def test_missing_packages_give_the_apt_command(monkeypatch):
    import accel_regress.backends.qemu_rvv as q
    monkeypatch.setattr(q.shutil, "which", lambda name: None)
    reason = QemuRvvBackend().availability()
    assert reason and "apt-get install" in reason and "qemu-user-static" in reason


def test_vlen_below_the_features_is_refused():
    b = QemuRvvBackend()
    assert "VLEN >= 512" in b.supports(R.make_case("softmax", (64, 64), "v-zvl512b", 256))
    assert b.supports(R.make_case("softmax", (64, 64), "v-zvl512b", 512)) is None
    assert "unknown RISC-V variant" in b.supports(R.make_case("softmax", (64, 64), "v-bogus", 256))


def _check(case, outputs):
    inputs = R.make_inputs(case)
    ref = R.reference(case, inputs)
    tol = R.tolerances(case, inputs, ref)
    for n in ref:
        assert_close(outputs[n], ref[n], tol=tol[n], name=n)


@pytest.mark.parametrize("variant,vlen", [("v", 128), ("novec", 256)])
def test_clean_run_passes_and_reports_the_scan(backend, variant, vlen):
    case = R.make_case("layernorm", (R.TAIL_ROWS, 33), variant, vlen)
    out = backend.run(case, R.make_inputs(case))
    _check(case, out)
    rep = backend.last_report
    assert rep["variant"] == variant and len(rep["codegen_scan"]) == 2 and len(rep["dispatches"]) == 2


def test_a_run_past_its_bound_is_a_hang_naming_the_dispatch(backend):
    case = R.make_case("i8_matmul", R.SEED_SHAPES["i8_matmul"])   # ~0.5 s under qemu
    with pytest.raises(Hang) as info:
        backend.run(case, R.make_inputs(case), timeout_s=0.05)
    assert "never completed" in info.value.message or "within" in info.value.message


def test_vector_code_on_a_cpu_without_v_is_sigill(backend):
    """The negative control of design.md: a V binary under qemu without v=true dies."""
    case = R.make_case("row_sum", (4, 33))
    exe, _ = build.cached_harness(case, "v", R.make_inputs(case))
    proc = subprocess.run(["qemu-riscv64-static", "-cpu", "rv64,v=false", str(exe)], capture_output=True, timeout=60)
    assert proc.returncode != 0
    assert protocol.parse(proc.stdout.decode()).open_dispatch == 0


def _probe(name: str, tmp_path) -> subprocess.CompletedProcess:
    exe = tmp_path / name
    subprocess.run([build.CLANG, "--target=riscv64-linux-gnu", "-march=rv64gcv", "-O2", "-static", "-fuse-ld=lld",
                    str(PROBES / f"{name}.c"), "-o", str(exe)], check=True, capture_output=True, timeout=120)
    return subprocess.run(["qemu-riscv64-static", "-cpu", "rv64,v=true,vlen=128,elen=64,vext_spec=v1.0", str(exe)],
                          capture_output=True, text=True, timeout=60)


def test_vfcvt_rtz_probe(backend, tmp_path):
    """qemu either converts correctly or dies in its translator (the 7.2 defect); never a wrong
    answer. The dynamic-rounding control always works."""
    ctrl = _probe("vfcvt_rm", tmp_path)
    assert ctrl.stdout.strip() == "ok -4 2 -1 0"
    rtz = _probe("vfcvt_rtz", tmp_path)
    if rtz.returncode == 0:
        assert rtz.stdout.strip() == "ok -3 2 -1 0"
    else:
        assert "decode_save_opc: Assertion" in rtz.stderr


def test_rtz_conversion_case_is_crash_or_correct(backend):
    case = R.make_case("cvt", (64,), "v", 256)
    try:
        out = backend.run(case, R.make_inputs(case))
    except Crash as exc:
        assert "decode_save_opc" in exc.message and exc.detail.get("qemu_defect")
    else:
        _check(case, out)


def test_file_output_build_matches_uart_output(backend, tmp_path):
    case = R.make_case("mean_var", (R.TAIL_ROWS, 127))
    inputs = R.make_inputs(case)
    exe = build.build_harness(case, "v", tmp_path / "b", uart_outputs=False, inputs=inputs, iterations=2)
    outdir = tmp_path / "out"
    outdir.mkdir()
    proc = subprocess.run(["qemu-riscv64-static", "-cpu", "rv64,v=true,vlen=256,elen=64,vext_spec=v1.0", str(exe),
                           str(outdir)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    t = protocol.parse(proc.stdout)
    assert t.done and t.of_iterations == 2 and len(t.completed) == 4 and not t.outputs
    uart = backend.run(case, inputs)
    for name in ("mean", "var"):
        got = np.fromfile(outdir / f"{name}.bin", dtype="<f4")
        assert np.array_equal(got, uart[name])


def test_build_without_inputs_is_refused(backend, tmp_path):
    from accel_regress import CompileError
    case = R.make_case("row_sum", (4, 7))
    with pytest.raises(CompileError, match="inputs lack x"):
        build.build_harness(case, "v", tmp_path, uart_outputs=True, inputs={})


def test_build_without_inputs_regenerates_the_same_inputs(backend, tmp_path):
    """FireSim calls build_harness(case, variant, out_dir, uart_outputs=True) without inputs."""
    case = R.make_case("row_sum", (4, 7), "+v")
    exe = build.build_harness(case, "+v", tmp_path, True)
    proc = subprocess.run(["qemu-riscv64-static", "-cpu", "rv64,v=true,vlen=256,elen=64,vext_spec=v1.0", str(exe)],
                          capture_output=True, text=True, timeout=60)
    got = protocol.parse(proc.stdout).outputs["sum"]
    assert np.array_equal(got, backend.run(case, R.make_inputs(case))["sum"])
