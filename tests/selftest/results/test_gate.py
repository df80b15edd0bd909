"""The release gate: exit code and wording against a baseline with one new failure, one fixed bug
and one missing backend; slowdowns; policies; bad inputs named."""
import json

import pytest

from accel_regress.results import gate, record as results
from accel_regress.util import schemas


def _case(test, backend, verdict, duration=0.1, message="", expectation=None, markers=(), family="gemm_partition_n"):
    detail = {"markers": list(markers)}
    if expectation:
        detail["expectation"] = expectation
    return {"nodeid": f"tests/test_gemm_partition_n.py::{test}[{backend}-P4]", "test": f"{test}[{backend}-P4]",
            "backend": backend, "family": family, "verdict": verdict, "stage": "compare", "message": message,
            "duration_s": duration, "runs": [], "census": [], "detail": detail, "versions": {}}


def _data(cases, hw=("emu", "npu"), unavailable=()):
    backends = {n: {"selected": True, "available": n not in unavailable,
                    "reason": f"{n} is not installed here" if n in unavailable else None, "kind": "x"}
                for n in hw}
    return results.build({"hw": list(hw), "interrupted": False}, backends, cases)


ENTRY = {"backend": "npu", "test": "tests/test_gemm_partition_n.py::test_partition[*-P4]", "verdict": "FAIL",
         "reason": "stale DMA descriptors", "issue": "https://github.com/amd/IRON/issues/83",
         "file": "expectations/npu.toml"}

BASELINE = _data([
    _case("test_forward", "emu", "PASS"),
    _case("test_partition", "emu", "PASS", duration=1.0),
    _case("test_forward", "npu", "PASS"),
    _case("test_partition", "npu", "XFAIL", expectation=ENTRY),
])


def _write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_new_failure_fixed_bug_and_missing_backend(tmp_path, capsys):
    now = _data([
        _case("test_forward", "emu", "FAIL", message="forward() output is not close to the reference!"),
        _case("test_partition", "emu", "PASS", duration=1.1),
        _case("test_forward", "npu", "PASS"),
        _case("test_partition", "npu", "XPASS", expectation=ENTRY),
        _case("test_forward", "a2a3", "SKIP", message="backend a2a3 unavailable: PYPTO_LIB_ROOT is not set"),
    ], hw=("emu", "npu", "a2a3"), unavailable=("a2a3",))
    code = gate.main([_write(tmp_path, "now.json", now), "--baseline", _write(tmp_path, "old.json", BASELINE)])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "DON'T SHIP: 3 reasons"
    assert lines[1] == ("  - 1 new failure(s), passed in the baseline: "
                        "FAIL tests/test_gemm_partition_n.py::test_forward[P4] on emu")
    assert lines[2] == ("  - 1 XPASS, known bug(s) fixed: un-list them: tests/test_gemm_partition_n.py::test_partition[P4] "
                        "on npu (remove 'tests/test_gemm_partition_n.py::test_partition[*-P4]' from expectations/npu.toml)")
    assert lines[3] == ("  - backend a2a3 is required by default policy (every backend the session asked for must run) "
                        "but did not run: a2a3 is not installed here")
    assert "  . 1 SKIP: 1 x backend a2a3 unavailable: PYPTO_LIB_ROOT is not set" in lines
    assert len(lines) <= 8          # a few lines, not a log


def test_clean_run_ships(tmp_path, capsys):
    code = gate.main([_write(tmp_path, "now.json", BASELINE), "--baseline", _write(tmp_path, "old.json", BASELINE)])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("SHIP\n")
    assert "known bugs: 1 XFAIL, 0 known HANG/CRASH not attempted" in out


def test_new_hang_and_crash_are_named_first():
    now = _data([_case("test_forward", "emu", "HANG", message="no completion in 30 s"),
                 _case("test_partition", "emu", "CRASH"), _case("test_forward", "npu", "PASS"),
                 _case("test_partition", "npu", "XFAIL", expectation=ENTRY)])
    v = gate.evaluate(now, BASELINE)
    assert not v.ship
    assert v.reasons[0].startswith("2 new hang/crash: HANG tests/test_gemm_partition_n.py::test_forward[P4] on emu; "
                                   "CRASH tests/test_gemm_partition_n.py::test_partition[P4] on emu")


