"""--repeat N: a seeded flaky fault (wrong 1 time in 5) is FLAKY 1/5, with the run, the worker and
what differed named, and the gate blocks it; a steady case stays PASS or FAIL."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accel_regress.results import gate

REPO = Path(__file__).resolve().parents[3]
CASE = "tests/test_f32_reduction.py::test_f32_reduction[emu-row_sum-64x128-v-vlen256-normal]"

# Wrong in the third of every five runs of a case; the count lives in a file, so it survives the
# fresh workers --repeat starts.
FAULT = textwrap.dedent('''
    import os
    from pathlib import Path

    def one_in_five(case, outputs):
        counter = Path(os.environ["ACCEL_FLAKY_DIR"]) / f"{case.op}-{case.id}.count"
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        if n % 5 == 2:
            name = sorted(outputs)[0]
            bad = outputs[name].copy()
            bad.flat[0] = bad.flat[0] * 2 + 1
            outputs[name] = bad
        return outputs

    def always(case, outputs):
        name = sorted(outputs)[0]
        bad = outputs[name].copy()
        bad.flat[0] = bad.flat[0] * 2 + 1
        return {**outputs, name: bad}
''')


def _run(tmp_path, *options) -> dict:
    (tmp_path / "flaky.py").write_text(FAULT)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    report_dir = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "pytest", CASE, "--hw", "emu", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", "--report-dir", str(report_dir), *options],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "ACCEL_FLAKY_DIR": str(state)})
    data = json.loads((report_dir / "results.json").read_text())
    data["_stdout"] = proc.stdout
    assert data["cases"], f"{CASE} collected nothing:\n{proc.stdout[-2000:]}"
    return data


def test_seeded_one_in_five_fault_is_flaky_1_of_5_and_blocks_the_gate(tmp_path):
    data = _run(tmp_path, "--repeat", "5", "--inject-fault", f"{tmp_path / 'flaky.py'}:one_in_five")
    (case,) = data["cases"]
    assert case["verdict"] == "FLAKY", case["message"]
    rep = case["detail"]["repeat"]
    assert rep["rate"] == "1/5" and rep["runs"] == 5 and rep["failed"] == 1
    assert [o["worker"] for o in rep["outcomes"]] == ["same", "fresh", "same", "fresh", "same"]
    assert [o["verdict"] for o in rep["outcomes"]] == ["PASS", "PASS", "FAIL", "PASS", "PASS"]
    assert case["message"].startswith("FLAKY 1/5: run 3 (same worker) FAIL; the other 4 passed")
    assert any(d.startswith("output sum: 1 of 64 elements differ between runs 3 and 1") for d in rep["differed"]), rep
    assert len(case["runs"]) == 5                       # every run is on the record
    v = gate.evaluate(data, allow_fault=True)
    assert not v.ship and v.reasons[0].startswith(
        "1 new FLAKY (mixed outcomes over --repeat): FLAKY 1/5 tests/test_f32_reduction.py::test_f32_reduction"
        "[row_sum-64x128-v-vlen256-normal] on emu")
    # -q: the failure's own rerun section (the summary is one line)
    assert "rerun this case" in data["_stdout"] and "--repeat 5" in data["_stdout"]


def test_without_repeat_the_same_fault_passes(tmp_path):
    # The reason --repeat exists: one run of an intermittent bug usually says PASS.
    data = _run(tmp_path, "--inject-fault", f"{tmp_path / 'flaky.py'}:one_in_five")
    assert [c["verdict"] for c in data["cases"]] == ["PASS"]


@pytest.mark.parametrize("fault, verdict", [(None, "PASS"), ("always", "FAIL")])
def test_steady_outcomes_keep_their_verdict(tmp_path, fault, verdict):
    options = ["--repeat", "3", "--isolation", "none"]
    if fault:
        options += ["--inject-fault", f"{tmp_path / 'flaky.py'}:{fault}"]
    data = _run(tmp_path, *options)
    (case,) = data["cases"]
    assert case["verdict"] == verdict and len(case["runs"]) == 3
    if fault:
        assert "--repeat 3: FAIL in every run" in data["_stdout"]


def test_repeat_must_be_positive(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pytest", CASE, "--hw", "emu", "--repeat", "0", "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4 and "--repeat: must be 1 or more, not 0" in proc.stderr
