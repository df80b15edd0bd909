"""The shape property test's default profile finds seed 003's documented faults (issue 29 item 3).

Under the default (``accel-ci``) profile, tests/test_matmul_shapes_property.py must fail with each
built-in matmul fault injected, naming a shape the fault's rule holds for, within seconds; and
pass on a clean run. Before its explicit seed examples it passed with the herd-hang fault in
(25 drawn shapes below 320 never reach a 256-byte herd extent).
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
PROPERTY = REPO / "tests" / "test_matmul_shapes_property.py"


def _run(tmp_path, *extra):
    argv = [sys.executable, "-m", "pytest", str(PROPERTY), "--hw", "emu", "--isolation", "none",
            "--report-dir", str(tmp_path / "reports"), "-p", "no:cacheprovider", "-p", "no:warnings",
            f"--rootdir={REPO}", "-c", str(REPO / "pyproject.toml"), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return proc.returncode, proc.stdout + proc.stderr


def _herd_hangs(M, K, N):          # the fault's rule in the seed's words, for bf16 operands
    return (2 * N) % 256 == 0 and (2 * N // 256) % 2 == 1 and not ((2 * M) % 256 == 0 and (2 * M // 256) % 2 == 1)


def _remainder(M, K, N):
    return any((d > 256 and d % 256) or (d >= 1024 and d % 512) for d in (M, K, N))


@pytest.mark.parametrize("fault, verdict, rule", [
    ("aie-matmul-4x2-herd-hang", "HANG", _herd_hangs),
    ("aie-matmul-remainder-compile", "COMPILE_ERROR", _remainder),
])
def test_default_profile_finds_the_seed_fault(tmp_path, fault, verdict, rule):
    rc, out = _run(tmp_path, "--inject-fault", fault)
    assert rc == 1, out
    assert re.search(rf"^{verdict} +tests/test_matmul_shapes_property\.py::test_matmul_shape_exact\[emu\]", out, re.M), out
    shape = re.search(rf"--shape (\d+)x(\d+)x(\d+) --fault {fault}", out)
    assert shape and rule(*map(int, shape.groups())), out


def test_default_profile_passes_clean(tmp_path):
    rc, out = _run(tmp_path)
    assert rc == 0, out
    assert "1 passed" in out, out
