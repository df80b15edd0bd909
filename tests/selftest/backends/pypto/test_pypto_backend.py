"""The a2a3 / a2a3sim adapter against the stand-in toolchain (tests/selftest/fixtures/pypto/lib).

The stand-in honours the real toolchain's command line (-p, -d, --golden-data), files
(in/<name>.pt, out/<name>.pt, torch.load(weights_only=True)), stage printing and compare_fn
contract, so these tests drive the backend exactly as it drives pypto-lib.
"""
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress import CompileError, Crash, Hang
from accel_regress.backends.pypto import program
from accel_regress.backends.pypto.backend import A2a3Backend, A2a3SimBackend, _last_stage

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[4]
STANDIN = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "lib"
PTOAS_ROOT = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "ptoas_root"
SEED_ID = "R16-C256-vr1-vc256-f32-padzero"


@pytest.fixture
def standin(monkeypatch):
    monkeypatch.setenv("PYPTO_LIB_ROOT", str(STANDIN))
    monkeypatch.setenv("PTOAS_ROOT", str(PTOAS_ROOT))
    monkeypatch.delenv("PYPTO_PYTHON", raising=False)
    monkeypatch.delenv("ACCEL_PYPTO_STANDIN_BUG", raising=False)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    return A2a3SimBackend()


def _case(cfg):
    case = tiles.make_case(cfg)
    return case, tiles.make_inputs(case)


# --- availability: SKIP reasons say what is missing and how to get it ---------------------------

def test_no_toolchain_is_a_precise_skip_reason(monkeypatch):
    monkeypatch.delenv("PYPTO_LIB_ROOT", raising=False)
    reason = A2a3SimBackend().availability()
    assert "PYPTO_LIB_ROOT" in reason and "hw-native-sys/pypto-lib" in reason and "PyPI" in reason


def test_lib_root_without_harness(monkeypatch, tmp_path):
    monkeypatch.setenv("PYPTO_LIB_ROOT", str(tmp_path))
    assert "not a pypto-lib checkout" in A2a3SimBackend().availability()


def test_pypi_pypto_is_told_apart(monkeypatch, tmp_path):
    # PyPI's 'pypto' is another project: an importable pypto.language without the tile ops.
    (tmp_path / "golden").mkdir()
    (tmp_path / "golden" / "__init__.py").write_text("def run_jit(*a, **k): pass\n")
    (tmp_path / "pypto" / "language").mkdir(parents=True)
    (tmp_path / "pypto" / "__init__.py").write_text("")
    (tmp_path / "pypto" / "language" / "__init__.py").write_text("")
    monkeypatch.setenv("PYPTO_LIB_ROOT", str(tmp_path))
    reason = A2a3SimBackend().availability()
    assert "not hw-native-sys pypto" in reason and "row_expand_mul" in reason


def test_a2a3_needs_cann_and_a_device(standin, monkeypatch, tmp_path):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    if Path("/usr/local/Ascend/ascend-toolkit/latest").is_dir():
        pytest.skip("this machine has CANN installed")
    assert "CANN not found" in A2a3Backend().availability()
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.setenv("A2A3_DEVICE", "97")
    assert "/dev/davinci97" in A2a3Backend().availability()
    monkeypatch.setenv("A2A3_DEVICE", "x")
    assert "not an integer" in A2a3Backend().availability()


def test_missing_ptoas_is_a_skip_reason_not_a_compile_error(standin, monkeypatch, tmp_path):
    monkeypatch.setenv("PTOAS_ROOT", str(tmp_path))
    reason = standin.availability()
    assert reason.startswith(f"ptoas not found in PTOAS_ROOT={tmp_path} (tried ptoas, ptoas.sh, bin/ptoas)")
    monkeypatch.delenv("PTOAS_ROOT")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "ptoas not found in PATH (PTOAS_ROOT is not set)" in standin.availability()


def test_ptoas_lost_at_run_time_is_a_skip(standin, monkeypatch, tmp_path):
    # availability() passed, then the child finds no ptoas (another PTOAS_ROOT, a removed release).
    from accel_regress import Unsupported
    monkeypatch.setattr(A2a3SimBackend, "availability", lambda self: None)
    monkeypatch.setenv("PTOAS_ROOT", str(tmp_path))
    with pytest.raises(Unsupported, match="toolchain incomplete: .*no executable ptoas was found"):
        standin.run(*_case(tiles.seed_config(1)))


def test_pythonpath_is_extended_not_replaced(standin, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/opt/pypto/python", str(STANDIN)]))
    env = standin._env(tmp_path)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(STANDIN), "/opt/pypto/python"]


