"""Issue 26 through real pytest sessions (subprocesses): no run ships unless its record is complete
and its own. Item 1 (byte order across the isolation), 2 (an xdist worker SIGKILLed mid-case), 3
(pytest SIGKILLed mid-run), 4 (a test file that cannot be imported), 8 (a case deletes the report
folder; two sessions on one folder), 9 (a full disk), 13 (junit.xml strict), 15 (a collection error
is no SIGINT) and issue 24 item 7 (each run leaves only its own files)."""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accel_regress.results import record as results
from test_isolation import REPO

pytest_plugins = ["pytester"]

TEST = textwrap.dedent('''
    import os, shutil, signal, time
    import numpy as np
    import pytest
    from accel_regress.golden.case import Case

    pytestmark = pytest.mark.family("gemm_partition_n")
    PARAMS = dict(M=16, K=64, N=64, tile_m=16, tile_k=64, tile_n=64, num_aie_columns=1,
                  b_col_maj=False, c_col_maj=False, partition_N=1)
    KINDS = {kinds!r}

    @pytest.mark.parametrize("kind", KINDS)
    def test_gemm(hw, kind):
        if kind == "die":            # the process running this case dies, as under the OOM killer
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "rm_reports":     # a case that deletes the report folder under its session
            shutil.rmtree("reports")
        if kind == "wait":           # holds the session until the test removes the gate file
            while os.path.exists("gate.file"):
                time.sleep(0.05)
        rng = np.random.default_rng(len(kind))
        a = rng.integers(0, 2, (16, 64)).astype(np.float32)
        b = rng.integers(0, 2, (64, 64)).astype(np.float32)
        run = hw.run(Case.make("gemm_partition_n", kind, PARAMS), {{"A": a, "B": b}})
        if kind == "nan":            # a census of NaN outputs: non-finite statistics in the record
            from accel_regress.golden import assert_close
            assert_close(run["C_0"][:16, :64], a @ b, atol=0.01, name="C_0")
        np.testing.assert_array_equal(run["C_0"][:16, :64], a @ b)
''')

FAULTS = textwrap.dedent('''
    import os, time
    import numpy as np

    def fault(case, outputs):
        if case.id == "relabelled":   # the right bytes labelled big-endian: garbage values
            return {k: v.view(v.dtype.newbyteorder(">")) for k, v in outputs.items()}
        if case.id == "swapped":      # the right values, stored big-endian
            return {k: v.astype(v.dtype.newbyteorder(">")) for k, v in outputs.items()}
        if case.id == "list":
            return list(outputs.values())
        if case.id == "tensor":
            import torch
            return {k: torch.from_numpy(v) for k, v in outputs.items()}
        if case.id == "void":
            return {k: v.view(np.dtype("V4")) for k, v in outputs.items()}
        if case.id == "nan":
            return {k: np.full_like(v, np.nan) for k, v in outputs.items()}
        if case.id == "hang":
            with open(os.environ["ISO_MARKER"], "w") as f:
                f.write(str(os.getpid()))
            while True:
                time.sleep(1)
        return outputs
''')


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path)]))
    monkeypatch.delenv("ACCEL_HW", raising=False)
    pytester.makepyfile(faults26=FAULTS)
    return pytester


def _argv(*extra, fault=True):
    return [sys.executable, "-m", "pytest", "-p", "accel-regress", "-p", "no:cacheprovider", "--hw", "emu",
            "--case-timeout", "60", "--worker-memory", "3G",
            *(["--inject-fault", "faults26.py:fault"] if fault else []), *extra]


def _run(suite, kinds, *extra, fault=True, timeout=300):
    suite.makepyfile(test_small=TEST.format(kinds=kinds))
    return subprocess.run(_argv(*extra, fault=fault), cwd=suite.path, capture_output=True, text=True,
                          timeout=timeout)


def _gate(path: Path, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accel_regress", "gate", str(path), "--allow-fault", *extra],
                          cwd=REPO, capture_output=True, text=True, timeout=120)


def _cases(suite) -> dict:
    data = results.load(suite.path / "reports" / "results.json")
    return {c["test"]: c for c in data["cases"]}


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_byte_order_crosses_the_isolation(suite, isolation):
    """Item 1: a big-endian output is the dtype the backend returned, isolated or not: both break
    the float32 contract (a FAIL naming >f4), never a PASS of garbage nor an invented census."""
    proc = _run(suite, ["relabelled", "swapped"], "--isolation", isolation)
    cases = _cases(suite)
    for kind in ("relabelled", "swapped"):
        c = cases[f"test_gemm[emu-{kind}]"]
        assert c["verdict"] == "FAIL" and "output contract" in c["message"] and ">f4" in c["message"], \
            (kind, c["verdict"], c["message"], proc.stdout[-2000:])
        assert not c["census"], c["census"]


