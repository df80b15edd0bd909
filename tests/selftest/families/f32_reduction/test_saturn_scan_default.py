"""Seed 004's one real finding shows in a default run, under qemu-rvv, and its rerun line
reproduces it as printed (issue 29 item 1).

IREE 3.13 emits seed 004's Saturn hang signature for ``softmax-64x64-v-zvl512b``. The RVV codegen
scan (tests/test_f32_reduction.py::test_saturn_codegen_signature) is a stage of qemu-rvv and
firesim: with no option and no variable it runs on qemu-rvv wherever that backend is available,
the finding is an XFAIL naming the signature (expectations/qemu-rvv.toml), and the other backends
are NOT_APPLICABLE, one summary line per family x backend. Run plainly
(``--ignore-expectations``) the case FAILs, and the rerun line it prints, run exactly as printed,
gives the same FAIL.
"""
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.core import registry
from accel_regress.results import summary

REPO = Path(__file__).resolve().parents[4]
FINDING = "test_saturn_codegen_signature[qemu-rvv-softmax-64x64-v-zvl512b-vlen512-normal]"

needs_qemu_rvv = pytest.mark.skipif(registry.availability("qemu-rvv") is not None,
                                    reason=f"qemu-rvv unavailable: {registry.availability('qemu-rvv')}")


def _pytest(args, cwd, env):
    proc = subprocess.run([sys.executable, "-m", "pytest", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_HW", "ACCEL_SATURN_SCAN", "PYTEST_XDIST_WORKER")}
    env.update(extra)
    return env


def _cases(report_dir):
    return json.loads((report_dir / "results.json").read_text())


@needs_qemu_rvv
def test_default_run_shows_the_finding_under_qemu_rvv(tmp_path):
    rc, out = _pytest(["tests/test_f32_reduction.py", "-k", "saturn and softmax", "--isolation", "none",
                       "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider"], REPO, _env(tmp_path))
    assert rc == 0, out
    data = _cases(tmp_path / "rep")
    by = {(c["nodeid"].split("::")[1], c["backend"]): c for c in data["cases"]}
    finding = by[(FINDING, "qemu-rvv")]
    assert finding["verdict"] == "XFAIL", finding
    assert "vfmacc.vf and vslidedown.vi" in finding["message"] and "vsetivli zero, 1, e32, mf2" in finding["message"]
    scans = [c for c in data["cases"] if c["backend"] == "qemu-rvv"]
    assert len(scans) == 5 and sorted(c["verdict"] for c in scans) == ["PASS"] * 4 + ["XFAIL"]
    for name in data["session"]["hw"]:
        if name not in ("qemu-rvv", "firesim"):
            assert {c["verdict"] for c in data["cases"] if c["backend"] == name} == {"NOT_APPLICABLE"}
            assert f"not applicable: f32_reduction on {name} (5 cases)" in out, out
    assert not [c for c in data["cases"] if c["verdict"] == "SKIP"], out


@needs_qemu_rvv
def test_rerun_line_reproduces_the_finding_as_printed(tmp_path):
    cache = tmp_path / "scan-cache"
    env = _env(tmp_path, ACCEL_RVV_SCAN_CACHE=str(cache))
    rc, out = _pytest(["tests/test_f32_reduction.py", "-k", "saturn and softmax and zvl512b", "--hw", "qemu-rvv",
                       "--ignore-expectations", "--isolation", "none", "--report-dir", str(tmp_path / "rep"),
                       "-p", "no:cacheprovider"], REPO, env)
    assert rc == 1, out
    data = _cases(tmp_path / "rep")
    (case,) = [c for c in data["cases"] if c["nodeid"].endswith(FINDING)]
    assert case["verdict"] == "FAIL" and case["backend"] == "qemu-rvv"
    line = case["rerun"]
    assert line == summary.rerun_line(case, data["session"]), "pytest's and the summary's rerun lines differ"
    assert f"rerun: {line}" in out
    assert f"ACCEL_RVV_SCAN_CACHE={cache}" in line and "--hw qemu-rvv" in line and "--ignore-expectations" in line
    # As printed, from the checkout, in a clean environment; only where reports go is pytest's own.
    argv = shlex.split(line)
    assert argv[0] == "env"
    split = argv.index("python")
    clean = {k: v for k, v in _env(tmp_path).items() if not k.startswith("ACCEL_")}
    clean.update(a.split("=", 1) for a in argv[1:split])
    clean["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} --report-dir {tmp_path / 'rerun'} -p no:cacheprovider"
    proc = subprocess.run([sys.executable, *argv[split + 1:]], capture_output=True, text=True, timeout=600,
                          cwd=REPO, env=clean)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (again,) = _cases(tmp_path / "rerun")["cases"]
    assert again["verdict"] == "FAIL" and again["backend"] == "qemu-rvv" and again["nodeid"] == case["nodeid"]
    assert again["message"] == case["message"]


def test_rerun_line_carries_opt_in_markers_and_environment():
    case = {"nodeid": "tests/t.py::test_x[emu-a]", "backend": "emu", "detail": {"markers": ["large", "input_classes", "family"]}}
    session = {"argv": ["--golden-seed", "3"], "golden_seed": 3, "env": {"ACCEL_FIRESIM_WALL_S": "5 s", "PTOAS_ROOT": "/p"}}
    assert summary.rerun_line(case, session) == (
        "env 'ACCEL_FIRESIM_WALL_S=5 s' PTOAS_ROOT=/p python -m pytest 'tests/t.py::test_x[emu-a]' --hw emu "
        "--golden-seed 3 -m 'large or input_classes'")
    assert summary.rerun_env({"ACCEL_X": "1", "ACCEL_DEVICE_NPU": "0", "ACCEL_HW": "emu", "HOME": "/root",
                              "PYPTO_LIB_ROOT": "/l"}) == {"ACCEL_X": "1", "PYPTO_LIB_ROOT": "/l"}
