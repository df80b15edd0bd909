"""`python -m accel_regress trend`: per test and device, when its verdict changed and the versions on
either side; a pass-rate plot per family and device that the report of its folder embeds."""
import json

from accel_regress.results import report, record as results, trend


def _night(tmp_path, name, started, qemu, verdicts):
    versions = {"iree-compiler": "3.13.0", "qemu": f"qemu-riscv64 version {qemu}"}
    cases = [{"nodeid": f"tests/t.py::test_{k}[qemu-rvv]", "backend": "qemu-rvv", "family": "f32_reduction",
              "verdict": v, "message": "", "detail": {}, "versions": versions} for k, v in verdicts.items()]
    data = results.build({"hw": ["qemu-rvv"], "started": started, "host": "runner-a"}, {}, cases)
    d = tmp_path / name
    d.mkdir()
    (d / "results.json").write_text(json.dumps(data))
    return d


def test_trend_names_the_change_and_the_versions_on_either_side(tmp_path, capsys):
    _night(tmp_path, "n2", "2026-11-21T02:00:00", "8.2.0", {"a": "FAIL", "b": "PASS", "c": "SKIP"})
    _night(tmp_path, "n1", "2026-11-20T02:00:00", "7.2.22", {"a": "PASS", "b": "PASS", "c": "SKIP"})
    _night(tmp_path, "n3", "2026-11-22T02:00:00", "8.2.0", {"a": "FAIL", "b": "FLAKY", "c": "SKIP"})
    out = tmp_path / "report"
    assert trend.main([str(tmp_path), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "3 run(s) from 2026-11-20T02:00:00 to 2026-11-22T02:00:00: 2 verdict change(s)"
    assert lines[1].startswith("  tests/t.py::test_a on qemu-rvv: PASS -> FAIL between 2026-11-20T02:00:00 on runner-a")
    assert lines[1].endswith("; qemu qemu-riscv64 version 7.2.22 -> qemu-riscv64 version 8.2.0")
    assert "test_b on qemu-rvv: PASS -> FLAKY between 2026-11-21T02:00:00" in lines[2]
    assert "no version changed (iree-compiler 3.13.0, qemu qemu-riscv64 version 8.2.0)" in lines[2]
    rates = trend.pass_rates(trend.load_runs([str(tmp_path)])[0])
    assert rates == {("f32_reduction", "qemu-rvv"): [(0, 1.0), (1, 0.5), (2, 0.0)]}
    assert (out / "trend.png").stat().st_size > 5000 and "PASS -> FAIL" in (out / "trend.md").read_text()
    # The report of that folder shows the plot.
    (out / "results.json").write_text((tmp_path / "n3" / "results.json").read_text())
    assert report.main([str(out / "results.json")]) == 0
    assert "<img src='trend.png'" in (out / "index.html").read_text()
    assert "![pass rate per family and device over time](trend.png)" in (out / "summary.md").read_text()


def test_trend_without_readable_input_says_so(tmp_path, capsys):
    (tmp_path / "results.json").write_text("{")
    assert trend.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not valid JSON" in err and "no readable results.json" in err
