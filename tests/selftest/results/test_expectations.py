"""Known-bug expectations: XFAIL and strict XPASS, known hangs not attempted, stale entries,
--ignore-expectations, the update command's diff, and file errors that name the file."""
import json
import textwrap

import pytest

from accel_regress.results import expectations as X
from accel_regress.results import expectations_update as U

pytest_plugins = ["pytester"]

DEMO = textwrap.dedent('''
    import numpy as np
    import pytest
    from accel_regress.golden import assert_close
    from accel_regress import CompileError, Crash, Hang

    pytestmark = pytest.mark.family("gemm_partition_n")   # a family emu models (else the core SKIPs it)

    @pytest.mark.parametrize("n", [1, 2])
    def test_row0(hw, n):
        # seed 002's symptom: row 0, cols 1-15 garbage
        got, want = np.zeros((16, 256)), np.zeros((16, 256))
        got[0, 1:16] = 5.0 * n
        assert_close(got, want, atol=0.01, name="out")

    def test_fixed(hw):
        assert_close(np.ones(4), np.ones(4))

    def test_hangs(hw):
        raise Hang("no [dc] after [dn]")

    def test_crashes(hw):
        raise Crash("SIGSEGV during [RUN] runtime")

    def test_compile(hw):
        raise CompileError("block with no terminator")

    def test_wrong_kind(hw):
        raise Hang("a hang where a FAIL is listed")

    def test_fine(hw):
        pass
''')


def _entry(test, verdict, reason="r", issue="https://example.org/1", backend="emu"):
    return X.Entry(backend, test, verdict, reason, issue)


# Canonical text (as `expectations update` writes it), so the update diff shows only real changes.
EMU = X.render([
    _entry("test_demo.py::test_row0[*]", "FAIL", "row 0 garbage"),
    _entry("test_demo.py::test_fixed", "FAIL", "fixed upstream"),
    _entry("test_demo.py::test_hangs", "HANG", "wedges the device"),
    _entry("test_demo.py::test_crashes", "CRASH", "simulator segfault"),
    _entry("test_demo.py::test_compile", "COMPILE_ERROR", "remainder tiles"),
    _entry("test_demo.py::test_wrong_kind", "FAIL", "listed as FAIL"),
    _entry("test_demo.py::test_gone", "FAIL", "a renamed test"),
    _entry("test_demo.py::test_row0[{7,8}]", "FAIL", "parameters that no longer exist"),
], "# demo known bugs")
NPU = X.render([_entry("test_demo.py::test_other_backend", "FAIL", "not selected, never stale", backend="npu")])


@pytest.fixture
def demo(pytester):
    pytester.makepyfile(test_demo=DEMO)
    pytester.mkdir("expectations")
    (pytester.path / "expectations" / "emu.toml").write_text(EMU)
    (pytester.path / "expectations" / "npu.toml").write_text(NPU)
    return pytester


def _run(pytester, *args):
    return pytester.runpytest("--hw", "emu", "--isolation", "none", "-p", "no:randomly", *args)


def _results(pytester):
    return json.loads((pytester.path / "reports" / "results.json").read_text())


def _by_test(data):
    return {c["test"]: c for c in data["cases"]}


def test_xfail_xpass_known_hangs_and_stale(demo):
    res = _run(demo)
    res.assert_outcomes(passed=1, failed=2, skipped=2, xfailed=3)
    assert res.ret == pytest.ExitCode.TESTS_FAILED      # the XPASS is strict
    cases = _by_test(_results(demo))
    assert cases["test_row0[emu-1]"]["verdict"] == "XFAIL"
    row0 = cases["test_row0[emu-2]"]
    assert row0["verdict"] == "XFAIL" and row0["stage"] == "compare"
    assert row0["message"].startswith("known FAIL: row 0 garbage (https://example.org/1)")
    assert row0["census"][0]["regions"] == [{"rows": [0, 0], "cols": [1, 15], "count": 15}]
    assert row0["detail"]["expectation"]["test"] == "test_demo.py::test_row0[*]"
    assert cases["test_compile[emu]"]["verdict"] == "XFAIL"
    assert cases["test_compile[emu]"]["stage"] == "compile"
    fixed = cases["test_fixed[emu]"]
    assert fixed["verdict"] == "XPASS"
    assert "remove 'test_demo.py::test_fixed'" in fixed["message"] and "emu.toml" in fixed["message"]
    for name, verdict in (("test_hangs[emu]", "HANG"), ("test_crashes[emu]", "CRASH")):
        c = cases[name]
        assert c["verdict"] == "SKIP" and f"known {verdict} on emu, not attempted" in c["message"]
        assert c["runs"] == []                            # never attempted
    wrong = cases["test_wrong_kind[emu]"]
    assert wrong["verdict"] == "HANG" and wrong["message"].startswith("expected FAIL")
    assert cases["test_fine[emu]"]["verdict"] == "PASS"
    summary = json.loads((demo.path / "reports" / "expectations.json").read_text())
    assert sorted(e["test"] for e in summary["stale"]) == ["test_demo.py::test_gone", "test_demo.py::test_row0[{7,8}]"]
    res.stdout.fnmatch_lines([
        "*accel-regress expectations*",
        "known bugs: 3 XFAIL, 2 not attempted*, 1 XPASS",
        "XPASS, the bug looks fixed*test_fixed*",
        "stale entry (matches no collected test)*emu.toml: test = 'test_demo.py::test_gone'",
    ])
    assert "test_other_backend" not in res.stdout.str()   # npu was not selected: not stale