def test_failure_without_baseline_and_known_hangs_not_attempted():
    known_hang = dict(ENTRY, verdict="HANG")
    now = _data([_case("test_forward", "emu", "FAIL"), _case("test_partition", "emu", "PASS"),
                 _case("test_forward", "npu", "PASS"),
                 _case("test_partition", "npu", "SKIP", expectation=known_hang, message="known HANG on npu, not attempted")])
    v = gate.evaluate(now)
    assert v.reasons == ["1 failure(s) not in the known-bug list: FAIL tests/test_gemm_partition_n.py::test_forward[P4] on emu"]
    assert "known bugs: 0 XFAIL, 1 known HANG/CRASH not attempted" in v.notes
    assert not any("SKIP:" in n for n in v.notes)      # an expected skip is counted as a known bug


def test_slowdown_blocks_by_policy(tmp_path):
    now = _data([_case("test_forward", "emu", "PASS"), _case("test_partition", "emu", "PASS", duration=5.0),
                 _case("test_forward", "npu", "PASS"), _case("test_partition", "npu", "XFAIL", expectation=ENTRY)])
    v = gate.evaluate(now, BASELINE)
    assert not v.ship and v.reasons == [
        "1 case(s) more than 2x slower than the baseline: tests/test_gemm_partition_n.py::test_partition[P4] on emu "
        "1.00 s -> 5.00 s (5.0x)"]
    policy = tmp_path / "p.toml"
    policy.write_text("[slowdown]\nfactor = 10.0\n")
    assert gate.evaluate(now, BASELINE, gate.load_policy(policy)).ship
    policy.write_text("[slowdown]\nblocks = false\n[required]\nbackends = ['emu']\n")
    v = gate.evaluate(now, BASELINE, gate.load_policy(policy))
    assert v.ship and any("slower" in n for n in v.notes)


def test_policy_requires_backends_markers_and_families(tmp_path):
    policy = tmp_path / "release.toml"
    policy.write_text("[required]\nbackends = ['emu', 'firesim']\nmarkers = ['large']\nfamilies = ['matmul']\n")
    v = gate.evaluate(BASELINE, None, gate.load_policy(policy))
    assert v.reasons == [
        f"backend firesim is required by {policy} but did not run: no case ran on it (not selected?)",
        "marker 'large' is required but no large case ran on emu, firesim (run with -m large)",
        "family 'matmul' is required but none of its cases ran"]


def test_merged_device_labels_satisfy_the_policy(tmp_path):
    data = _data([_case("test_forward", "npu", "PASS")], hw=("npu",))
    data["cases"][0]["device"] = "Phoenix"
    policy = tmp_path / "p.toml"
    policy.write_text("[required]\nbackends = ['Phoenix']\n")
    assert gate.evaluate(data, None, gate.load_policy(policy)).ship
    policy.write_text("[required]\nbackends = ['Krackan']\n")
    assert not gate.evaluate(data, None, gate.load_policy(policy)).ship


def test_interrupted_session_does_not_ship():
    data = _data([_case("test_forward", "emu", "PASS"), _case("test_forward", "npu", "PASS")])
    data["session"]["interrupted"] = True
    data["session"]["stop_reason"] = "SIGTERM"
    v = gate.evaluate(data)
    assert v.reasons == ["the session was interrupted (SIGTERM): its results are incomplete"]


@pytest.mark.parametrize("text, words", [
    ("[required]\nbackend = ['emu']\n", "at required: Additional properties are not allowed ('backend' was unexpected)"),
    ("[require]\n", "at the top level: Additional properties are not allowed ('require' was unexpected)"),
    ("[slowdown]\nfactor = 'x'\n", "at slowdown.factor: 'x' is not of type 'number'"),
    ("[slowdown]\nfactor = 0.5\n", "at slowdown.factor: 0.5 is less than or equal to the minimum of 1"),
    ("[required\n", "not valid TOML"),
])
def test_bad_policy_is_named(tmp_path, capsys, text, words):
    policy = tmp_path / "policy.toml"
    policy.write_text(text)
    code = gate.main([_write(tmp_path, "now.json", BASELINE), "--policy", str(policy)])
    err = capsys.readouterr().err
    assert code == 2 and f"{policy}: " in err and words in err


@pytest.mark.parametrize("content, words", [
    ("{", "not valid JSON"),
    ('{"schema": "other"}', "not an accel-regress results file"),
    ('{"schema": "accel-regress/results", "schema_version": 1, "cases": [{"nodeid": "x"}]}', "at cases[0]: 'backend' is a required property"),
])
def test_bad_results_file_is_named(tmp_path, capsys, content, words):
    path = tmp_path / "results.json"
    path.write_text(content)
    assert gate.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and words in err


def test_shipped_release_policy_loads():
    from pathlib import Path
    p = gate.load_policy(Path(__file__).parents[3] / "policy" / "release.toml")
    assert "emu" in p.backends and p.markers == ["large"] and p.pre_existing_block


