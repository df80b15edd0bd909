"""repros/gemm_partition_n.py says what pytest says for the same case and fault (issue 29 item 5):
the same census, with "where" in C's own columns (partition 1 of VOCAB_MINI is columns
1002-2003, not 0-1001), and it runs on any backend that runs the family, picking the
configuration that backend can run (iree-cpu: the GEMM without bfp16 emulation)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.core import registry

REPO = Path(__file__).resolve().parents[4]
REPRO = REPO / "repros" / "gemm_partition_n.py"
FAULT = "iron-gemm-stale-dma"


def test_repro_where_is_pytests_where(tmp_path):
    repro = subprocess.run([sys.executable, str(REPRO), "--hw", "emu", "--fault", FAULT],
                           capture_output=True, text=True, timeout=600)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    lines = repro.stdout.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.strip().startswith("C_1 (columns 1002-2003)"))
    repro_where = lines[i + 1].split("where: ", 1)[1]
    argv = [sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", "emu", "--inject-fault", FAULT,
            "-k", "test_partition and vocab-mini and C1-normal", "--isolation", "none",
            "--report-dir", str(tmp_path / "rep"), "-p", "no:cacheprovider", "-q"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=REPO)
    (case,) = json.loads((tmp_path / "rep" / "results.json").read_text())["cases"]
    assert case["verdict"] == "FAIL", proc.stdout
    pytest_where = re.search(r"^Where: (.*)$", case["message"], re.M).group(1)
    assert repro_where == pytest_where == "block rows 0-255, cols 1002-2003: " + pytest_where.split(": ", 1)[1]


@pytest.mark.skipif(registry.availability("iree-cpu") is not None, reason="iree-cpu unavailable")
def test_repro_runs_on_iree_cpu_with_the_configuration_it_can_run():
    proc = subprocess.run([sys.executable, str(REPRO), "--hw", "iree-cpu", "--fault", FAULT],
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "iree-cpu never runs bfp16 emulation" in out and "-bf16-normal" in out
    assert re.search(r"C_0 \(columns 0-1001\).*\[PASS\]", out) and re.search(r"C_1 \(columns 1002-2003\).*\[FAIL\]", out)
    assert "CONCLUSION: the standalone partitions are right" in out
