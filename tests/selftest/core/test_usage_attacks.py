"""Issue 26 items 14 and 16: values the command line and the environment accept. Each bad one is a
usage error naming the reason (exit 4 in pytest, 2 in the commands), never a traceback, an
INTERNALERROR, a silent default or a run charged to the device."""
import contextlib
import io
import json
import subprocess
import sys

import pytest

from accel_regress.results import merge, record as results
from accel_regress.core import registry
from test_isolation import REPO

pytest_plugins = ["pytester"]

TEST = "import pytest\n\n@pytest.mark.family('gemm_partition_n')\ndef test_x(hw):\n    pass\n"


def _pytest(pytester, *args):
    pytester.makepyfile(test_one=TEST)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "accel_regress.plugin", "-p", "no:accel-regress",
                           "-p", "no:cacheprovider", "--isolation", "none", *args],
                          cwd=pytester.path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})


@pytest.mark.parametrize("args, words", [
    (["--case-timeout", "1e300"], "--case-timeout"),
    (["--case-timeout", "nan"], "--case-timeout"),
    (["--session-timeout", "1e300"], "--session-timeout"),
    (["--worker-memory", "1K"], "--worker-memory"),
    (["--report-dir="], "--report-dir"),
    (["--inject-fault", "exits.py:fault"], "SystemExit"),
    (["--report-dir", "ro/reports"], "cannot write there"),
])
def test_bad_values_are_usage_errors(pytester, args, words):
    pytester.makepyfile(exits="import sys\nsys.exit(3)\ndef fault(case, outputs):\n    return outputs\n")
    ro = pytester.path / "ro"
    ro.mkdir()
    (ro / "reports").write_text("a file where the report folder should be")
    proc = _pytest(pytester, "--hw", "emu", *args)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-2000:]
    assert words in out and "Traceback" not in out and "INTERNALERROR" not in out, out[-2000:]


def test_a_backend_named_twice_runs_once():
    assert registry.parse("emu,emu") == ["emu"]


@pytest.mark.parametrize("value", ["-1", "nan", "1e300", "0"])
def test_sweep_case_timeout_is_checked(value):
    from accel_regress.families.matmul import sweep
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        sweep.main(["--case-timeout", value, "--shape", "8x8x8"])
    assert exc.value.code == 2 and "positive number of seconds" in err.getvalue(), err.getvalue()


def _one(tmp_path, name="a.json"):
    case = {"nodeid": "t.py::test_x[emu]", "test": "test_x[emu]", "backend": "emu", "verdict": "PASS"}
    path = tmp_path / name
    path.write_text(json.dumps(results.build({"host": "h", "hw": ["emu"]}, {}, [case])))
    return path


@pytest.mark.parametrize("where", ["input", "folder", "under-a-file"])
def test_merge_output_that_cannot_be_the_merged_file(tmp_path, capsys, where):
    a, b = _one(tmp_path, "a.json"), _one(tmp_path, "b.json")
    before = a.read_text()
    out = {"input": a, "folder": tmp_path, "under-a-file": a / "merged.json"}[where]
    assert merge.main([f"A={a}", f"B={b}", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"-o {out}" in err and "Traceback" not in err, err
    assert a.read_text() == before


def test_a_repro_of_a_systematic_hang_is_bounded_and_says_what_it_waits_for():
    """Item 17: --case-timeout for the repros, and a line before each run (a hang is never silent)."""
    start = __import__("time").monotonic()
    proc = subprocess.run([sys.executable, str(REPO / "repros" / "f32_reduction_hang.py"), "--hw", "emu",
                           "--fault", "saturn-f32-reduction-hang", "--variants", "v", "--case-timeout", "1"],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    took = __import__("time").monotonic() - start
    assert "running (bound 1 s" in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "HANG" in proc.stdout, proc.stdout[-2000:]
    assert took < 120, f"{took:.0f} s"


@pytest.mark.parametrize("value", ["abc", "1e3", "-1", "0"])
def test_golden_cache_bound_from_the_environment_is_checked(pytester, monkeypatch, value):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_BYTES", value)
    proc = _pytest(pytester, "--hw", "emu")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and "ACCEL_GOLDEN_CACHE_BYTES" in out and "Traceback" not in out, out[-2000:]
