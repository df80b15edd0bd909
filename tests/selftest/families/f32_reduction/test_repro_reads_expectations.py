"""repros/f32_reduction_hang.py reads the expectations and shows what the isolated run measured
(issue 29 item 2): on qemu-rvv its cycle and scan columns are filled from the worker's report
(the run is isolated: the script's own backend object never ran anything), mt_cvt_64's known qemu
7.2 crash is XFAIL with the entry's reason, so a clean tree exits 0; an injected fault still fails."""
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.core import registry
from accel_regress.results import known

REPO = Path(__file__).resolve().parents[4]
REPRO = REPO / "repros" / "f32_reduction_hang.py"


def _repro(*args):
    proc = subprocess.run([sys.executable, str(REPRO), *args], capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


def _rows(out):
    return {(ln.split()[0], ln.split()[1]): ln for ln in out.splitlines() if ln.startswith("mt_")}


@pytest.mark.skipif(registry.availability("qemu-rvv") is not None, reason="qemu-rvv unavailable")
def test_clean_qemu_run_is_known_bugs_only_with_measured_columns():
    rc, out = _repro("--hw", "qemu-rvv")
    rows = _rows(out)
    assert rc == 0, out
    cvt = rows[("mt_cvt_64", "v")]
    assert " XFAIL " in cvt and "known CRASH" in cvt and "vfcvt.rtz" in cvt, cvt
    for key in (("mt_softmax_64x64", "v"), ("mt_rowsum_64x128", "v")):
        assert " PASS " in rows[key] and " ticks " in rows[key] and "vfredosum=8" in rows[key], rows[key]
    assert "vfredosum=0" in rows[("mt_rowsum_64x128", "novec")]


def test_a_fault_still_fails_and_is_not_taken_for_a_known_bug():
    rc, out = _repro("--hw", "emu", "--fault", "saturn-f32-reduction-hang")
    rows = _rows(out)
    assert rc == 1, out
    assert " HANG " in rows[("mt_softmax_64x64", "v")] and " PASS " in rows[("mt_softmax_64x64", "novec")]


def test_judged_like_a_session():
    entry = known.entry_for("qemu-rvv", "tests/test_f32_reduction.py::test_f32_reduction[cvt-64-v-vlen256-normal]")
    assert entry is not None and entry.verdict == "CRASH"
    assert known.judged("CRASH", entry) == "XFAIL"
    assert known.judged("PASS", entry) == "XPASS"
    assert known.judged("FAIL", entry) == "FAIL"
    assert known.judged("FAIL", None) == "FAIL"
