"""The plugin itself, through pytester: backend selection, skip reasons, verdicts, results.json."""
import json
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# The shared small GEMM test, without its docstring (tests/selftest/fixtures/small_gemm_case.py)
SMALL_CASE = (Path(__file__).parents[1] / "fixtures" / "small_gemm_case.py").read_text().split('"""', 2)[2].lstrip("\n")

SMALL_TEST = "\n" + SMALL_CASE + textwrap.dedent('''
    def test_not_a_case():
        assert True
''')


@pytest.fixture
def suite(pytester):
    pytester.makepyfile(test_small=SMALL_TEST)
    return pytester


def _results(pytester):
    return json.loads((pytester.path / "reports" / "results.json").read_text())


def _verdicts(data):
    return {c["test"]: c["verdict"] for c in data["cases"]}


def test_clean_run_writes_results_and_junit(suite):
    res = suite.runpytest("--hw", "emu")
    res.assert_outcomes(passed=5)
    data = _results(suite)
    assert data["schema"] == "accel-regress/results" and data["schema_version"] == 1
    # Every test is a result, a test on no backend too: the count is pytest's.
    assert _verdicts(data) == {**{f"test_partition[emu-C{i}]": "PASS" for i in range(4)}, "test_not_a_case": "PASS"}
    assert next(c for c in data["cases"] if c["test"] == "test_not_a_case")["backend"] is None
    case = data["cases"][0]
    assert case["family"] == "gemm_partition_n" and case["backend"] == "emu"
    run = case["runs"][0]
    assert run["case"]["params"]["partition_N"] == 4 and len(run["inputs_sha256"]) == 64
    assert case["versions"]["torch"]
    assert data["summary"] == {"gemm_partition_n": {"emu": {"PASS": 4}, "-": {"PASS": 1}}}
    assert (suite.path / "reports" / "junit.xml").is_file()
    assert (suite.path / "reports" / "results.jsonl").is_file()
    res.stdout.fnmatch_lines(["*accel-regress summary*", "gemm_partition_n*emu*4*"])


def test_builtin_fault_fails_only_the_stale_partitions(suite):
    res = suite.runpytest("--hw", "emu", "--inject-fault", "iron-gemm-stale-dma")
    res.assert_outcomes(passed=2, failed=3)
    data = _results(suite)
    v = _verdicts(data)
    assert v["test_partition[emu-C0]"] == "PASS"
    assert all(v[f"test_partition[emu-C{i}]"] == "FAIL" for i in (1, 2, 3))
    failed = [c for c in data["cases"] if c["verdict"] == "FAIL"]
    assert all(c["stage"] == "compare" and c["census"][0]["over_tolerance"] > 0 for c in failed)
    assert data["session"]["fault"] == "iron-gemm-stale-dma"
    res.stdout.fnmatch_lines(["*C_1 is not close to the reference!*", "*Pearson correlation*"])


@pytest.mark.parametrize("exc, verdict, stage", [
    ("Hang('no [dc] after 30 s')", "HANG", "run"),
    ("Crash('SIGSEGV in runtime')", "CRASH", "run"),
    ("CompileError('remainder tiles', detail={'diagnostic': 'Assertion failed'})", "COMPILE_ERROR", "compile"),
])
def test_fault_file_verdicts(suite, exc, verdict, stage):
    suite.makepyfile(myfault=f"from accel_regress import Hang, Crash, CompileError\n"
                             f"def fault(case, outputs):\n    raise {exc}\n")
    res = suite.runpytest("--hw", "emu", "--inject-fault", "myfault.py:fault")
    res.assert_outcomes(passed=1, failed=4)
    data = _results(suite)
    cases = [c for c in data["cases"] if c["test"].startswith("test_partition")]
    assert {(c["verdict"], c["stage"]) for c in cases} == {(verdict, stage)}
    res.stdout.fnmatch_lines([f"*{verdict} at stage {stage}*"])
    assert "Traceback" not in res.stdout.str()


def test_unavailable_backend_is_a_skip_with_the_reason(suite):
    res = suite.runpytest("--hw", "emu,npu")
    res.assert_outcomes(passed=5, skipped=4)
    data = _results(suite)
    skipped = [c for c in data["cases"] if c["verdict"] == "SKIP"]
    assert len(skipped) == 4 and all(c["backend"] == "npu" for c in skipped)
    assert all("backend npu unavailable" in c["message"] for c in skipped)
    assert data["backends"]["npu"]["available"] is False and data["backends"]["npu"]["reason"]
    res.stdout.fnmatch_lines(["*not run on npu:*"])


def test_hw_from_environment(suite, monkeypatch):
    monkeypatch.setenv("ACCEL_HW", "emu")
    res = suite.runpytest("--collect-only", "-q")
    res.stdout.fnmatch_lines(["*test_partition[[]emu-C0]*"])


def test_unknown_backend_is_a_usage_error(suite):
    res = suite.runpytest("--hw", "nosuch")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*unknown backend(s) nosuch*"])


def test_unknown_fault_is_a_usage_error(suite):
    res = suite.runpytest("--hw", "emu", "--inject-fault", "no-such-fault")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*not a FILE.py:NAME and not a built-in fault*"])


def test_unsupported_operator_is_a_skip_with_the_reason(pytester):
    pytester.makepyfile(test_op='''
        import numpy as np
        from accel_regress.golden.case import Case
        def test_new_op(hw):
            hw.run(Case.make("no_such_op", "x", {}), {"a": np.zeros(1)})["out"]
    ''')
    res = pytester.runpytest("--hw", "emu")
    res.assert_outcomes(skipped=1)
    data = _results(pytester)
    assert "no emu model for operator 'no_such_op' (register one in accel_regress.emu_models)" in data["cases"][0]["message"]


def test_golden_seed_changes_the_inputs(suite):
    suite.runpytest("--hw", "emu")
    a = _results(suite)["cases"][0]["runs"][0]["inputs_sha256"]
    suite.runpytest("--hw", "emu", "--golden-seed", "7")
    b = _results(suite)["cases"][0]["runs"][0]["inputs_sha256"]
    assert a != b
