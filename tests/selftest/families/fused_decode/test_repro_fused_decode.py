"""repros/fused_decode_compare.py says what pytest says for the same case and fault (issue 29):
the same verdicts for compare mode and end to end, the same first divergent step, its census
(Where, the failed statistics) word for word, and the same known bugs (iree-cpu's documented
flush-to-zero on the subnormal class is XFAIL in both)."""
import pytest

from accel_regress.core import registry

from repro_vs_pytest import run_pytest, run_repro, statistics, where

SCRIPT = "fused_decode_compare.py"
CASE = "small-H64-NH4-KV2-D16-I128-T15"
COMPARE = f"tests/test_fused_decode.py::test_compare_mode[{CASE}-{{}}]"
END_TO_END = f"tests/test_fused_decode.py::test_end_to_end[{CASE}-normal]"


def test_a_fault_is_reported_as_pytest_reports_it(tmp_path):
    fault = "fused-rope-theta"
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--fault", fault)
    cases = run_pytest(tmp_path, "test_fused_decode.py", f"{CASE}-normal", "--hw", "emu", "--inject-fault", fault)
    compare, e2e = cases[COMPARE.format("normal")], cases[END_TO_END]
    assert (compare["verdict"], e2e["verdict"]) == ("FAIL", "FAIL")
    # the first divergent step, the step table and the census, statistics included: pytest's words
    assert compare["detail"]["first_divergent_step"] == "q_rope"
    assert where(compare["message"])[0] in where(out), out
    assert statistics(compare["message"]) and set(statistics(compare["message"])) <= set(statistics(out))
    assert compare["message"] in out, out
    assert e2e["message"] in out and where(e2e["message"])[0] in where(out)
    assert f"compare mode: FAIL  [{COMPARE.format('normal')}]" in out, out
    assert f"end to end: FAIL  [{END_TO_END}]" in out, out
    assert rc == 1


def test_a_clean_run_passes_in_both(tmp_path):
    rc, out = run_repro(SCRIPT, "--hw", "emu")
    cases = run_pytest(tmp_path, "test_fused_decode.py", f"{CASE}-normal", "--hw", "emu")
    assert {c["verdict"] for c in cases.values()} == {"PASS"}
    assert f"compare mode: PASS  [{COMPARE.format('normal')}]" in out and f"end to end: PASS  [{END_TO_END}]" in out
    assert rc == 0, out


@pytest.mark.skipif(registry.availability("iree-cpu") is not None, reason="iree-cpu unavailable")
def test_a_known_bug_is_xfail_in_both(tmp_path):
    rc, out = run_repro(SCRIPT, "--hw", "iree-cpu", "--inputs", "subnormal")
    cases = run_pytest(tmp_path, "test_fused_decode.py", f"{CASE}-subnormal", "--hw", "iree-cpu")
    assert cases[COMPARE.format("subnormal")]["verdict"] == "XFAIL"
    assert f"compare mode: XFAIL (known FAIL" in out and "flush-to-zero" in out, out
    assert rc == 0, out
