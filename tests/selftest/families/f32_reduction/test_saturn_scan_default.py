"""The RVV codegen scan in a default run under qemu-rvv, and every XFAIL's rerun line (issue 35).

The scan (tests/test_f32_reduction.py::test_saturn_codegen_signature) is a stage of qemu-rvv and
firesim: with no option and no variable it runs on qemu-rvv wherever that backend is available, and
the other backends are NOT_APPLICABLE, one summary line per family x backend. It looks for seed
004's own listing (a single-lane vfmacc.vf at VL=1, mf2 with slides in one loop); IREE 3.13's
+zvl512b softmax does not have it (its FMAs run at e32, m2; only a one-element slide runs at mf2),
so no case is an XFAIL claiming it (the first scan flagged that softmax: findings/README.md's
corrections). A known bug (an XFAIL) carries in results.json and in the summary the line that shows
it again, and that line, pasted, gives the same XFAIL.
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
KNOWN = "tests/test_f32_reduction.py::test_f32_reduction[iree-cpu-erf-64-v-vlen256-specials]"

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
def test_default_run_scans_under_qemu_rvv_and_claims_no_seed_signature(tmp_path):
    rc, out = _pytest(["tests/test_f32_reduction.py", "-k", "saturn and softmax and not log_softmax", "--isolation", "none",
                       "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider"], REPO, _env(tmp_path))
    assert rc == 0, out
    data = _cases(tmp_path / "rep")
    scans = [c for c in data["cases"] if c["backend"] == "qemu-rvv"]
    assert len(scans) == 5 and [c["verdict"] for c in scans] == ["PASS"] * 5, scans
    assert not [c for c in data["cases"] if c["verdict"] == "XFAIL"], "an XFAIL still claims seed 004's pattern"
    others = [name for name in data["session"]["hw"] if name not in ("qemu-rvv", "firesim")]
    for name in others:
        assert {c["verdict"] for c in data["cases"] if c["backend"] == name} == {"NOT_APPLICABLE"}
    # one summary line for the rule, naming every backend it covers
    rule = [line for line in out.splitlines() if line.startswith(f"not applicable ({5 * len(others)} cases; f32_reduction on ")]
    assert len(rule) == 1 and all(name in rule[0] for name in others) and "a stage of qemu-rvv" in rule[0], out
    assert not [c for c in data["cases"] if c["verdict"] == "SKIP"], out


def test_an_xfail_carries_its_rerun_line_which_reproduces_it(tmp_path):
    """erf(-0) on iree-cpu is a known bug (expectations/iree-cpu.toml): its XFAIL has the rerun
    line in results.json and in the summary, and the line, pasted in a clean environment, gives
    the XFAIL again."""
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    rc, out = _pytest([KNOWN, "--isolation", "none", "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider"],
                      REPO, _env(tmp_path))
    assert rc == 0, out
    data = _cases(tmp_path / "rep")
    (case,) = data["cases"]
    assert case["verdict"] == "XFAIL" and case["rerun"], case
    assert case["rerun"] == summary.rerun_line(case, data["session"]), "pytest's and the summary's rerun lines differ"
    assert f"rerun: {case['rerun']}" in out, out
    argv = shlex.split(case["rerun"])
    split = argv.index("python")
    clean = {k: v for k, v in _env(tmp_path).items() if not k.startswith("ACCEL_")}
    clean.update(a.split("=", 1) for a in argv[1:split])
    clean["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} --report-dir {tmp_path / 'rerun'} -p no:cacheprovider"
    proc = subprocess.run([sys.executable, *argv[split + 1:]], capture_output=True, text=True, timeout=600,
                          cwd=REPO, env=clean)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (again,) = _cases(tmp_path / "rerun")["cases"]
    assert again["verdict"] == "XFAIL" and again["nodeid"] == case["nodeid"] and again["message"] == case["message"]


def test_summary_lists_each_xfail_with_its_rerun_line():
    case = {"nodeid": "tests/t.py::test_x[emu-a]", "backend": "emu", "verdict": "XFAIL",
            "message": "known FAIL: erf(-0)", "rerun": "python -m pytest 'tests/t.py::test_x[emu-a]' --hw emu",
            "detail": {"expectation": {"verdict": "FAIL", "reason": "erf(-0)", "file": "expectations/emu.toml"}}}
    lines = summary.xfails([case, {**case, "verdict": "PASS", "nodeid": "p"}], {})
    assert lines == ["XFAIL         tests/t.py::test_x[emu-a]  -- known FAIL: erf(-0) (expectations/emu.toml)",
                     "              rerun: python -m pytest 'tests/t.py::test_x[emu-a]' --hw emu"]


def test_rerun_line_carries_opt_in_markers_and_environment():
    case = {"nodeid": "tests/t.py::test_x[emu-a]", "backend": "emu", "detail": {"markers": ["large", "input_classes", "family"]}}
    session = {"argv": ["--golden-seed", "3"], "golden_seed": 3, "env": {"ACCEL_FIRESIM_WALL_S": "5 s", "PTOAS_ROOT": "/p"}}
    assert summary.rerun_line(case, session) == (
        "env 'ACCEL_FIRESIM_WALL_S=5 s' PTOAS_ROOT=/p python -m pytest 'tests/t.py::test_x[emu-a]' --hw emu "
        "--golden-seed 3 -m 'large or input_classes'")
    assert summary.rerun_env({"ACCEL_X": "1", "ACCEL_DEVICE_NPU": "0", "ACCEL_HW": "emu", "HOME": "/root",
                              "PYPTO_LIB_ROOT": "/l"}) == {"ACCEL_X": "1", "PYPTO_LIB_ROOT": "/l"}
