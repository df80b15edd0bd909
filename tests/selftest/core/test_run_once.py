"""One backend run per distinct case per session, for every family, whatever the test layout.

A pytest run over a few cases of each of the five families counts every backend run
(tests/selftest/fixtures/run_counter.py wraps the runner's ``invoke``: one call is one device run)
by backend, case identity, inputs and fault: none may run twice. The GEMM cases are the ones whose
``test_partition`` parameters pytest does not group with ``test_forward_*`` (before the session's
run memo, a P4 configuration ran 5 times). A HANG is remembered like any result, and ``--repeat 2``
still runs every case twice. The matmul shape property runs each shape once while hypothesis
shrinks a failure (without the memo its shrinker reruns shapes it has tried).
"""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

FILES = ["tests/test_gemm_partition_n.py", "tests/test_matmul.py", "tests/test_f32_reduction.py",
         "tests/test_rowexpandmul_fillpad.py", "tests/test_fused_decode.py"]
# A few cases of each family, every test of each (GEMM: shape, values, 4 partitions, 4 standalone).
# Two GEMM configurations at least: with one, pytest's ordering happens to keep its tests together.
SELECT = " or ".join(["M64-K512-N256-m16-k64-n64-c4-bT-cF-P4", "edge-M17-K17-N17-bf16xbf16-f32-exact",
                      "emu-row_sum-64x128-v-vlen256-normal", "emu-seed-R16-C256-vr1-vc256-f32-padzero-fused-reuse-normal",
                      "emu-small-H64"])
FAMILIES = {"gemm_partition_n", "matmul", "f32_reduction", "rowexpandmul_fillpad", "fused_decode"}


def _pytest(tmp_path, files, select, *options):
    count_dir = tmp_path / "counts"
    count_dir.mkdir(parents=True)
    report_dir = tmp_path / "reports"
    env = {**os.environ, "ACCEL_RUN_COUNT_DIR": str(count_dir),
           "PYTHONPATH": os.pathsep.join([str(FIXTURES), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "-k", select, "--hw", "emu", "-q",
                           "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "run_counter",
                           "--report-dir", str(report_dir), *options],
                          cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    results = json.loads((report_dir / "results.json").read_text())
    runs = [r for p in count_dir.glob("*.json") for r in json.loads(p.read_text())]
    assert results["cases"], f"nothing ran:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    return results, runs, proc


def _repeats(runs, times=1):
    return [f"{r['op']} {r['case']} ran {r['count']} times" for r in runs if r["count"] != times]


def test_every_family_runs_each_distinct_case_once(tmp_path):
    results, runs, proc = _pytest(tmp_path, FILES, SELECT)
    tests = Counter(c["family"] for c in results["cases"])
    ran = Counter(r["op"] for r in runs)
    assert set(ran) == FAMILIES, f"families with backend runs: {sorted(ran)}; tests: {dict(tests)}"
    assert not _repeats(runs), "a case ran more than once:\n" + "\n".join(_repeats(runs))
    verdicts = Counter(c["verdict"] for c in results["cases"])
    # (the RVV codegen check the row_sum selection also names is NOT_APPLICABLE on emu: no run)
    assert set(verdicts) <= {"PASS", "NOT_APPLICABLE"} and verdicts["PASS"], f"{dict(verdicts)}\n{proc.stdout[-3000:]}"
    # two P4 configurations (bfp16, bf16), 10 tests each reading one P4 run and 4 standalone runs;
    # pytest sets the module fixture up again for test_partition's parameters
    assert tests["gemm_partition_n"] == 20 and ran["gemm_partition_n"] == 10, (dict(tests), dict(ran))


HANG = '''
from accel_regress import Hang

def gemm_hangs(case, outputs):
    if case.op == "gemm_partition_n":
        raise Hang("injected: the GEMM never completes")
    return outputs
'''


def test_a_hang_is_remembered_not_waited_out_per_test(tmp_path):
    (tmp_path / "hang.py").write_text(HANG)
    results, runs, _ = _pytest(tmp_path, FILES[:1], SELECT, "--inject-fault", f"{tmp_path / 'hang.py'}:gemm_hangs")
    assert {c["verdict"] for c in results["cases"]} == {"HANG"}
    assert len(runs) == 10 and not _repeats(runs), runs


def test_repeat_still_runs_every_case_each_time(tmp_path):
    results, runs, _ = _pytest(tmp_path, FILES[:1], SELECT, "--repeat", "2")
    assert {c["verdict"] for c in results["cases"]} == {"PASS"}
    assert len(runs) == 10 and not _repeats(runs, times=2), runs


# Hypothesis's shrinker asks for shapes it has tried before (a failing shape's replay, the same
# simplification reached by two paths): the property layout of the matmul family. No seed example
# has an odd N, so the shrinker, not an explicit example, finds the failure.
ODD_N_HANGS = '''
from accel_regress import Hang

def odd_n_hangs(case, outputs):
    if case.op == "matmul" and case.params["N"] % 2 == 1 and case.params["N"] > 1:
        raise Hang("injected: an odd N never completes")
    return outputs
'''


def test_a_shrinking_property_runs_each_shape_once(tmp_path):
    (tmp_path / "odd_n.py").write_text(ODD_N_HANGS)
    fault = ("--inject-fault", f"{tmp_path / 'odd_n.py'}:odd_n_hangs")
    files, select = ["tests/test_matmul_shapes_property.py"], "test_matmul_shape_exact"
    results, runs, proc = _pytest(tmp_path / "memo", files, select, *fault)
    assert {c["verdict"] for c in results["cases"]} == {"HANG"}, proc.stdout[-3000:]
    assert len(runs) > 10 and not _repeats(runs), "a shape ran more than once:\n" + "\n".join(_repeats(runs))
    # The control: without the memo the same run repeats shapes, so the check above can fail.
    _, plain, _ = _pytest(tmp_path / "plain", files, select, *fault, "-p", "no:accel_regress.plugin.run_memo")
    assert _repeats(plain), f"{len(plain)} shapes, none repeated without the memo: the layout tests nothing"
