"""The iree-amd-aie backend and the sweep on it, through stand-ins for the two missing programs.

The backend is the real code (flags, raw bf16 inputs, subprocess bounds, verdicts); only the
plugin build's ``iree-compile`` and ``iree-run-module`` are replaced by small scripts with their
surface (tests/selftest/fixtures/matmul/iree_amd_aie_standin/), which behave like seed 003's
2024 stack: 2304 aborts the compiler, 2432 fails it, N == 640 with M != 640 hangs the NPU.
"""
import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from golden import matmul as mm
from hardware import CompileError, Hang, registry, runner, sweep
from hardware.iree_amd_aie import IreeAmdAieBackend

STANDIN = Path(__file__).parent / "fixtures" / "matmul" / "iree_amd_aie_standin"


@pytest.fixture
def standin(tmp_path, monkeypatch):
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
    monkeypatch.setenv("ACCEL_AMDAIE_RUN_TIMEOUT_S", "3")
    monkeypatch.setenv("STANDIN_LOG", str(log))
    # The environment above is this process's: run in it, not in isolation workers forked before.
    monkeypatch.setattr(runner, "isolation", None)
    registry.availability.cache_clear()
    yield {"log": log, "peano": peano}
    registry.availability.cache_clear()


def _calls(log: Path, tool: str) -> list[list[str]]:
    return [c[1:] for c in map(json.loads, log.read_text().splitlines()) if c[0] == tool]


def test_unavailable_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv("ACCEL_IREE_AMD_AIE_INSTALL", str(tmp_path / "nowhere"))
    reason = IreeAmdAieBackend().availability()
    assert "no iree-compile" in reason and "ACCEL_IREE_AMD_AIE_INSTALL" in reason and "IREE_CMAKE_PLUGIN_PATHS" in reason


def test_no_npu_is_a_skip_reason(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_NO_DEVICE", "1")
    assert "sees no NPU" in IreeAmdAieBackend().availability()


def test_runs_with_the_real_flags_and_bf16_inputs(standin):
    backend = IreeAmdAieBackend()
    assert backend.availability() is None
    case = mm.make_case(mm.MatmulConfig(64, 96, 32))
    inputs = mm.make_inputs(case)
    out = backend.run(case, inputs)["out"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, mm.reference(inputs, "int"))
    compile_argv = [c for c in _calls(standin["log"], "iree-compile") if "-o" in c][0]
    for flag in ("--iree-hal-target-backends=amd-aie", "--iree-amdaie-target-device=npu1_4col",
                 "--iree-amdaie-lower-to-aie-pipeline=objectFifo", "--iree-amdaie-tile-pipeline=pack-peel",
                 f"--iree-amd-aie-peano-install-dir={standin['peano']}", "--iree-amdaie-device-hal=xrt",
                 "--iree-hal-memoization=false", "--iree-hal-indirect-command-buffers=false"):
        assert flag in compile_argv
    run_argv = [c for c in _calls(standin["log"], "iree-run-module") if any(a.startswith("--module=") for a in c)][0]
    assert "--device=xrt" in run_argv and "--function=matmul" in run_argv
    assert any(a.startswith("--input=64x96xbf16=@") for a in run_argv)
    # A second run compiles nothing (the cache).
    n = len(_calls(standin["log"], "iree-compile"))
    backend.run(case, inputs)
    assert len([c for c in _calls(standin["log"], "iree-compile") if "-o" in c]) == 1
    assert len(_calls(standin["log"], "iree-compile")) == n


def test_compiler_assertion_is_a_compile_error_with_the_diagnostic(standin):
    case = mm.make_case(mm.MatmulConfig(2304, 8, 8))
    with pytest.raises(CompileError) as info:
        IreeAmdAieBackend().run(case, mm.make_inputs(case))
    assert "SIGABRT" in info.value.message and "Currently do not support remainder tiles" in info.value.message
    assert "AIRRtToIpuPass.cpp" in info.value.detail["diagnostic"]


def test_npu_that_never_finishes_is_a_hang(standin):
    case = mm.make_case(mm.MatmulConfig(8, 8, 640))
    with pytest.raises(Hang) as info:
        IreeAmdAieBackend().run(case, mm.make_inputs(case))
    assert "within 3 s" in info.value.message


def test_sweep_on_the_standin_names_every_verdict(standin, capsys):
    code = sweep.main(["--hw", "iree-amd-aie", "--shape", "64x64x64", "--shape", "8x8x640", "--shape", "2304x8x8",
                       "--shape", "8x8x2432"])
    out = capsys.readouterr().out
    assert code == 1
    rows = {tuple(line.split()[1:4]): line.split()[4] for line in out.splitlines()
            if line.startswith("# ") and line.split()[1:2] and line.split()[1].isdigit()}
    assert rows == {("64", "64", "64"): "PASS", ("8", "8", "640"): "HANG",
                    ("2304", "8", "8"): "COMPILE_ERROR", ("8", "8", "2432"): "COMPILE_ERROR"}
    assert "block with no terminator" in out and "Currently do not support remainder tiles" in out
