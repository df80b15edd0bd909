"""`trend` does not mix fault-injected runs into the nights of a device (issue 29 item 11): such a
run is left out with a note naming it and its fault, or, with --allow-fault, kept and labelled."""
import json

from accel_regress.results import record as results, trend


def _night(tmp_path, name, started, verdict, fault=None):
    cases = [{"nodeid": "tests/t.py::test_a[emu]", "backend": "emu", "family": "matmul", "verdict": verdict,
              "message": "", "detail": {}, "versions": {}}]
    data = results.build({"hw": ["emu"], "started": started, "host": "runner-a", "fault": fault}, {}, cases)
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(data))
    return d


def test_a_fault_run_is_left_out_unless_allowed_and_then_labelled(tmp_path, capsys):
    _night(tmp_path, "n1", "2026-11-20T02:00:00", "PASS")
    _night(tmp_path, "n2", "2026-11-21T02:00:00", "HANG", fault="aie-matmul-4x2-herd-hang")
    _night(tmp_path, "n3", "2026-11-22T02:00:00", "PASS")
    assert trend.main([str(tmp_path)]) == 0
    cap = capsys.readouterr()
    assert cap.out.splitlines()[0] == "2 run(s) from 2026-11-20T02:00:00 to 2026-11-22T02:00:00: 0 verdict change(s)"
    assert "left out:" in cap.err and "fault aie-matmul-4x2-herd-hang injected, not a release run" in cap.err
    assert trend.main([str(tmp_path), "--allow-fault"]) == 0
    out = capsys.readouterr().out
    assert "3 run(s)" in out and "PASS -> HANG" in out and "[fault aie-matmul-4x2-herd-hang injected]" in out