def test_what_is_not_an_array_is_a_contract_fail_not_a_crash(suite):
    """Item 15: a list, a torch tensor, a void dtype: the device answered, with the wrong thing."""
    _run(suite, ["list", "tensor", "void"])
    cases = _cases(suite)
    for kind, words in (("list", "a list"), ("tensor", "torch.Tensor"), ("void", "V4")):
        c = cases[f"test_gemm[emu-{kind}]"]
        assert c["verdict"] == "FAIL" and "output contract" in c["message"] and words in c["message"], \
            (kind, c["verdict"], c["message"])


def test_a_worker_killed_mid_case_is_a_crash_and_the_gate_refuses(suite):
    """Item 2: -n 2, the xdist worker running a case SIGKILLed: that case is a CRASH record."""
    proc = _run(suite, ["ok_a", "ok_b", "die", "ok_c"], "-n", "2", fault=False)
    assert "crashed" in proc.stdout, proc.stdout[-3000:]
    cases = _cases(suite)
    assert cases["test_gemm[emu-die]"]["verdict"] == "CRASH", cases.get("test_gemm[emu-die]")
    assert "worker" in cases["test_gemm[emu-die]"]["message"]
    jsonl = (suite.path / "reports" / "results.jsonl").read_text()
    assert "test_gemm[emu-die]" in jsonl
    gate = _gate(suite.path / "reports" / "results.json")
    assert gate.returncode == 1 and "CRASH" in gate.stdout, gate.stdout


