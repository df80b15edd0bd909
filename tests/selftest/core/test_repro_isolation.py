"""Issue 19 items 12 and 15, through the real scripts (subprocesses):

- 15: repros run through the same isolated runner as pytest, with its bounds and verdicts: a real
  hang is a HANG row after the case bound (not a blocked script), a dying run is a CRASH row (not a
  dead script), and a typo in the fault or a fault file that cannot load is a usage error (exit 2);
- 12: a sweep shape whose inputs, output and reference cannot fit the memory budget is a SKIP that
  says so, before anything is allocated (not a MemoryError traceback).
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

FAULT = textwrap.dedent('''
    import os, time
    def hang(case, outputs):
        while True:
            time.sleep(1)
    def die(case, outputs):
        os._exit(3)
''')


def _run(args, tmp_path, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("ACCEL_ISOLATION", None)
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("script, fault", [("gemm_partition_n.py", "iron-gemm-stale-dmaa"),   # a typo
                                           ("f32_reduction_hang.py", "broken.py:fault"),    # does not import
                                           ("rowexpandmul_fillpad.py", "faults.py:nothing"),
                                           ("matmul_2432_sweep.py", "nofile.py:fault"),
                                           ("fused_decode_compare.py", "fused-stale-outptu")])
def test_item15_a_bad_fault_is_a_usage_error(tmp_path, script, fault):
    (tmp_path / "broken.py").write_text("def fault(case, outputs:\n")      # a syntax error
    (tmp_path / "faults.py").write_text(FAULT)
    res = _run([str(REPO / "repros" / script), "--hw", "emu", "--fault", fault], tmp_path)
    text = res.stdout + res.stderr
    assert res.returncode == 2, text[-2000:]
    assert "CRASH" not in text and "Traceback" not in text, text[-2000:]
    assert fault.split(":")[0] in res.stderr, res.stderr


@pytest.mark.parametrize("kind, verdict", [("hang", "HANG"), ("die", "CRASH")])
def test_item15_a_repro_hang_or_crash_is_a_verdict_within_the_bound(tmp_path, kind, verdict):
    (tmp_path / "faults.py").write_text(FAULT)
    res = _run([str(REPO / "repros" / "matmul_2432_sweep.py"), "--hw", "emu", "--shape", "64x64x64",
                "--fault", f"faults.py:{kind}", "--case-timeout", "3"], tmp_path, timeout=90)
    assert res.returncode == 1, (res.stdout + res.stderr)[-2000:]
    assert f"64  {verdict}" in res.stdout or f"{verdict} -------- X" in res.stdout, res.stdout
    if kind == "die":
        assert "exited with code 3" in res.stdout, res.stdout


def test_item12_a_shape_over_the_memory_budget_is_a_skip_that_says_so(tmp_path):
    res = _run(["-m", "accel_regress", "sweep", "--hw", "emu", "--shape", "20000000x1x20000000",
                "--shape", "16x16x16"], tmp_path, timeout=120)
    assert res.returncode == 0, (res.stdout + res.stderr)[-2000:]
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stdout + res.stderr
    assert "20000000x1x20000000: SKIP" in res.stdout and "over the memory budget" in res.stdout, res.stdout
    assert "16  PASS" in res.stdout or "16      PASS" in res.stdout or "PASS" in res.stdout
