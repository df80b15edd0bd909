"""What the plugin prints and does, scoped to its own items (issue 24 items 3 and 7, issue 30 items 2-3):
``-q`` is one line of summary and ``-qq`` none; the rerun line works from the directory the run
was started in; a ``-m`` error quotes what the user wrote; the opt-in cases are generated only
when ``-m`` names them; a project's own ``hw`` fixture and ``large`` tests are its own; hypothesis
stays out of a run that uses none of it; a run probes only its backends, iree-amd-aie with one
start of iree-compile.

The whole picture for projects that never use the plugin (the installed wheel, four unrelated
projects) is tests/selftest/package/test_guest_projects.py."""
import json
import shlex
import shutil
import stat
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# The shared small GEMM test, without its docstring (tests/selftest/fixtures/small_gemm_case.py)
SMALL_CASE = (Path(__file__).parents[1] / "fixtures" / "small_gemm_case.py").read_text().split('"""', 2)[2].lstrip("\n")

SMALL = "\n" + SMALL_CASE

OPT_IN = '''
import pytest

pytestmark = pytest.mark.family("gemm_partition_n")

@pytest.mark.parametrize("n", [1, 2, pytest.param(3, marks=pytest.mark.large),
                               pytest.param(4, marks=pytest.mark.input_classes),
                               pytest.param(5, marks=[pytest.mark.large, pytest.mark.input_classes])])
def test_case(hw, n):
    pass

@pytest.mark.large
def test_big(hw):
    pass
'''

EMU = ("--hw", "emu", "--isolation", "none")
FAULT = (*EMU, "--inject-fault", "iron-gemm-stale-dma")


@pytest.fixture
def suite(pytester):
    pytester.makeconftest("pass")
    pytester.makepyfile(test_small=SMALL)
    return pytester


def test_quiet_prints_one_line_of_summary_and_very_quiet_none(suite):
    res = suite.runpytest(*EMU, "-q", "-k", "C0")
    ours = [line for line in res.outlines if "accel-regress" in line or "SHIP" in line]
    assert len(ours) == 1 and ours[0].startswith("accel-regress: SHIP: 1 PASS; "), res.outlines
    res = suite.runpytest(*FAULT, "-qq", "-k", "C1")
    assert res.ret == pytest.ExitCode.TESTS_FAILED
    assert not [line for line in res.outlines if "accel-regress" in line or "SHIP" in line or "report" in line], \
        res.outlines
    res = suite.runpytest(*EMU, "-k", "C0")       # the default verbosity keeps the whole summary
    res.stdout.fnmatch_lines(["*accel-regress summary*", "SHIP", "*reports: reports/results.json*"])


def test_rerun_line_works_from_the_directory_the_run_started_in(suite, monkeypatch):
    sub = suite.path / "elsewhere"
    sub.mkdir()
    monkeypatch.chdir(sub)
    res = suite.runpytest(*FAULT, "-k", "C1", str(suite.path / "test_small.py"))
    want = ("python -m pytest '../test_small.py::test_partition[emu-C1]' --hw emu --inject-fault iron-gemm-stale-dma "
            "--isolation none")
    res.stdout.fnmatch_lines(["*- rerun this case -*", want])
    data = json.loads((sub / "reports" / "results.json").read_text())
    assert [c["rerun"] for c in data["cases"] if c["verdict"] == "FAIL"] == [want]
    assert f"rerun: {want}" in res.stdout.str()     # the summary's problem list says the same
    again = suite.runpytest(*shlex.split(want)[3:])
    again.assert_outcomes(failed=1)


def test_mark_expression_error_quotes_what_the_user_wrote(suite):
    res = suite.runpytest(*EMU, "-m", "fast and")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    text = "\n".join(res.errlines + res.outlines)
    assert "fast and" in text and "input_classes" not in text and "not large" not in text, text


