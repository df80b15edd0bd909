"""Standard pytest behaviour with the plugin: cache (--lf), -m and large cases, --collect-only,
--tb styles, -x / --maxfail, ini options, the rerun line, usage errors, JUnit JSON, file modes."""
import json
import os
import shlex
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import accel_regress

pytest_plugins = ["pytester"]

# The shared small GEMM test, without its docstring (tests/selftest/fixtures/small_gemm_case.py)
SMALL_CASE = (Path(__file__).parents[1] / "fixtures" / "small_gemm_case.py").read_text().split('"""', 2)[2].lstrip("\n")

REPO = Path(accel_regress.__file__).resolve().parents[1]

SMALL = "\n" + SMALL_CASE + '''
@pytest.mark.large
def test_big(hw):
    pass
'''
ASSERT_LINE = 18   # the assert_close line of SMALL


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_small=SMALL)
    return pytester


def _results(pytester):
    return json.loads((pytester.path / "reports" / "results.json").read_text())


FAULT = ("--hw", "emu", "--isolation", "none", "--inject-fault", "iron-gemm-stale-dma")


def test_repository_keeps_the_cache_provider_on():
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "no:cacheprovider" not in addopts


def test_last_failed_reruns_only_the_failures(suite):
    suite.runpytest(*FAULT).assert_outcomes(passed=1, failed=3)
    res = suite.runpytest("--hw", "emu", "--isolation", "none", "--lf")
    res.assert_outcomes(passed=3)
    assert sorted(c["test"] for c in _results(suite)["cases"]) == [f"test_partition[emu-C{i}]" for i in (1, 2, 3)]


def test_mark_expression_keeps_large_out_unless_it_names_it(suite):
    res = suite.runpytest("--hw", "emu", "--collect-only", "-m", "not selftest")
    assert "test_big" not in res.stdout.str() and "test_partition[emu-C0]" in res.stdout.str()
    res.stdout.fnmatch_lines(["*large cases excluded (-m 'not selftest' does not name 'large')*"])
    res = suite.runpytest("--hw", "emu", "--collect-only", "-q", "-m", "large")
    assert "test_big[emu]" in res.stdout.str() and "test_partition" not in res.stdout.str()


def test_collect_only_leaves_the_last_reports_untouched(suite):
    suite.runpytest(*FAULT)
    reports = suite.path / "reports"
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.rglob("*") if p.is_file()}
    assert reports / "results.json" in before and reports / "junit.xml" in before
    res = suite.runpytest("--hw", "emu", "--collect-only")
    assert res.ret == 0
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("style, line", [
    ("short", f"test_small.py:{ASSERT_LINE}: in test_partition"),
    ("line", f"*test_small.py:{ASSERT_LINE}: accel_regress.golden.compare.Mismatch: C_1 is not close*"),
    ("long", f"test_small.py:{ASSERT_LINE}: Mismatch"),
])
def test_tb_styles_show_the_failing_line(suite, style, line):
    res = suite.runpytest(*FAULT, "-k", "C1", f"--tb={style}")
    res.stdout.fnmatch_lines([line])


def test_exitfirst_marks_results_incomplete(suite):
    res = suite.runpytest(*FAULT, "-x")
    res.assert_outcomes(passed=1, failed=1)
    session = _results(suite)["session"]
    assert session["complete"] is False and "-x / --maxfail" in session["stop_reason"]
    res.stdout.fnmatch_lines(["results.json is incomplete: stopping after 1 failures*"])
    suite.runpytest("--hw", "emu", "--isolation", "none")
    assert _results(suite)["session"]["complete"] is True