def test_run_known_hangs_attempts_them(demo):
    res = _run(demo, "--run-known-hangs")
    res.assert_outcomes(passed=1, failed=2, xfailed=5)
    cases = _by_test(_results(demo))
    assert cases["test_hangs[emu]"]["verdict"] == "XFAIL"
    assert cases["test_crashes[emu]"]["verdict"] == "XFAIL"
    assert cases["test_hangs[emu]"]["message"].startswith("known HANG: wedges the device")


def test_ignore_expectations_runs_everything_plainly(demo):
    res = _run(demo, "--ignore-expectations")
    res.assert_outcomes(passed=2, failed=6)
    cases = _by_test(_results(demo))
    assert {cases[n]["verdict"] for n in ("test_row0[emu-1]", "test_row0[emu-2]")} == {"FAIL"}
    assert cases["test_hangs[emu]"]["verdict"] == "HANG"
    assert all("expectation" not in c["detail"] for c in cases.values())


def test_stale_only_for_files_in_the_run(demo):
    demo.makepyfile(test_other="def test_x():\n    pass\n")
    res = _run(demo, "test_other.py")
    res.assert_outcomes(passed=1)
    assert "stale entry" not in res.stdout.str()      # test_demo.py was not part of this run


def test_deselected_cases_are_not_stale(demo):
    res = _run(demo, "-k", "not row0")
    assert "test_row0[*]" not in res.stdout.str().split("accel-regress expectations")[-1]


def _update(capsys, *args):
    code = U.main(["update", *args])
    return code, capsys.readouterr().out