def test_opt_in_cases_are_generated_only_when_named(pytester):
    pytester.makeconftest("pass")
    pytester.makepyfile(test_opt_in=OPT_IN)
    res = pytester.runpytest(*EMU, "--co", "-q")
    res.stdout.fnmatch_lines(["test_opt_in.py::test_case[emu-1]", "test_opt_in.py::test_case[emu-2]",
                              "2/3 tests collected (1 deselected)*"])     # only test_big, marked itself
    res = pytester.runpytest(*EMU, "--co", "-q", "-m", "large")
    res.stdout.fnmatch_lines(["test_opt_in.py::test_case[emu-3]", "test_opt_in.py::test_big[emu]", "2/4 tests collected (2 deselected)*"])
    res = pytester.runpytest(*EMU, "--co", "-q", "-m", "large or input_classes or not large")
    res.stdout.fnmatch_lines(["6 tests collected*"])


def test_a_projects_own_hw_and_large_are_its_own(pytester):
    pytester.makeconftest('''
import pytest

@pytest.fixture(params=["cpu", "gpu"])
def hw(request):
    return request.param
''')
    pytester.makepyfile(test_theirs='''
import pytest

def test_own(hw):
    assert hw in ("cpu", "gpu")

@pytest.mark.large
def test_large():
    pass
''')
    res = pytester.runpytest("-v", "-p", "no:cacheprovider")
    res.stdout.fnmatch_lines(["*test_own[[]cpu] PASSED*", "*test_own[[]gpu] PASSED*", "*test_large PASSED*"])
    res.assert_outcomes(passed=3)
    assert not [line for line in res.outlines if line.startswith("accel-regress") or "SHIP" in line], res.outlines
    assert not (pytester.path / "reports").exists()


HYPOTHESIS_SEEN = '''
import sys

def pytest_unconfigure(config):
    with open("hypothesis_seen.txt", "w") as f:
        f.write(str("hypothesis" in sys.modules))
'''


def test_a_run_without_property_tests_never_imports_hypothesis(suite):
    suite.makeconftest(HYPOTHESIS_SEEN)
    res = suite.runpytest_subprocess(*EMU, "-p", "no:cacheprovider", "-k", "C0")
    res.assert_outcomes(passed=1)
    assert (suite.path / "hypothesis_seen.txt").read_text() == "False"


def test_a_run_probes_only_its_backends(suite):
    suite.runpytest(*EMU, "-k", "C0").assert_outcomes(passed=1)
    backends = json.loads((suite.path / "reports" / "results.json").read_text())["backends"]
    assert backends["emu"]["available"] is True
    assert {n: b["available"] for n, b in backends.items() if n != "emu"} == dict.fromkeys(set(backends) - {"emu"})


def _logging_tool(path: Path, real: str, log: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_iree_amd_aie_asks_iree_compile_once(tmp_path, monkeypatch):
    """The PyPI compiler (no amd-aie target) is what a machine without the plugin has: one start of it says so."""
    real = shutil.which("iree-compile")
    if real is None:
        pytest.skip("no iree-compile (pip install iree-base-compiler: scripts/setup.sh does)")
    from accel_regress.backends.iree_amd_aie import IreeAmdAieBackend, toolchain
    (tmp_path / "bin").mkdir()
    log = tmp_path / "calls.txt"
    _logging_tool(tmp_path / "bin" / "iree-compile", real, log)
    _logging_tool(tmp_path / "bin" / "iree-run-module", shutil.which("iree-run-module") or "/bin/false", log)
    monkeypatch.setenv("ACCEL_IREE_AMD_AIE_INSTALL", str(tmp_path))
    toolchain.compiler_help.cache_clear()
    try:
        reason = IreeAmdAieBackend().availability()
    finally:
        toolchain.compiler_help.cache_clear()
    assert reason is not None and "no 'amd-aie' target backend" in reason
    assert len(log.read_text().splitlines()) == 1, log.read_text()
