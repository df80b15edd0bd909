"""The pytest process computes goldens and asks backends what they support without importing torch
(about 2 s per process, and per xdist worker): only the isolated worker, which runs emu's models,
imports it."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """
import sys
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.matmul import golden as matmul
from accel_regress.golden import store
from accel_regress.core import registry
store.configure(enabled=False)
cfg = gemm.CI_CONFIGS[7]
case = gemm.make_case(cfg)
gemm.expected(gemm.make_inputs(case), cfg)
for cls in ("normal", "exact"):
    mcase = matmul.make_case(matmul.MatmulConfig(64, 128, 96, inputs=cls))
    matmul.expected(mcase, matmul.make_inputs(mcase))
emu = registry.get("emu")
for op in ("gemm_partition_n", "matmul"):
    assert emu.supports_op(op) is None, op
    emu.timeout(case)
emu.versions()
print("torch" in sys.modules)
"""


def test_goldens_and_emu_queries_do_not_import_torch():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