def test_every_option_from_the_ini_file_command_line_wins(suite):
    suite.makeini("[pytest]\naccel_hw = emu\naccel_golden_seed = 7\naccel_isolation = none\n"
                  "accel_ignore_expectations = true\n")
    suite.makepyfile(test_opts='''
        def test_opts(request):
            c = request.config
            from accel_regress.plugin import selection
            print("OPTS", selection.selected(c), c.getoption("accel_golden_seed"), c.getoption("accel_isolation"),
                  c.getoption("accel_ignore_expectations"))
    ''')
    res = suite.runpytest("-s", "test_opts.py")
    res.stdout.fnmatch_lines(["*OPTS ?'emu'? 7 none True"])
    res = suite.runpytest("-s", "test_opts.py", "--golden-seed", "3")
    res.stdout.fnmatch_lines(["*OPTS ?'emu'? 3 none True"])
    suite.makeini("[pytest]\naccel_case_timeout = -5\n")
    res = suite.runpytest("test_opts.py")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*accel_case_timeout (ini file*not a positive number of seconds*"])


def test_every_failure_ends_with_its_rerun_line(suite):
    args = (*FAULT, "--golden-seed", "5", "--case-timeout", "30", "-k", "C1")
    res = suite.runpytest(*args)
    # The session's options that shape a case, --isolation among them (the same line as the summary's)
    want = ("python -m pytest 'test_small.py::test_partition[emu-C1]' --hw emu --golden-seed 5 "
            "--inject-fault iron-gemm-stale-dma --case-timeout 30 --isolation none")
    res.stdout.fnmatch_lines(["*- rerun this case -*", want])
    case = next(c for c in _results(suite)["cases"] if c["verdict"] == "FAIL")
    assert case["rerun"] == want
    again = suite.runpytest(*shlex.split(want)[3:])
    again.assert_outcomes(failed=1)


def test_junit_property_is_json(suite):
    suite.runpytest("--hw", "emu", "--isolation", "none", "-k", "C0")
    root = ET.parse(suite.path / "reports" / "junit.xml").getroot()
    value = next(p.get("value") for p in root.iter("property") if p.get("name") == "accel_regress")
    assert json.loads(value)["verdict"] == "PASS"


@pytest.mark.parametrize("args, words", [
    (("--case-timeout", "-1"), "--case-timeout: '-1' is not a positive number of seconds"),
    (("--case-timeout", "nan"), "--case-timeout: 'nan' is not a positive number of seconds"),
    (("--session-timeout", "-1"), "--session-timeout: -1.0 is not a number of seconds >= 0"),
    (("--hw=",), "--hw: empty; name one or more backends"),
])
def test_bad_option_values_are_usage_errors(suite, args, words):
    res = suite.runpytest(*args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{words}*"])


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_reports_get_the_umask_permissions(suite, umask, mode):
    old = os.umask(umask)
    try:
        suite.runpytest(*FAULT, "-k", "C1")
    finally:
        os.umask(old)
    reports = suite.path / "reports"
    files = [reports / n for n in ("results.json", "results.jsonl", "junit.xml", "summary.md", "index.html")]
    files += list((reports / "arrays").glob("*.npy"))
    assert len(files) > 5
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {p.name: oct(mode) for p in files}


def test_deselection_comes_before_the_per_item_hooks(suite):
    """-m (and -k) deselect first, so hooks that walk every item (pytest's fixture reordering, the
    NOT_APPLICABLE marking, a conftest's) see only the items that run; the counts are pytest's."""
    suite.makeconftest('''
        SEEN = []

        def pytest_collection_modifyitems(items):
            SEEN.append(len(items))

        def pytest_collection_finish(session):
            print(f"modifyitems saw {SEEN}")
    ''')
    res = suite.runpytest("--hw", "emu", "--isolation", "none", "-s")
    res.assert_outcomes(passed=4, deselected=1)
    res.stdout.fnmatch_lines(["*modifyitems saw [[]4[]]*"])
    res = suite.runpytest("--hw", "emu", "--isolation", "none", "-s", "-k", "C1")
    res.assert_outcomes(passed=1, deselected=4)
    res.stdout.fnmatch_lines(["*modifyitems saw [[]1[]]*"])


def test_objects_alive_after_collection_are_frozen(suite):
    """gc.freeze after collection: pytest's five gc.collect() at the end skip torch's object graph."""
    suite.makepyfile(test_frozen='''
        import gc

        def test_frozen():
            assert gc.get_freeze_count() > 10000
    ''')
    res = suite.runpytest_subprocess("--hw", "emu", "--isolation", "none", "test_frozen.py", timeout=300)
    res.assert_outcomes(passed=1)
