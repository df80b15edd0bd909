"""Each upstream bundle as a pytest case: PASS when its reproduce.py finds the bug gone (exit 0),
FAIL while it is there (exit 1), SKIP when the toolchain could not tell (exit 2: e.g. an IREE whose
host program the riscv64 harness tables do not match). Named on the command line only (never
collected by the default run), so a bundle can be bisected over toolchain releases like any test:

    accel-regress bisect 'findings/bundle_cases.py::test_bundle[exp-underflow-riscv64]' \\
        --package iree-base-compiler,iree-base-runtime --good 3.12.0 --bad 3.13.0
"""
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BUNDLES = sorted(p.name for p in HERE.iterdir() if (p / "reproduce.py").is_file())


@pytest.mark.parametrize("name", BUNDLES)
def test_bundle(name):
    proc = subprocess.run([sys.executable, str(HERE / name / "reproduce.py")], capture_output=True, text=True,
                          timeout=1800)
    said = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 2:
        pytest.skip(f"the toolchain could not tell: {said[-500:]}")
    assert proc.returncode == 0, said[-3000:]
