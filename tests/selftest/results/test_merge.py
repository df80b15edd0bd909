"""Merging the results of several runners into one test x device matrix."""
import json

import pytest

from accel_regress.results import keys, merge, record as results
from accel_regress.results.report.tables import Model


def _case(test, backend, verdict, versions=None):
    return {"nodeid": f"tests/test_gemm_partition_n.py::{test}[{backend}-M64-P4]", "test": test, "backend": backend,
            "family": "gemm_partition_n", "verdict": verdict, "stage": "compare", "message": "", "duration_s": 0.2,
            "runs": [], "census": [], "detail": {}, "versions": versions or {}}


def _runner(tmp_path, name, host, backend, verdicts, device=None, fault=None):
    versions = {"xrt": "2.19", "device": device} if device else {}
    data = results.build({"host": host, "hw": [backend], "started": "2026-11-21T07:00:00", "interrupted": False,
                          "fault": fault},
                         {backend: {"selected": True, "available": True, "kind": "hardware", "versions": versions}},
                         [_case(t, backend, v, versions) for t, v in verdicts.items()])
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("nodeid, backend, key", [
    ("t.py::test_p[npu-M64-P4]", "npu", "t.py::test_p[M64-P4]"),
    ("t.py::test_p[M64-P4-npu]", "npu", "t.py::test_p[M64-P4]"),
    ("t.py::test_p[M64-iree-amd-aie-C1]", "iree-amd-aie", "t.py::test_p[M64-C1]"),
    ("t.py::test_p[emu]", "emu", "t.py::test_p"),
    ("t.py::test_p[a2a3sim-x]", "a2a3", "t.py::test_p[a2a3sim-x]"),       # a2a3 is not a2a3sim
    ("t.py::test_p", "emu", "t.py::test_p"),
])
def test_test_key_drops_only_the_backend(nodeid, backend, key):
    assert keys.test_key(nodeid, backend) == key


@pytest.mark.parametrize("raw, name", [("NPU Phoenix", "Phoenix"), ("npu1", "Phoenix"), ("NPU Strix Halo", "Strix Halo"),
                                       ("NPU Strix", "Strix"), ("npu6", "Krackan"), ("RyzenAI-npu4", None)])
def test_device_names(raw, name):
    assert keys.device_name(raw) == name


def test_two_runners_make_one_matrix(tmp_path, capsys):
    phoenix = _runner(tmp_path, "phoenix.json", "box-1", "npu",
                      {"test_forward": "PASS", "test_partition": "XFAIL"}, device="NPU Phoenix")
    krackan = _runner(tmp_path, "krackan.json", "box-2", "npu",
                      {"test_forward": "PASS", "test_partition": "FAIL"}, device="npu6")
    out = tmp_path / "merged" / "results.json"
    assert merge.main([str(phoenix), str(krackan), "-o", str(out)]) == 0
    assert "merged 2 file(s): 4 cases on npu/Krackan, npu/Phoenix" in capsys.readouterr().out
    data = results.load(out)                       # a results.json like any other
    m = Model(data)
    assert m.devices == ["npu/Krackan", "npu/Phoenix"]
    assert {k: {d: c["verdict"] for d, c in row.items()} for k, row in m.grid.items()} == {
        "tests/test_gemm_partition_n.py::test_forward[M64-P4]": {"npu/Phoenix": "PASS", "npu/Krackan": "PASS"},
        "tests/test_gemm_partition_n.py::test_partition[M64-P4]": {"npu/Phoenix": "XFAIL", "npu/Krackan": "FAIL"},
    }
    assert [s["host"] for s in data["session"]["merged_from"]] == ["box-1", "box-2"]


