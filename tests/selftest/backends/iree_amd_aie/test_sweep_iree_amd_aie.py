"""The iree-amd-aie backend and the sweep on it, through stand-ins for the two missing programs.

The backend is the real code (flags, raw bf16 inputs, subprocess bounds, verdicts); only the
plugin build's ``iree-compile`` and ``iree-run-module`` are replaced by small scripts with their
surface (tests/selftest/fixtures/matmul/iree_amd_aie_standin/). $STANDIN_ERA picks the plugin era
they speak; in seed 003's (2024-04) 2304 aborts the compiler, 2432 fails it, N == 640 with
M != 640 hangs the NPU.
"""
import json
import math
import re
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from accel_regress.families.matmul import golden as mm
from accel_regress import CompileError, Hang
from accel_regress.core import registry, runner
from accel_regress.families.matmul import sweep
from accel_regress.backends.iree_amd_aie import IreeAmdAieBackend, toolchain

STANDIN = Path(__file__).parents[2] / "fixtures" / "matmul" / "iree_amd_aie_standin"


@pytest.fixture(scope="session")
def run_bound_s():
    """The NPU run bound the stand-in gets: ten times its own start-up (the same interpreter and
    imports as a run, measured now, under whatever load the machine has), at least 3 s. A stand-in
    run that is not a hang then never meets the bound, and a hang still ends in seconds."""
    argv = [sys.executable, str(STANDIN / "iree_run_module.py"), "--list_drivers"]
    took = []
    for _ in range(3):
        start = time.monotonic()
        subprocess.run(argv, capture_output=True, check=True, timeout=600)
        took.append(time.monotonic() - start)
    return max(3, math.ceil(10 * max(took)))


@pytest.fixture
def standin(tmp_path, monkeypatch, run_bound_s):
    bin_dir = tmp_path / "install" / "bin"
    bin_dir.mkdir(parents=True)
    for tool, script in (("iree-compile", "iree_compile.py"), ("iree-run-module", "iree_run_module.py")):
        exe = bin_dir / tool
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN / script}" "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    peano = tmp_path / "peano"
    peano.mkdir()
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("ACCEL_IREE_AMD_AIE_INSTALL", str(tmp_path / "install"))
    monkeypatch.setenv("ACCEL_PEANO_INSTALL_DIR", str(peano))
    monkeypatch.setenv("ACCEL_IREE_AMD_AIE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ACCEL_AMDAIE_RUN_TIMEOUT_S", str(run_bound_s))
    monkeypatch.setenv("STANDIN_LOG", str(log))
    mlir_aie = tmp_path / "mlir-aie"
    mlir_aie.mkdir()
    monkeypatch.setenv("ACCEL_MLIR_AIE_INSTALL_DIR", str(mlir_aie))
    for var in ("STANDIN_ERA", "STANDIN_DRIVERS", "STANDIN_NO_DEVICE", toolchain.DRIVER_ENV,
                "ACCEL_AMDAIE_USE_PIPELINE"):
        monkeypatch.delenv(var, raising=False)
    _forget()
    # The environment above is this process's: run in it, not in isolation workers forked before.
    monkeypatch.setattr(runner.script, "isolation", None)
    registry.availability.cache_clear()
    yield {"log": log, "peano": peano, "mlir_aie": mlir_aie, "bound_s": run_bound_s}
    registry.availability.cache_clear()
    _forget()


def _forget():
    """The probes are cached per tool path; a test that changes the era must ask again."""
    for probe in (toolchain.compiler_help, toolchain.runtime_drivers, toolchain.devices):
        probe.cache_clear()


@pytest.fixture
def seed_era(standin, monkeypatch):
    """The plugin as it was for seed 003 (April 2024)."""
    monkeypatch.setenv("STANDIN_ERA", "2024-04")
    return standin


def _calls(log: Path, tool: str) -> list[list[str]]:
    return [c[1:] for c in map(json.loads, log.read_text().splitlines()) if c[0] == tool]


def test_unavailable_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCEL_IREE_AMD_AIE_INSTALL", str(tmp_path / "nowhere"))
    reason = IreeAmdAieBackend().availability()
    assert "no iree-compile" in reason and "ACCEL_IREE_AMD_AIE_INSTALL" in reason and "IREE_CMAKE_PLUGIN_PATHS" in reason