def test_update_prints_the_minimal_sorted_diff_and_applies_it(demo, capsys):
    demo.makepyfile(test_demo=DEMO + "\n\ndef test_new_bug(hw):\n    assert 1 == 2, 'new wrong number'\n")
    _run(demo)
    capsys.readouterr()
    results = str(demo.path / "reports" / "results.json")
    exp_dir = str(demo.path / "expectations")
    code, out = _update(capsys, results, "--dir", exp_dir)
    assert code == 1                                     # there is a change to make
    diff = [ln for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    assert diff == [
        '-test = "test_demo.py::test_fixed"', '-verdict = "FAIL"', '-reason = "fixed upstream"',
        '-issue = "https://example.org/1"', "-", "-[[expect]]",
        "+", "+[[expect]]", '+test = "test_demo.py::test_new_bug"', '+verdict = "FAIL"',
        '+reason = "TODO: new wrong number"', '+issue = "TODO: link the upstream issue"',
        '-verdict = "FAIL"', '+verdict = "HANG"',
    ], out
    assert "# emu: 'test_demo.py::test_fixed' passed in every case it matches (1)" in out
    assert "# emu: 'test_demo.py::test_wrong_kind' is now HANG, was FAIL" in out
    assert "npu.toml" not in out                         # nothing ran on npu: untouched
    code, out = _update(capsys, results, "--dir", exp_dir, "--apply")
    assert code == 0 and "applied to 1 file(s)" in out
    text = (demo.path / "expectations" / "emu.toml").read_text()
    assert text.startswith("# demo known bugs\n") and "test_fixed" not in text and "test_new_bug" in text
    # The run now agrees with the files: known bugs XFAIL or not attempted, the fixed test passes.
    res = _run(demo)
    res.assert_outcomes(passed=2, skipped=3, xfailed=4)     # test_wrong_kind is now a known HANG
    capsys.readouterr()
    code, out = _update(capsys, results, "--dir", exp_dir)
    assert code == 0 and "already match" in out


def test_update_names_a_bad_results_file(tmp_path, capsys):
    bad = tmp_path / "results.json"
    bad.write_text("{not json")
    assert U.main(["update", str(bad), "--dir", str(tmp_path)]) == 2
    assert f"{bad}: not valid JSON" in capsys.readouterr().err


def test_update_splits_a_pattern_when_only_some_cases_are_fixed():
    exp = X.Expectations([X.Entry("npu", "t.py::test_p[*]", "FAIL", "stale DMA", "https://x/83")])
    data = {"cases": [{"nodeid": "t.py::test_p[npu-C1]", "backend": "npu", "verdict": "XFAIL"},
                      {"nodeid": "t.py::test_p[npu-C2]", "backend": "npu", "verdict": "XPASS"},
                      {"nodeid": "t.py::test_p[npu-C3]", "backend": "npu", "verdict": "SKIP"}]}
    proposed, notes = U.propose(exp, data)
    assert [(e.test, e.verdict, e.issue) for e in proposed["npu"]] == [
        ("t.py::test_p[C1]", "FAIL", "https://x/83"), ("t.py::test_p[C3]", "FAIL", "https://x/83")]
    assert "split into exact ids" in notes[0]


@pytest.mark.parametrize("pattern, key, hit", [
    ("t.py::test_p[*-P4-C{1,2,3}]", "t.py::test_p[M64-P4-C2]", True),
    ("t.py::test_p[*-P4-C{1,2,3}]", "t.py::test_p[M64-P4-C0]", False),
    ("t.py::test_p[*-P4-C{1,2,3}]", "t.py::test_p[M64-P4-C12]", False),     # anchored at the end
    ("t.py::test_{a,b}", "t.py::test_b", True),
    ("t.py::test_p[x]", "t.py::test_p[x]", True),                           # brackets are literal
    ("t.py::test_p[x]", "t.py::test_pp[x]", False),
    ("*[a.b]", "t.py::test_q[a.b]", True),
    ("*[a.b]", "t.py::test_q[axb]", False),                                 # '.' is literal
])
def test_patterns(pattern, key, hit):
    assert X.Entry("emu", pattern, "FAIL", "r", "i").matches(key) is hit


@pytest.mark.parametrize("text, words", [
    ("[[expect]]\ntest = 'x'\nverdict = 'FAILED'\nreason = 'r'\nissue = 'i'\n",
     "entry 1 (test = 'x'): verdict 'FAILED' is not one of FAIL, COMPILE_ERROR, HANG, CRASH"),
    ("[[expect]]\ntest = 'x'\nverdict = 'FAIL'\nreason = 'r'\n", "entry 1 (test = 'x'): 'issue' is missing or empty"),
    ("[[expect]]\ntest = 'x'\nverdict = 'FAIL'\nreason = 'r'\nissue = 'i'\nowner = 'me'\n",
     "entry 1 (test = 'x'): unknown key(s) owner"),
    ("[[expect]\n", "not valid TOML"),
    ("backend = 'npu'\n", "unknown top-level key(s) backend"),
    ("[[expect]]\ntest = 'x{'\nverdict = 'FAIL'\nreason = 'r'\nissue = 'i'\n", "bad test pattern: unclosed '{'"),
])
def test_bad_files_are_named_with_what_is_wrong(tmp_path, text, words):
    path = tmp_path / "emu.toml"
    path.write_text(text)
    with pytest.raises(X.ExpectationsError) as err:
        X.load_file(path, ["emu"])
    assert str(err.value).startswith(str(path)) and words in str(err.value)


def test_file_name_must_be_a_backend(tmp_path):
    (tmp_path / "npuu.toml").write_text("")
    with pytest.raises(X.ExpectationsError, match="npuu.toml: no backend 'npuu'"):
        X.load_dir(tmp_path)


def test_a_bad_file_stops_the_run_with_its_name(demo):
    (demo.path / "expectations" / "emu.toml").write_text("[[expect]]\ntest = 'x'\n")
    res = _run(demo)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*expectations: *emu.toml: entry 1 (test = 'x'): 'verdict' is missing or empty*"])


def test_render_is_sorted_and_reads_back():
    entries = [X.Entry("emu", "b", "HANG", 'quote " and \\ backslash', "i"), X.Entry("emu", "a", "FAIL", "r", "i")]
    text = X.render(entries, "# head")
    assert text.index('test = "a"') < text.index('test = "b"')
    import tomllib
    doc = tomllib.loads(text)
    assert doc["expect"][1]["reason"] == 'quote " and \\ backslash'


def test_under_xdist_the_controller_reports_the_same(demo, monkeypatch):
    from pathlib import Path
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[3]))
    res = demo.runpytest_subprocess("--hw", "emu", "--isolation", "none", "-p", "no:randomly", "-n", "2")
    res.assert_outcomes(passed=1, failed=2, skipped=2, xfailed=3)
    cases = _by_test(_results(demo))
    assert cases["test_fixed[emu]"]["verdict"] == "XPASS"
    assert cases["test_hangs[emu]"]["verdict"] == "SKIP" and "not attempted" in cases["test_hangs[emu]"]["message"]
    assert cases["test_row0[emu-1]"]["verdict"] == "XFAIL" and cases["test_row0[emu-1]"]["census"]
    summary = json.loads((demo.path / "reports" / "expectations.json").read_text())
    assert sorted(e["test"] for e in summary["stale"]) == ["test_demo.py::test_gone", "test_demo.py::test_row0[{7,8}]"]
    assert len(list((demo.path / "reports" / "heatmaps").glob("*.png"))) == 2   # arrays saved by the workers


def test_an_unavailable_backend_keeps_its_own_skip_reason(demo):
    (demo.path / "expectations" / "npu.toml").write_text(X.render([_entry("test_demo.py::test_hangs", "HANG", backend="npu")]))
    _run(demo, "--hw", "emu,npu")
    cases = _by_test(_results(demo))
    npu = cases["test_hangs[npu]"]
    assert npu["verdict"] == "SKIP" and npu["message"].startswith("backend npu unavailable")
    assert "expectation" not in npu["detail"]
    stale = json.loads((demo.path / "reports" / "expectations.json").read_text())["stale"]
    assert not [e for e in stale if e["backend"] == "npu"]          # it matched a test: not stale
