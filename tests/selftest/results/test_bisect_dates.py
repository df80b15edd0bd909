"""Dates that say what was tried (issue 35): a bisect whose good end is already bad names the oldest
version tried and no first bad one (text and --json), lists the versions its steps ran, and offers
(or with --older-lineage runs) the same bisect over the packages' older names; `upstream` copies
the versions run, not the range, into bundle.json.

The pytz bisect needs the package index (pytz wheels, 0.5 MB each), like test_bisect.py."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from accel_regress.results.bisect import cli, versions
from accel_regress.results.upstream import cli as upstream_cli

HERE = Path(__file__).resolve().parents[1]
CASE = HERE / "fixtures" / "bisect" / "case_pytz_dst.py"
NODE = "case_pytz_dst.py::test_mexico_city_keeps_summer_time_in_2023"


def test_good_end_already_bad_has_no_first_bad(tmp_path, monkeypatch):
    root = tmp_path / "project"
    root.mkdir()
    (root / CASE.name).write_text(CASE.read_text())
    monkeypatch.setenv("ACCEL_BISECT_RUNS", str(tmp_path / "journal"))
    monkeypatch.setenv("ACCEL_BISECT_ENVS", str(tmp_path / "envs"))
    proc = subprocess.run([sys.executable, "-m", "accel_regress", "bisect", NODE, "--package", "pytz",
                           "--good", "2022.6", "--bad", "2022.7.1", "--json", str(tmp_path / "r.json")],
                          cwd=root, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "the good end 2022.6 is already bad: no first bad version is known" in out, out
    assert "there since" not in out and "first bad:" not in out, out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "first_bad" not in doc and doc["last_good"] is None and doc["good_end_bad"] is True
    assert doc["oldest_tried"] == "2022.6"
    assert doc["versions"] == ["2022.6", "2022.7", "2022.7.1"]          # the range on the index
    assert doc["versions_tried"] == ["2022.6", "2022.7.1"]              # what the steps ran
    assert "older_lineage" not in doc                                   # pytz was never renamed


def _args(*extra):
    return cli.parser().parse_args(["t.py::test_x", "--package", "iree-base-compiler,iree-base-runtime",
                                    "--good", "2.9.0", "--bad", "3.13.0", *extra])


def _index(monkeypatch):
    listed = {"iree-compiler": ["20240410.859", "20241104.1068", "20230101.1"],
              "iree-runtime": ["20240410.859", "20241104.1068"]}
    monkeypatch.setattr(versions, "available", lambda p, pre=False: listed[p])


def test_older_package_names_are_offered(monkeypatch):
    _index(monkeypatch)
    out = io.StringIO()
    found = cli._older_lineage(_args(), ["iree-base-compiler", "iree-base-runtime"], "accel-regress bisect",
                               lambda text="": print(text, file=out))
    assert found["checked"] is False and found["packages"] == ["iree-compiler", "iree-runtime"]
    text = out.getvalue()
    assert "iree-compiler, iree-runtime: 20240410.859 .. 20241104.1068" in text
    assert ("accel-regress bisect t.py::test_x --package iree-compiler,iree-runtime --good 20240410.859 "
            "--bad 20241104.1068") in text


def test_older_lineage_flag_runs_that_bisect(monkeypatch):
    _index(monkeypatch)
    ran = []

    def fake_main(argv, prog):
        ran.append(argv)
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps({"last_good": None, "oldest_tried": "20240410.859",
                                                                     "versions_tried": ["20240410.859", "20241104.1068"]}))
        return 0
    monkeypatch.setattr(cli, "main", fake_main)
    args = _args("--older-lineage", "--older-good", "20241104.1068")
    with_older = cli._older_lineage(args, ["iree-base-compiler", "iree-base-runtime"], "accel-regress bisect",
                                    lambda text="": None)
    assert ran and ran[0][ran[0].index("--good") + 1] == "20241104.1068"
    assert with_older["checked"] is True and with_older["result"]["oldest_tried"] == "20240410.859"


def test_upstream_copies_the_versions_run_not_the_range(tmp_path):
    """A bisect --json written before versions_tried existed: its steps are what ran (2 of 15)."""
    doc = {"question": {"packages": ["iree-base-compiler", "iree-base-runtime"]}, "first_bad": "2.9.0",
           "last_good": None, "no_verdict": [], "seconds": 44.7,
           "versions": ["2.9.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "3.6.0", "3.7.0", "3.8.0",
                        "3.9.0", "3.10.0", "3.11.0", "3.12.0", "3.13.0"],
           "steps": [{"version": "3.13.0"}, {"version": "2.9.0"}]}
    f = tmp_path / "b.json"
    f.write_text(json.dumps(doc))
    lines, facts = upstream_cli.since(f)
    assert facts["versions_tried"] == ["2.9.0", "3.13.0"] and facts["oldest_tried"] == "2.9.0"
    assert "first_bad" not in facts and facts["older_lineage_checked"] is False
    assert "no first bad release is known" in lines[0] and "oldest tried is 2.9.0" in lines[0]
    assert "since 2.9.0" not in " ".join(lines)