def test_pytest_killed_mid_run_leaves_no_record_that_ships(suite):
    """Item 3: a clean run, then a run SIGKILLed mid-case: the first run's results.json must not
    pass for the second."""
    first = _run(suite, ["ok_a"], fault=False)
    assert first.returncode == 0 and _gate(suite.path / "reports" / "results.json").returncode == 0, first.stdout
    suite.makepyfile(test_small=TEST.format(kinds=["ok_a", "hang"]))
    marker = suite.path / "hang.pid"
    proc = subprocess.Popen(_argv(), cwd=suite.path, env=dict(os.environ, ISO_MARKER=str(marker)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the hanging case never started"
            time.sleep(0.1)
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    gate = _gate(suite.path / "reports" / "results.json")
    assert gate.returncode != 0, gate.stdout
    assert "never finished" in gate.stdout, gate.stdout
    # What the killed run finished is in its log; recovered, it is this run's, not the first one's.
    rec = subprocess.run([sys.executable, "-m", "accel_regress", "recover", str(suite.path / "reports" / "results.jsonl")],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert rec.returncode == 0, rec.stderr
    recovered = results.load(suite.path / "reports" / "results.json")
    assert [c["test"] for c in recovered["cases"]] == ["test_gemm[emu-ok_a]"] and recovered["session"]["interrupted"]
    assert _gate(suite.path / "reports" / "results.json").returncode == 1


def test_a_file_that_cannot_be_imported_is_a_record(suite):
    """Item 4: --continue-on-collection-errors goes on; the broken file is a FAIL at stage collect."""
    suite.makepyfile(test_broken="import no_such_module_anywhere\n")
    proc = _run(suite, ["ok_a"], "--continue-on-collection-errors", fault=False)
    cases = _cases(suite)
    broken = [c for c in cases.values() if c["nodeid"].startswith("test_broken.py")]
    assert broken and broken[0]["verdict"] == "FAIL" and broken[0]["stage"] == "collect", (cases, proc.stdout[-2000:])
    assert "no_such_module_anywhere" in broken[0]["message"]
    gate = _gate(suite.path / "reports" / "results.json")
    assert gate.returncode == 1 and "test_broken.py" in gate.stdout, gate.stdout


def test_a_collection_error_is_no_signal(suite):
    """Item 15: without --continue-on-collection-errors pytest stops; no signal was sent."""
    suite.makepyfile(test_broken="import no_such_module_anywhere\n")
    proc = _run(suite, ["ok_a"], fault=False)
    assert proc.returncode == 2, proc.stdout[-2000:]
    session = results.load(suite.path / "reports" / "results.json")["session"]
    assert "SIGINT" not in (session.get("stop_reason") or "") and "error" in session["stop_reason"], session


def test_a_case_that_deletes_the_report_folder_loses_nothing(suite):
    """Item 8: the record is kept in the process, not re-read from the folder at the end."""
    proc = _run(suite, ["ok_a", "rm_reports", "ok_b"], fault=False)
    cases = _cases(suite)
    assert sorted(cases) == ["test_gemm[emu-ok_a]", "test_gemm[emu-ok_b]", "test_gemm[emu-rm_reports]"], \
        (sorted(cases), proc.stdout[-2000:])
    assert _gate(suite.path / "reports" / "results.json").returncode == 0


def test_two_sessions_on_one_report_folder(suite):
    """Item 8: a second session given the folder of a running one is a usage error (exit 4)."""
    suite.makepyfile(test_small=TEST.format(kinds=["ok_a", "wait"]))
    gate_file = suite.path / "gate.file"
    gate_file.write_text("")
    first = subprocess.Popen(_argv(fault=False), cwd=suite.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        jsonl = suite.path / "reports" / "results.jsonl"
        deadline = time.monotonic() + 240
        while not (jsonl.exists() and "ok_a" in jsonl.read_text()):
            assert first.poll() is None and time.monotonic() < deadline, "the first session never ran a case"
            time.sleep(0.1)
        suite.makepyfile(test_other=TEST.format(kinds=["other"]).replace("test_gemm", "test_other"))
        second = subprocess.run(_argv("test_other.py", fault=False), cwd=suite.path, capture_output=True, text=True,
                                timeout=300)
        assert second.returncode == 4, second.stdout[-2000:] + second.stderr[-2000:]
        assert "another running session" in second.stderr + second.stdout
    finally:
        gate_file.unlink()
        out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out[-2000:]
    assert sorted(_cases(suite)) == ["test_gemm[emu-ok_a]", "test_gemm[emu-wait]"]


def test_each_run_leaves_only_its_own_files(suite):
    """Issue 24 item 7: an earlier run's matrices and junit.xml go; an empty selection writes a
    record of 0 cases that the gate refuses; files of other tools stay."""
    reports = suite.path / "reports"
    reports.mkdir()
    for name in ("matrix-npu_Phoenix.csv", "junit.xml", "summary.md", "expectations.json", "trend.png"):
        (reports / name).write_text("from an earlier run")
    proc = _run(suite, ["ok_a"], "--junitxml", str(suite.path / "elsewhere.xml"), fault=False)
    assert proc.returncode == 0, proc.stdout[-2000:]
    left = sorted(p.name for p in reports.iterdir() if p.is_file() and not p.name.startswith("."))
    assert "matrix-npu_Phoenix.csv" not in left and "junit.xml" not in left, left
    assert (reports / "trend.png").read_text() == "from an earlier run"
    assert (reports / "summary.md").read_text() != "from an earlier run"
    empty = _run(suite, ["ok_a"], "-k", "no_such_case", fault=False)
    assert empty.returncode == 5, empty.stdout[-2000:]
    assert not list(reports.glob("matrix-*.csv")), sorted(p.name for p in reports.iterdir())
    gate = _gate(reports / "results.json")
    assert gate.returncode == 1 and "no cases" in gate.stdout, gate.stdout


def test_junit_property_is_strict_json(suite):
    """Item 13: a record with NaN statistics travels as strict JSON in junit.xml too."""
    import xml.etree.ElementTree as ET
    _run(suite, ["nan"])
    props = [p.get("value") for p in ET.parse(suite.path / "reports" / "junit.xml").iter("property")
             if p.get("name") == "accel_regress"]
    assert props
    for value in props:
        json.loads(value, parse_constant=lambda word: pytest.fail(f"bare {word} in junit.xml"))


def test_a_full_disk_is_one_line_and_exit_3(suite):
    """Item 9: the report folder on a full file system: one line naming the problem, pytest's
    internal-error status, and what was written stays."""
    reports = suite.path / "reports"
    reports.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(reports)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        (reports / "filler").write_bytes(b"\0" * (44 << 10))     # about 5 pages left
        proc = _run(suite, [f"ok_{i}" for i in range(12)], "--junitxml", str(suite.path / "junit.xml"),
                    fault=False)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 3, out[-3000:]
        assert "Traceback" not in out and "No space left on device" in out, out[-3000:]
        lines = [ln for ln in out.splitlines() if "No space left on device" in ln]
        assert any(ln.startswith("accel-regress: ") for ln in lines), lines
    finally:
        subprocess.run(["umount", str(reports)], check=False)
