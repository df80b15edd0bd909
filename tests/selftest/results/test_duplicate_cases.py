"""Issue 47 defect 9: a record holding one case twice was "the last one wins" in gate and report
(PASS after FAIL: SHIP) while merge kept the worse, and a summary that disagreed with the cases
was printed as the run's table. gate, report and merge now judge a duplicated case by its worse
verdict, and the table counts what the record holds."""
import json

from accel_regress.results import gate, record
from accel_regress.results.report import write_all
from accel_regress.results.summary import section


def _case(verdict):
    return {"nodeid": "tests/t.py::test_x[emu]", "test": "test_x[emu]", "backend": "emu", "family": "fam",
            "verdict": verdict, "stage": "compare" if verdict == "FAIL" else None, "message": f"it is {verdict}",
            "duration_s": 0.1, "runs": [], "census": [], "detail": {}, "versions": {}}


def _record(tmp_path, *verdicts, summary=None):
    data = record.build({"hw": ["emu"], "interrupted": False, "fault": None, "exit_status": 0},
                        {"emu": {"selected": True, "available": True}}, [_case("PASS")])
    data["cases"] = [_case(v) for v in verdicts]      # what a hand-edited or forged record holds
    if summary is not None:
        data["summary"] = summary
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return record.load(path), path


def test_a_case_held_twice_is_judged_by_the_worse_in_gate_and_report(tmp_path, capsys):
    data, path = _record(tmp_path, "FAIL", "PASS")
    assert not gate.evaluate(data).ship
    assert gate.main([str(path)]) == 1
    assert "FAIL" in capsys.readouterr().out
    out = write_all(data, tmp_path / "rep")
    assert not out["verdict"].ship
    assert "FAIL" in (tmp_path / "rep" / "summary.md").read_text()


def test_the_table_counts_the_cases_not_the_summary_claimed(tmp_path):
    data, _ = _record(tmp_path, "FAIL", summary={"fam": {"emu": {"PASS": 1}}})
    lines = section(data, gate.evaluate(data))
    header = next(ln for ln in lines if ln.startswith("family")).split()
    row = next(ln for ln in lines if ln.startswith("fam ")).split()
    assert dict(zip(header[2:], row[2:])) in ({"FAIL": "1"}, {"PASS": "0", "FAIL": "1"}), lines
