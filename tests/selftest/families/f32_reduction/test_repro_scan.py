"""repros/f32_reduction_hang.py --scan builds the f32 reductions for a RISC-V variant and prints the
codegen scan (issue 35): IREE 3.13's +zvl512b builds have seed 004's candidate pattern nowhere."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]


def _repro(*args):
    return subprocess.run([sys.executable, "repros/f32_reduction_hang.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=900)


def test_scan_of_the_zvl512b_variant_is_printed():
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    run = _repro("--scan", "v-zvl512b")
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    soft = [ln for ln in lines if ln.startswith("mt_softmax_64x64") and "v-zvl512b" in ln]
    assert soft and "no candidate" in soft[0] and "vfredmax[e32:8]" in soft[0], run.stdout
    assert len([ln for ln in lines if " v-zvl512b " in ln]) == 7          # the seven f32 reductions
    assert "0 dispatch(es) with seed 004's candidate pattern" in run.stdout


def test_scan_of_an_unknown_variant_is_a_usage_error():
    run = _repro("--scan", "v-zvl9999b")
    assert run.returncode == 2 and "unknown variant(s) v-zvl9999b" in run.stderr and "Traceback" not in run.stderr
