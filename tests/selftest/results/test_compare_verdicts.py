"""scripts/compare_verdicts.py: same verdicts exit 0; a changed, lost or new case is named, exit 1."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "compare_verdicts.py"


def _results(path: Path, cases: dict) -> str:
    path.write_text(json.dumps({"cases": [{"nodeid": n, "verdict": v} for n, v in cases.items()]}))
    return str(path)


def _compare(tmp_path, before: dict, after: dict):
    return subprocess.run([sys.executable, str(SCRIPT), _results(tmp_path / "a.json", before),
                           _results(tmp_path / "b.json", after)], capture_output=True, text=True)


def test_same_verdicts_exit_0(tmp_path):
    proc = _compare(tmp_path, {"t[emu-x]": "PASS", "t[emu-y]": "HANG"}, {"t[emu-y]": "HANG", "t[emu-x]": "PASS"})
    assert proc.returncode == 0 and "0 differ" in proc.stdout


def test_every_difference_is_named_and_exit_1(tmp_path):
    proc = _compare(tmp_path, {"t[emu-x]": "PASS", "t[emu-y]": "HANG", "t[emu-z]": "SKIP"},
                    {"t[emu-x]": "FAIL", "t[emu-y]": "HANG", "t[emu-w]": "PASS"})
    assert proc.returncode == 1
    assert "changed:     t[emu-x]: PASS -> FAIL" in proc.stdout
    assert "only before: t[emu-z]: SKIP" in proc.stdout and "only after:  t[emu-w]: PASS" in proc.stdout


def test_a_file_that_is_not_results_json_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    proc = subprocess.run([sys.executable, str(SCRIPT), str(bad), str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and "cannot read" in proc.stderr