def test_known_bug_that_fails_another_way():
    now = _data([_case("test_forward", "emu", "PASS"), _case("test_partition", "emu", "PASS"),
                 _case("test_forward", "npu", "PASS"),
                 _case("test_partition", "npu", "HANG", expectation=ENTRY, message="expected FAIL, got HANG")])
    v = gate.evaluate(now, BASELINE)
    assert v.reasons == ["1 new hang/crash: HANG tests/test_gemm_partition_n.py::test_partition[P4] on npu"]
    now["cases"][3]["verdict"] = "COMPILE_ERROR"
    v = gate.evaluate(now, BASELINE)
    assert v.reasons == ["1 known bug(s) now fail another way (XFAIL in the baseline): "
                         "COMPILE_ERROR tests/test_gemm_partition_n.py::test_partition[P4] on npu"]


def _enums(node):
    if isinstance(node, dict):
        if isinstance(node.get("enum"), list):
            yield node["enum"]
        for v in node.values():
            yield from _enums(v)
    elif isinstance(node, list):
        for v in node:
            yield from _enums(v)


def test_results_schema_knows_every_verdict():
    from pathlib import Path
    from accel_regress.core import verdicts
    schema = json.loads((Path(schemas.__file__).parent / "results.schema.json").read_text())
    enum = next(e for e in _enums(schema) if "PASS" in e)
    assert set(enum) == set(verdicts.ALL)


def test_a_new_flaky_blocks_like_a_new_failure(tmp_path, capsys):
    flaky = _case("test_forward", "emu", "FLAKY", message="FLAKY 1/5: run 3 (same worker) FAIL")
    flaky["detail"]["repeat"] = {"runs": 5, "failed": 1, "rate": "1/5"}
    now = _data([flaky, _case("test_partition", "emu", "PASS"), _case("test_forward", "npu", "PASS"),
                 _case("test_partition", "npu", "XFAIL", expectation=ENTRY)])
    assert gate.main([_write(tmp_path, "now.json", now), "--baseline", _write(tmp_path, "old.json", BASELINE)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["DON'T SHIP: 1 reason", "  - 1 new FLAKY (mixed outcomes over --repeat): "
                       "FLAKY 1/5 tests/test_gemm_partition_n.py::test_forward[P4] on emu"]


def test_fault_run_is_refused_unless_allowed(tmp_path, capsys):
    data = dict(BASELINE, session=dict(BASELINE["session"], fault="iron-gemm-stale-dma"))
    path = _write(tmp_path, "now.json", data)
    assert gate.main([path]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["DON'T SHIP: 1 reason", "fault iron-gemm-stale-dma injected: not a release run",
                       "  - fault iron-gemm-stale-dma injected: not a release run (pass --allow-fault to use it anyway)"]
    assert gate.main([path, "--allow-fault"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["SHIP", "fault iron-gemm-stale-dma injected: not a release run"]
    merged = dict(BASELINE, session={"merged_from": [{"fault": None}, {"fault": "x.py:f"}], "hw": ["emu", "npu"]})
    assert gate.release_refusal(merged) == "fault x.py:f injected: not a release run (pass --allow-fault to use it anyway)"
    assert gate.release_refusal(merged, allow_fault=True) is None and gate.release_refusal(BASELINE) is None


def test_a_backend_no_family_applies_to_blocks_nothing(tmp_path, capsys):
    """Issue 48: a family with no torch program on torch-cpu (a default backend) is NOT_APPLICABLE
    there, once per family x backend: a fact about the family, not a reason not to ship. A backend
    with a SKIP beside its N/A cases still blocks. Failed on 60769d1: 'backend torch-cpu is required
    by default policy ... but did not run: all 3 case(s) SKIP'."""
    na = "torch-cpu: no torch program for operator 'swiglu'"
    cases = [_case("test_swiglu", "emu", "PASS", family="swiglu")] + [
        _case(f"test_swiglu{i}", "torch-cpu", "NOT_APPLICABLE", message=na, family="swiglu") for i in range(3)]
    code = gate.main([_write(tmp_path, "now.json", _data(cases, hw=("emu", "torch-cpu")))])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "backend torch-cpu has nothing to run: not applicable to swiglu" in out
    cases.append(_case("test_other", "torch-cpu", "SKIP", message="torch-cpu: a reason that matters", family="swiglu"))
    assert gate.main([_write(tmp_path, "now2.json", _data(cases, hw=("emu", "torch-cpu")))]) == 1
    assert "backend torch-cpu is required by default policy" in capsys.readouterr().out