def test_labels_and_duplicates(tmp_path, capsys):
    a = _runner(tmp_path, "a.json", "box-1", "firesim", {"test_x": "PASS"})
    b = _runner(tmp_path, "b.json", "box-2", "firesim", {"test_x": "HANG"})
    out = tmp_path / "m.json"
    assert merge.main([f"FireSim={a}", f"FireSim={b}", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "in both" in text and "keeping the worse" in text
    (case,) = results.load(out)["cases"]
    assert case["device"] == "FireSim" and case["verdict"] == "HANG"


def test_a_run_with_an_injected_fault_is_refused_unless_asked(tmp_path, capsys):
    clean = _runner(tmp_path, "a.json", "box-1", "npu", {"test_x": "PASS"})
    faulty = _runner(tmp_path, "b.json", "box-2", "npu", {"test_x": "FAIL"}, fault="iron-gemm-stale-dma")
    out = tmp_path / "m.json"
    assert merge.main([str(clean), str(faulty), "-o", str(out)]) == 2
    assert "fault iron-gemm-stale-dma injected: not a release run" in capsys.readouterr().err
    assert not out.exists()
    assert merge.main([str(clean), str(faulty), "-o", str(out), "--allow-fault"]) == 0
    assert [s["fault"] for s in results.load(out)["session"]["merged_from"]] == [None, "iron-gemm-stale-dma"]


def test_a_bad_input_is_named(tmp_path, capsys):
    good = _runner(tmp_path, "a.json", "box-1", "npu", {"test_x": "PASS"})
    bad = tmp_path / "b.json"
    bad.write_text('{"schema": "accel-regress/results", "schema_version": 7, "cases": []}')
    assert merge.main([str(good), str(bad), "-o", str(tmp_path / "m.json")]) == 2
    assert f"{bad}: schema_version 7, this tool reads 1" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_heatmap_arrays_travel_with_the_merge(tmp_path):
    import numpy as np
    from accel_regress.results.report import heatmap, write_all
    run = tmp_path / "phoenix"
    run.mkdir()
    path = _runner(run, "results.json", "box-1", "npu", {"test_partition": "FAIL"}, device="npu1")
    data = json.loads(path.read_text())
    ratio = np.zeros((16, 256), np.float32)
    ratio[0, 1:16] = 50.0
    heatmap.save(run / "arrays" / "x.npy", ratio)
    data["cases"][0]["detail"]["heatmap"] = {"array": "arrays/x.npy", "shape": [16, 256], "block": [1, 1], "name": "out"}
    path.write_text(json.dumps(data))
    out = tmp_path / "merged" / "results.json"
    assert merge.main([str(path), "-o", str(out)]) == 0
    merged = results.load(out)
    rel = merged["cases"][0]["detail"]["heatmap"]["array"]
    assert rel.startswith("arrays/") and (out.parent / rel).is_file()
    written = write_all(merged, out.parent)
    assert len(written["heatmaps"]) == 1 and written["heatmaps"][0].is_file()
    assert "npu/Phoenix" in (out.parent / "summary.md").read_text()


@pytest.mark.parametrize("attack", ["../secret.txt", "ABS", "link.npy", "linkdir/x.npy", "arrays/../../secret.txt",
                                    "arrays", "arrays/missing.npy"])
def test_heatmap_path_may_not_leave_the_results_folder(tmp_path, capsys, attack):
    """Issue 19 item 8: a hostile results.json names a file outside its folder (directly, '..', absolute,
    or through a symlink); merge and report never copy or read it, and say so."""
    import os
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:SECRET\n")
    run = tmp_path / "runner"
    (run / "arrays").mkdir(parents=True)
    os.symlink(secret, run / "link.npy")
    os.symlink(tmp_path, run / "linkdir")
    (tmp_path / "x.npy").write_text("SECRET")
    path = _runner(run, "results.json", "box-1", "npu", {"test_partition": "FAIL"})
    data = json.loads(path.read_text())
    data["cases"][0]["detail"]["heatmap"] = {"array": str(secret) if attack == "ABS" else attack,
                                             "shape": [1, 1], "block": [1, 1]}
    path.write_text(json.dumps(data))
    out = tmp_path / "merged" / "results.json"
    assert merge.main([str(path), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    copied = [p for p in out.parent.rglob("*") if p.is_file() and "SECRET" in p.read_text(errors="replace")]
    assert copied == []
    assert "array" not in results.load(out)["cases"][0]["detail"]["heatmap"]
    if attack != "arrays/missing.npy":
        assert "heatmap of" in text and "not copied" in text and "refused" in text
    with pytest.raises(results.PathRefused):
        results.read_member(run, str(secret) if attack == "ABS" else attack)


def test_report_draws_no_heatmap_from_outside_its_folder(tmp_path):
    """Issue 19 item 8, report side: a valid ratio map one folder up is not rendered (it is not the run's)."""
    import numpy as np
    pytest.importorskip("matplotlib")
    from accel_regress.results.report import heatmap, write_all
    heatmap.save(tmp_path / "outside.npy", np.ones((4, 4), np.float32) * 9)
    run = tmp_path / "run"
    run.mkdir()
    path = _runner(run, "results.json", "box-1", "npu", {"test_partition": "FAIL"})
    data = json.loads(path.read_text())
    data["cases"][0]["detail"]["heatmap"] = {"array": "../outside.npy", "shape": [4, 4], "block": [1, 1]}
    written = write_all(data, run / "report", base=run)
    assert written["heatmaps"] == []
    assert any("refused" in n for n in written["notes"])


def test_merge_reads_each_file_a_bounded_number_of_times(tmp_path, monkeypatch):
    """Issue 19 item 9: merge was quadratic (each case re-scanned its whole file). Counted, not timed:
    the passes over a file's cases must not grow with the number of cases
    (benchmarks/bench_merge.py times 100,000 cases from 10 runners)."""
    passes = []

    class Cases(list):
        def __iter__(self):
            passes.append(1)
            return super().__iter__()

    real_load = results.load

    def counting_load(path):
        data = real_load(path)
        data["cases"] = Cases(data["cases"])
        return data

    monkeypatch.setattr(results, "load", counting_load)
    for n in (10, 500):
        passes.clear()
        path = _runner(tmp_path, f"r{n}.json", "box", "npu", {f"test_{i}": "PASS" for i in range(n)})
        merged, _notes = merge.merge([("Phoenix", path)])
        assert len(merged["cases"]) == n
        assert len(passes) <= 3, f"{len(passes)} passes over {n} cases"


def _shards(tmp_path, prefix, host, device, n, tests, extra_tests=()):
    """N shard records of one split of ``tests`` on one device (hardware/results/history/shard.py)."""
    from accel_regress.results.history import shard
    ids = [_case(t, "npu", "PASS")["nodeid"] for t in tests]
    split = shard.assign(ids, [None] * len(ids), n)
    out = []
    for i in range(1, n + 1):
        mine = [t for t, s in zip(tests, split) if s == i - 1] + list(extra_tests)
        path = _runner(tmp_path, f"{prefix}{i}.json", host, "npu", {t: "PASS" for t in mine}, device=device)
        data = json.loads(path.read_text())
        data["session"].update(shard.record(i, n, ids, split, "by count"))
        path.write_text(json.dumps(data))
        out.append(path)
    return out


def test_shards_tile_per_device_and_a_whole_run_beside_them_is_refused(tmp_path, capsys):
    """Two devices, each split in two by its own runners: each device's shards tile its selection,
    so the merge is whole and ships; a whole run of the same device beside its shards (every test
    would count twice) is refused, naming it; the other device's whole run is not a problem."""
    from accel_regress.results import gate
    tests = ["test_forward", "test_partition", "test_tail"]
    phoenix = _shards(tmp_path, "phx", "box-1", "NPU Phoenix", 2, tests)
    krackan = _shards(tmp_path, "krk", "box-2", "npu6", 2, tests)
    out = tmp_path / "merged" / "results.json"
    assert merge.main([*map(str, phoenix + krackan), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "6 cases on npu/Krackan, npu/Phoenix" in capsys.readouterr().out
    assert gate.main([str(out)]) == 0, capsys.readouterr().out
    capsys.readouterr()
    whole = _runner(tmp_path, "phx-whole.json", "box-3", "npu", {t: "PASS" for t in tests}, device="NPU Phoenix")
    strix = _runner(tmp_path, "strix.json", "box-4", "npu", {t: "PASS" for t in tests}, device="NPU Strix")
    assert merge.main([*map(str, phoenix), str(strix), "-o", str(out)]) == 0
    capsys.readouterr()
    assert merge.main([*map(str, phoenix), str(whole), "-o", str(tmp_path / "m2.json")]) == 2
    err = capsys.readouterr().err
    assert f"on npu/Phoenix: {whole} (a whole run) beside shards of the same device(s)" in err, err
    # A record whose share does not add up with the others (edited, or a runner with other tests).
    odd = _shards(tmp_path, "odd", "box-1", "NPU Phoenix", 2, tests, extra_tests=["test_extra"])
    assert merge.main([*map(str, odd), "-o", str(tmp_path / "m3.json")]) == 2
    err = capsys.readouterr().err
    assert "1 test(s) ran in two shards: tests/test_gemm_partition_n.py::test_extra" in err, err
