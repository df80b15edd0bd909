"""The shape property test (tests/test_matmul_shapes_property.py) finds and shrinks a K-remainder bug.

With a fault that is wrong only when K % 64 != 0 and K > 100 (fixtures/matmul/k_remainder_fault.py),
the deterministic CI profile must fail, shrink to the minimal shape M=1, K=101, N=1, and report it
with the command that reruns that shape; the command must reproduce the failure on its own. The
run writes no example database into the working directory.
"""
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
FAULT = Path(__file__).parents[2] / "fixtures" / "matmul" / "k_remainder_fault.py"
PROPERTY = REPO / "tests" / "test_matmul_shapes_property.py"


def test_k_remainder_fault_shrinks_to_1x101x1(tmp_path):
    fault = f"{FAULT.relative_to(REPO)}:fault"
    argv = [sys.executable, "-m", "pytest", str(PROPERTY), "--hw", "emu", "--isolation", "none",
            "--inject-fault", str(REPO / fault), "--report-dir", str(tmp_path / "reports"),
            "-p", "no:cacheprovider", "-q", "-p", "no:warnings", f"--rootdir={REPO}", "-c", str(REPO / "pyproject.toml")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    # The shrunk example is what the failure reports: "matmul 1x101x1 (rerun: ...)".
    assert "matmul 1x101x1 (rerun: python repros/matmul_2432_sweep.py --hw emu --shape 1x101x1" in out, out
    assert "1 failed" in out
    assert not (tmp_path / ".hypothesis").exists(), "the CI profile must not write an example database"
    # The printed command reruns exactly the minimal shape, without pytest.
    command = shlex.split(re.search(r"rerun: (python repros/matmul_2432_sweep\.py[^)]*)\)", out).group(1))
    command[command.index("--fault") + 1] = f"{FAULT}:fault"
    rerun = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    assert "# 1    101  1    FAIL" in rerun.stdout
