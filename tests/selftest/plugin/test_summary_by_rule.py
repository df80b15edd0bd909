"""The summary reads at a glance (issue 37 item 4): pytest's own SKIPPED lines are not repeated for
the suite's items; SKIP and NOT_APPLICABLE are one line per rule, not per message text; every
XFAIL is listed with its expectation and rerun line; no "-" backend row; the policy in words; the
gate's "known HANG/CRASH not attempted" counts only those, its SKIP count the rest.

Checked failing on e6e33d9: pytest printed one SKIPPED line per source line and message, the
budget rule was one row per number, no XFAIL was listed, "-" was a backend row, and a budget SKIP
of a case with a known-FAIL entry counted as a known HANG/CRASH not attempted."""

from accel_regress.core import verdicts
from accel_regress.results import gate, record, summary

pytest_plugins = ["pytester"]

BUDGET = "qemu-rvv is a simulator: {} multiply-adds exceed 2.5e+06, outside its default-run budget; run with -m large to include it"
HANG = {"backend": "qemu-rvv", "test": "t", "verdict": "HANG", "reason": "Saturn hang", "issue": "seed 004", "file": "expectations/qemu-rvv.toml"}
FAIL = dict(HANG, verdict="FAIL", reason="stale DMA")


def _case(nodeid, verdict, message="", backend="qemu-rvv", family="gemm", **detail):
    return {"nodeid": nodeid, "test": nodeid, "backend": backend, "family": family, "verdict": verdict,
            "message": message, "detail": detail, "runs": [], "versions": {}}


def _data():
    cases = [_case(f"t.py::test[qemu-rvv-{n}]", verdicts.SKIP, BUDGET.format(f"{n}e+07")) for n in range(1, 14)]
    cases.append(_case("t.py::test[qemu-rvv-big]", verdicts.SKIP, BUDGET.format("9e+09"), expectation=FAIL))
    cases += [_case(f"t.py::hang[qemu-rvv-{n}]", verdicts.SKIP, "known HANG on qemu-rvv, not attempted", expectation=HANG)
              for n in range(2)]
    cases += [_case(f"t.py::na[qemu-rvv-{n}]", verdicts.NOT_APPLICABLE, f"qemu-rvv: no bfp16 for tile {n}x{n}")
              for n in (16, 32, 64)]
    cases.append(_case("t.py::x[emu]", verdicts.XFAIL, "known FAIL", backend="emu", expectation=FAIL,
                       ) | {"rerun": "python -m pytest 't.py::x[emu]' --hw emu"})
    cases.append(_case("t.py::lint", verdicts.PASS, backend=None))
    return record.build({"argv": [], "hw": ["qemu-rvv", "emu"]}, {}, cases)


def test_skips_and_not_applicable_are_one_line_per_rule():
    data = _data()
    lines = summary.section(data, gate.evaluate(data))
    budget = [line for line in lines if "-m large" in line and not line.startswith("  - ")]
    assert budget == ["     14 cases need `-m large` (outside a simulator's default-run budget), on qemu-rvv"], lines
    na = [line for line in lines if line.startswith("not applicable")]
    assert na == ["not applicable (3 cases; gemm on qemu-rvv): qemu-rvv: no bfp16 for tile NxN"], lines
    assert [line for line in lines if "known HANG/CRASH not attempted" in line] == [
        "      2 x known HANG/CRASH not attempted (--run-known-hangs to try)"], lines


def test_every_xfail_with_its_expectation_and_rerun_line():
    data = _data()
    lines = summary.section(data, gate.evaluate(data))
    i = lines.index("1 XFAIL (known bugs; the expectations files say which):")
    assert lines[i + 1].split() [:2] == ["XFAIL", "t.py::x[emu]"] and "known FAIL: stale DMA (seed 004" in lines[i + 1]
    assert lines[i + 2].strip() == "rerun: python -m pytest 't.py::x[emu]' --hw emu"


def test_no_dash_backend_row_and_the_policy_in_words():
    data = _data()
    lines = summary.section(data, gate.evaluate(data))
    rows = [line.split() for line in lines if line.startswith("gemm ")]
    assert all(r[1] != "-" for r in rows) and any("no backend (host-side check)" in line for line in lines), lines
    assert "  policy: every backend the session asked for must run (the default); the gate says the same: " \
           "python -m accel_regress gate <results.json>" in lines, lines
    assert not any("gate under" in line for line in lines)


def test_the_gate_counts_known_hangs_not_attempted_and_skips_apart():
    verdict = gate.evaluate(_data())
    notes = verdict.notes
    assert "known bugs: 1 XFAIL, 2 known HANG/CRASH not attempted" in notes, notes
    skip = [n for n in notes if "SKIP" in n and n[0].isdigit()]
    assert skip and skip[0].startswith("14 SKIP (besides 2 known HANG/CRASH not attempted): 14 x need `-m large`"), notes


SUITE = '''
import pytest
pytestmark = pytest.mark.family("gemm_partition_n")

@pytest.mark.parametrize("n", range(6))
def test_budget(hw, n):
    pytest.skip(f"{hw.name} is a simulator: {n}e+07 multiply-adds exceed 2.5e+06, outside its default-run budget; "
                "run with -m large to include it")
'''


def test_pytest_does_not_repeat_the_suites_skips_but_keeps_a_projects_own(pytester):
    pytester.makepyfile(test_suite=SUITE, test_theirs="import pytest\ndef test_t():\n    pytest.skip('theirs')\n")
    res = pytester.runpytest("--hw", "emu", "--isolation", "none", "--history", "none", "-ra", "-p", "no:cacheprovider")
    res.assert_outcomes(skipped=7)
    out = res.stdout.str()
    skipped = [line for line in res.outlines if line.startswith("SKIPPED")]
    assert len(skipped) == 1 and "theirs" in skipped[0], out
    res.stdout.fnmatch_lines(["*6 cases need `-m large`*"])