def test_build_is_kept_under_pypto_prog_build_dir(standin, monkeypatch, tmp_path):
    # Relative, as users write it: relative to where the suite runs, not to the case's scratch folder.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", "builds")
    standin.run(*_case(tiles.seed_config(1)))
    (build,) = (tmp_path / "builds").iterdir()
    assert build.name.startswith("kernel_") and (build / "kernels" / "aiv").is_dir()


def test_a_verdict_keeps_the_scratch_build(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:segv")
    with pytest.raises(Crash) as info:
        standin.run(*_case(tiles.seed_config(1)))
    work = Path(info.value.detail["work_dir"])
    try:
        assert Path(info.value.detail["build_dir"]) == work / "build_output"
        assert any((work / "build_output").iterdir())
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def test_device_id_is_logical_under_visible_devices(standin, monkeypatch, tmp_path):
    # simpler acl_hal_device.h:30-42: ASCEND_RT_VISIBLE_DEVICES renumbers cards from 0.
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path))
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "96,97")
    monkeypatch.setenv("A2A3_DEVICE", "1")
    assert "no Ascend NPU device /dev/davinci97 (logical 1 through ASCEND_RT_VISIBLE_DEVICES)" in \
        A2a3Backend().availability()
    monkeypatch.setenv("A2A3_DEVICE", "2")
    assert "A2A3_DEVICE=2 is not visible" in A2a3Backend().availability()


def test_cann_under_ascend_latest_is_found(monkeypatch, tmp_path):
    from accel_regress.backends.pypto import backend as b
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    assert "/usr/local/Ascend/latest" in b.CANN_DEFAULTS
    monkeypatch.setattr(b, "CANN_DEFAULTS", ("/nonexistent/toolkit", str(tmp_path)))
    assert b._cann_root() == tmp_path


def test_sim_is_available_with_the_standin(standin):
    assert standin.availability() is None
    v = standin.versions()
    assert v["pypto"] == "0.0-standin"
    assert v["ptoas"] == str(PTOAS_ROOT / "bin" / "ptoas")
    assert (v["ptoas_era"], v["ptoas_version"]) == ("self-linked bin/ptoas (PTOAS >= v0.51)", "ptoas 0.0-standin")
    assert standin.supports(tiles.make_case(tiles.seed_config(1))) is None
    from accel_regress.golden.case import Case
    assert "only" in standin.supports(Case("gemm_partition_n", "x"))


# --- the generated program ------------------------------------------------------------------------

@pytest.mark.parametrize("variant", tiles.VARIANTS)
@pytest.mark.parametrize("reuse", [True, False], ids=["reuse", "noreuse"])
def test_program_is_valid_python_with_the_harness_cli(variant, reuse):
    src = program.render(tiles.seed_config(1, variant, reuse), "id", rtol=1e-6, atol=0.0)
    compile(src, "program.py", "exec")
    for needle in ('"-p", "--platform"', '"-d", "--device"', '"--golden-data"', "run_jit(", "compare_fn",
                   "pl.at(level=pl.Level.CORE_GROUP"):
        assert needle in src
    assert ("MemoryPlanner.DSA_RP" in src) and (f"MEMORY_REUSE = {reuse}" in src)
    assert ("pl.row_expand_mul" in src) == (variant in ("fused", "split"))
    assert src.count("with pl.at(") == (2 if variant == "split" else 1)


# --- runs through the stand-in --------------------------------------------------------------------

# One subprocess per case (as the backend runs them), each importing torch: a few seconds each, so
# a handful here (the seed's fused and split cases run again, on both backends, in
# test_differential_catches_board_vs_sim).
@pytest.mark.parametrize("cfg", [tiles.seed_config(3, "mul", False),
                                 tiles.TileConfig(5, 40, 2, 33, "bf16", "min", "fused")],
                         ids=lambda c: c.id)
def test_sim_runs_match_the_golden(standin, cfg):
    case, inputs = _case(cfg)
    out = standin.run(case, inputs)["out"]
    assert out.dtype == np.float32 and out.shape == (cfg.rows, cfg.cols)
    tiles.assert_tile_close(out, tiles.tile_reference(inputs, cfg), cfg)