def test_no_npu_is_a_skip_reason(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_NO_DEVICE", "1")
    assert "sees no NPU" in IreeAmdAieBackend().availability()


def _compile_argv(log):
    return [c for c in _calls(log, "iree-compile") if "-o" in c][0]


def _run_argv(log):
    return [c for c in _calls(log, "iree-run-module") if any(a.startswith("--module=") for a in c)][0]


def test_runs_with_the_real_flags_and_bf16_inputs(standin):
    backend = IreeAmdAieBackend()
    assert backend.availability() is None
    case = mm.make_case(mm.MatmulConfig(64, 96, 32))
    inputs = mm.make_inputs(case)
    out = backend.run(case, inputs)["out"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, mm.product(inputs, "exact"))
    compile_argv = _compile_argv(standin["log"])
    for flag in ("--iree-hal-target-backends=amd-aie", "--iree-amdaie-target-device=npu1_4col",
                 "--iree-amdaie-lower-to-aie-pipeline=objectFifo", "--iree-amdaie-tile-pipeline=pack-peel",
                 f"--iree-amd-aie-peano-install-dir={standin['peano']}", "--iree-amdaie-device-hal=amdxdna",
                 "--iree-hal-memoization=false", "--iree-hal-indirect-command-buffers=false"):
        assert flag in compile_argv
    run_argv = _run_argv(standin["log"])
    assert "--device=amdxdna" in run_argv and "--function=matmul" in run_argv
    assert any(a.startswith("--input=64x96xbf16=@") for a in run_argv)
    # A second run compiles nothing (the cache).
    n = len(_calls(standin["log"], "iree-compile"))
    backend.run(case, inputs)
    assert len([c for c in _calls(standin["log"], "iree-compile") if "-o" in c]) == 1
    assert len(_calls(standin["log"], "iree-compile")) == n


def test_seed_era_compiler_gets_its_own_flags(seed_era):
    """A compiler old enough to have seed 003's bugs rejects the July 2024 flags: speak its own."""
    backend = IreeAmdAieBackend()
    assert backend.availability() is None
    v = backend.versions()
    assert v["iree-amd-aie-era"].startswith("use-pipeline") and v["use_pipeline"] == "pad-pack"
    assert v["hal-driver"] == "xrt" and "tile_pipeline" not in v
    case = mm.make_case(mm.MatmulConfig(64, 96, 32))
    inputs = mm.make_inputs(case)
    np.testing.assert_array_equal(backend.run(case, inputs)["out"], mm.product(inputs, "exact"))
    argv = _compile_argv(seed_era["log"])
    assert "--iree-amdaie-use-pipeline=pad-pack" in argv
    assert f"--iree-amd-aie-mlir-aie-install-dir={seed_era['mlir_aie']}" in argv
    assert not [a for a in argv if a.split("=")[0] in (toolchain.LOWER_TO_AIE, toolchain.TILE_PIPELINE,
                                                        toolchain.TARGET_DEVICE, toolchain.INSTALL_DIR,
                                                        toolchain.DEVICE_HAL)]
    assert "--device=xrt" in _run_argv(seed_era["log"])


def test_seed_era_needs_mlir_aie(seed_era, monkeypatch):
    monkeypatch.delenv("ACCEL_MLIR_AIE_INSTALL_DIR")
    monkeypatch.delenv("MLIR_AIE_INSTALL_DIR", raising=False)
    reason = IreeAmdAieBackend().availability()
    assert "use-pipeline era" in reason and "ACCEL_MLIR_AIE_INSTALL_DIR" in reason


@pytest.mark.parametrize("era, drivers, expected", [
    ("2026-06", None, "amdxdna"),            # today's default build
    ("2026-06", "xrt", "xrt"),               # built with -DIREE_EXTERNAL_HAL_DRIVERS=xrt only
    ("2024-10", None, "xrt-lite"),           # between the Direct Driver HAL and its rename
    ("2024-10", "xrt", "xrt"),
])
def test_hal_driver_is_one_both_tools_have(standin, monkeypatch, era, drivers, expected):
    monkeypatch.setenv("STANDIN_ERA", era)
    if drivers:
        monkeypatch.setenv("STANDIN_DRIVERS", drivers)
    backend = IreeAmdAieBackend()
    assert backend.availability() is None
    assert backend.versions()["hal-driver"] == expected
    case = mm.make_case(mm.MatmulConfig(32, 32, 32))
    inputs = mm.make_inputs(case)
    np.testing.assert_array_equal(backend.run(case, inputs)["out"], mm.product(inputs, "exact"))
    assert f"--iree-amdaie-device-hal={expected}" in _compile_argv(standin["log"])
    assert f"--device={expected}" in _run_argv(standin["log"])


def test_driver_the_compiler_cannot_build_for_says_so(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_ERA", "2024-10")
    monkeypatch.setenv(toolchain.DRIVER_ENV, "amdxdna")
    reason = IreeAmdAieBackend().availability()
    assert "builds for xrt, xrt-lite only" in reason


def test_help_enum_values_are_read():
    text = ("  --iree-amdaie-device-hal=<value>          - Sets the target device HAL.\n"
            "    =xrt                                    -   xrt device HAL\n"
            "    =amdxdna                                -   amdxdna device HAL\n"
            "  --iree-amdaie-enable-control-packet       - Enable ...\n")
    assert toolchain.enum_values(text, toolchain.DEVICE_HAL) == ("xrt", "amdxdna")
    assert toolchain.lists(text, toolchain.DEVICE_HAL)
    assert not toolchain.lists(text, "--iree-amdaie-device")


def test_compiler_assertion_is_a_compile_error_with_the_diagnostic(seed_era):
    case = mm.make_case(mm.MatmulConfig(2304, 8, 8))
    with pytest.raises(CompileError) as info:
        IreeAmdAieBackend().run(case, mm.make_inputs(case))
    assert "SIGABRT" in info.value.message and "Currently do not support remainder tiles" in info.value.message
    assert "AIRRtToIpuPass.cpp" in info.value.detail["diagnostic"]


def test_npu_that_never_finishes_is_a_hang(seed_era):
    case = mm.make_case(mm.MatmulConfig(8, 8, 640))
    with pytest.raises(Hang) as info:
        IreeAmdAieBackend().run(case, mm.make_inputs(case))
    assert f"within {seed_era['bound_s']} s" in info.value.message


def test_sweep_on_the_standin_names_every_verdict(seed_era, capsys):
    code = sweep.main(["--hw", "iree-amd-aie", "--shape", "64x64x64", "--shape", "8x8x640", "--shape", "2304x8x8",
                       "--shape", "8x8x2432"])
    out = capsys.readouterr().out
    assert code == 1
    rows = {tuple(line.split()[1:4]): line.split()[4] for line in out.splitlines()
            if line.startswith("# ") and line.split()[1:2] and line.split()[1].isdigit()}
    assert rows == {("64", "64", "64"): "PASS", ("8", "8", "640"): "HANG",
                    ("2304", "8", "8"): "COMPILE_ERROR", ("8", "8", "2432"): "COMPILE_ERROR"}
    assert "block with no terminator" in out and "Currently do not support remainder tiles" in out


# --- against the plugin's real history (tests/selftest/fixtures/real/iree_amd_aie/) ------------

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "iree_amd_aie"
HISTORY = json.loads((REAL / "options_by_commit.json").read_text())["commits"]
ERA_COMMIT = {"2024-04": "35e1c0d3", "2024-10": "fad96292", "2026-06": "fddfec1b"}


def _facts(era):
    return next(v for k, v in HISTORY.items() if k.startswith(ERA_COMMIT[era]))


@pytest.mark.parametrize("era", sorted(ERA_COMMIT))
def test_every_flag_and_driver_is_in_the_plugins_source(standin, monkeypatch, era):
    """What the backend passes to the compiler of each era exists in the plugin's source at that
    commit, enum values included, and the driver is one that commit's runtime registers."""
    monkeypatch.setenv("STANDIN_ERA", era)
    facts = _facts(era)
    backend = IreeAmdAieBackend()
    case = mm.make_case(mm.MatmulConfig(32, 32, 32))
    backend.run(case, mm.make_inputs(case))
    plugin_flags = [a for a in _compile_argv(standin["log"]) if a.startswith(("--iree-amd-aie", "--iree-amdaie"))]
    for flag in plugin_flags:
        name, _, value = flag[2:].partition("=")
        assert name in facts["options"], (era, flag)
        assert value in facts["option_values"].get(name, [value]), (era, flag)
    driver = backend.versions()["hal-driver"]
    assert driver in facts["runtime_drivers"]
    assert "iree-amdaie-device-hal" not in facts["options"] or driver in facts["option_values"]["iree-amdaie-device-hal"]


def test_seed_era_flags_are_the_seed_eras_script(seed_era):
    """The use-pipeline era's compile line is the one build_tools/ci/run_matmul_test.sh ran then."""
    script = (REAL / "run_matmul_test.sh.2024-04.txt").read_text()
    script_flags = set(re.findall(r"(--iree-[\w-]+)=", script))
    case = mm.make_case(mm.MatmulConfig(32, 32, 32))
    IreeAmdAieBackend().run(case, mm.make_inputs(case))
    ours = {a.split("=", 1)[0] for a in _compile_argv(seed_era["log"]) if a.startswith("--iree-")}
    assert ours <= script_flags
    assert {"--iree-amdaie-use-pipeline", "--iree-amd-aie-mlir-aie-install-dir"} <= ours
    assert 'local device="xrt"' in script and 'local pipeline="pad-pack"' in script


def test_current_flags_are_the_e2e_scripts(standin):
    """Today's compile and run lines follow build_tools/ci/cpu_comparison/run.py."""
    script = (REAL / "run.py.2026-06.txt").read_text()
    script_flags = set(re.findall(r"(--iree-[\w-]+)=", script))
    case = mm.make_case(mm.MatmulConfig(32, 32, 32))
    IreeAmdAieBackend().run(case, mm.make_inputs(case))
    ours = {a.split("=", 1)[0] for a in _compile_argv(standin["log"]) if a.startswith("--iree-")}
    assert ours <= script_flags, ours - script_flags
    assert 'default="amdxdna"' in script and "--device={config.device_hal}" in script
    assert "--device=amdxdna" in _run_argv(standin["log"])