def test_seed_bug_is_named_by_the_census(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:bare-tile")
    cfg = tiles.seed_config(1)
    case, inputs = _case(cfg)
    with pytest.raises(tiles.TileMismatch) as info:
        tiles.assert_tile_close(standin.run(case, inputs)["out"], tiles.tile_reference(inputs, cfg), cfg)
    text = str(info.value)
    assert "255 / 4096" in text
    assert "valid region, wrong values: row 0, cols 1-15: 15 elements" in text
    assert "row 0, cols 16-255: 240 elements" in text
    assert "padded region (rows 1-15) is right" in text
    # (the split workaround under the same bug passes: test_differential_catches_board_vs_sim)


def test_segfault_is_a_crash(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:segv")
    with pytest.raises(Crash, match=r"SIGSEGV during \[RUN\] runtime"):
        standin.run(*_case(tiles.seed_config(1)))


def test_compile_failure_is_a_compile_error(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:compile-error")
    with pytest.raises(CompileError, match="ptoas: error: stand-in compile failure") as info:
        standin.run(*_case(tiles.seed_config(1)))
    assert info.value.stage == "compile"


def test_kernel_compile_failure_in_the_runtime_stage_is_a_compile_error(standin, monkeypatch):
    # pypto compiles the ptoas C++ in pypto-lib's [RUN] runtime stage (simpler KernelCompiler).
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:kernel-compile-error")
    with pytest.raises(CompileError, match=r"SimKernel compilation failed \(exit 1\) in \[RUN\] runtime: "
                                           r".*kernel.cpp:12:5: error: no matching function") as info:
        standin.run(*_case(tiles.seed_config(1)))
    assert info.value.stage == "compile"
    assert "error: no matching function" in info.value.detail["diagnostic"]


def test_exit_without_output_is_a_crash_naming_the_stage(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:exit")
    with pytest.raises(Crash, match=r"exited 3 in stage \[RUN\] runtime"):
        standin.run(*_case(tiles.seed_config(1)))


def test_hang_is_bounded(standin, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:hang")
    standin.default_timeout_s = 6.0
    with pytest.raises(Hang, match=r"no completion within 6 s \(last harness stage: ") as info:
        standin.run(*_case(tiles.seed_config(1)))
    assert info.value.detail["seconds"] < 30      # the process group was killed, not waited for


def test_missing_golden_data_file_is_reported(standin, monkeypatch):
    # The harness's own check: a spec without its in/ file fails with the missing paths.
    from accel_regress.backends.pypto import backend as b
    real = b._save_pt

    def skip_scalar(path, t):
        if path.name != "valid_rows.pt":
            real(path, t)
    monkeypatch.setattr(b, "_save_pt", skip_scalar)
    with pytest.raises(Crash, match="generate inputs") as info:
        standin.run(*_case(tiles.seed_config(1)))
    assert "golden_data is missing files" in info.value.detail["log"]


def test_stage_parser_follows_the_harness_wording():
    log = "[RUN] compile ...\n[RUN] compile done (1.00s)\n[RUN] generate inputs ...\n" \
          "[RUN] generate inputs done (0.01s)\n[RUN] runtime ...\n"
    assert _last_stage(log) == "runtime"
    assert _last_stage("[RUN] compile ...\n[RUN] compile done (0.00s)\nTraceback") == "compile"
    assert _last_stage("nothing") is None


# --- the differential check: a2a3 against a2a3sim, through the plugin -----------------------------

_INNER_CONFTEST = textwrap.dedent('''
    # The board is the one piece no program can stand in for: accept any device here; the rest of
    # the a2a3 backend (program, files, process, verdicts) is the real code.
    from accel_regress.backends.pypto import backend as _b
    _b.A2a3Backend._device_reason = lambda self: None
''')


@pytest.fixture
def pair_suite(pytester, monkeypatch):
    monkeypatch.setenv("PYPTO_LIB_ROOT", str(STANDIN))
    monkeypatch.setenv("PTOAS_ROOT", str(PTOAS_ROOT))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO)] + sys.path))
    monkeypatch.delenv("ACCEL_PYPTO_STANDIN_BUG", raising=False)
    pytester.makeconftest(_INNER_CONFTEST)
    pytester.makepyfile(test_tiles=(REPO / "tests" / "test_rowexpandmul_fillpad.py").read_text())
    return pytester


def _pair_args():
    return ["--hw", "a2a3,a2a3sim", "-p", "no:cacheprovider", "-k",
            f"test_a2a3_matches_a2a3sim and seed-{SEED_ID}- and -reuse and (fused or split)"]


def test_differential_catches_board_vs_sim(pair_suite, monkeypatch):
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3:bare-tile")
    res = pair_suite.runpytest_subprocess(*_pair_args())
    res.assert_outcomes(passed=1, failed=1)       # split: both agree with the golden; fused: caught
    out = res.stdout.str()
    assert "a2a3 out vs a2a3sim out is not close" in out
    assert "a2a3 out vs golden is not close" in out
    assert "a2a3sim out vs golden" not in out
    assert "row 0, cols 1-15: 15 elements" in out
