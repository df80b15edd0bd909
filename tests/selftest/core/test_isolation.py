"""Isolation, through real pytest sessions (pytester, in subprocesses): every way a run can end badly
becomes the right verdict of that case alone, within its bound + 5 s, and the session goes on.

The bad endings are real, raised inside the isolated run by an ``--inject-fault`` file: libc
``sleep`` called through ``ctypes.PyDLL`` (native code that keeps the GIL), a NULL read (SIGSEGV),
an illegal instruction (SIGILL), a read past a truncated file mapping (SIGBUS), ``os.abort``
(SIGABRT), ``os._exit(3)``, an infinite Python loop, and allocations past the worker's memory bound.
"""
import os
import textwrap
import time
from pathlib import Path

import pytest

from accel_regress.results import record as results

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
BOUND = 2.0          # --case-timeout of these sessions
SLACK = 5.0          # the "within bound + 5 s"

# A tiny emu GEMM on 0/1 inputs: every product and sum is exact in bfp16 and bf16, so a clean run
# must equal numpy's A @ B bit for bit, and any damaged output fails.
SMALL_TEST = textwrap.dedent('''
    import numpy as np
    import pytest
    from accel_regress.golden.case import Case

    pytestmark = pytest.mark.family("gemm_partition_n")
    PARAMS = dict(M=16, K=64, N=64, tile_m=16, tile_k=64, tile_n=64, num_aie_columns=1,
                  b_col_maj=False, c_col_maj=False, partition_N=1)
    KINDS = {kinds!r}

    @pytest.mark.parametrize("kind", KINDS)
    def test_gemm(hw, kind):
        rng = np.random.default_rng(len(kind))
        a = rng.integers(0, 2, (16, 64)).astype(np.float32)
        b = rng.integers(0, 2, (64, 64)).astype(np.float32)
        run = hw.run(Case.make("gemm_partition_n", kind, PARAMS), {{"A": a, "B": b}})
        np.testing.assert_array_equal(run["C_0"][:16, :64], a @ b)
''')

# Each bad ending is selected by the case id; anything else passes outputs through untouched.
FAULTS = textwrap.dedent('''
    import ctypes, mmap, os, platform, tempfile, time
    import numpy as np

    def _illegal_instruction():
        code = {"x86_64": b"\\x0f\\x0b", "aarch64": b"\\x00\\x00\\x00\\x00"}.get(platform.machine())
        if code is None:
            os.kill(os.getpid(), 4)
        buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        buf.write(code)
        ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()

    def _bus_error():
        f = tempfile.TemporaryFile()
        f.truncate(mmap.PAGESIZE)
        m = mmap.mmap(f.fileno(), mmap.PAGESIZE)
        f.truncate(0)
        return m[0]

    def _note():
        marker = os.environ.get("ISO_MARKER")
        if marker:
            with open(marker + ".tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace(marker + ".tmp", marker)

    def fault(case, outputs):
        kind = case.id
        if kind.startswith("ok"):
            return outputs
        print(f"fault {kind}: about to misbehave", flush=True)
        if kind == "gil_sleep":
            ctypes.PyDLL(None).sleep(60)          # PyDLL keeps the GIL through the native call
        elif kind == "segv":
            ctypes.string_at(0)
        elif kind == "sigill":
            _illegal_instruction()
        elif kind == "sigbus":
            _bus_error()
        elif kind == "abort":
            os.abort()
        elif kind == "exit3":
            os._exit(3)
        elif kind == "loop":
            while True:
                pass
        elif kind == "memory":
            blocks = [np.empty(1 << 28, np.uint8) for _ in range(1024)]   # 256 GiB of address space
            return outputs
        elif kind.startswith("hang"):
            _note()
            while True:
                time.sleep(1)
        return outputs
''')

KINDS = ["ok_a", "gil_sleep", "ok_b", "segv", "sigill", "sigbus", "abort", "exit3", "loop", "memory", "ok_c"]
EXPECT = {
    "ok_a": ("PASS", None), "ok_b": ("PASS", None), "ok_c": ("PASS", None),
    "gil_sleep": ("HANG", "within 2 s"), "loop": ("HANG", "within 2 s"),
    "segv": ("CRASH", "SIGSEGV"), "sigill": ("CRASH", "SIGILL"), "sigbus": ("CRASH", "SIGBUS"),
    "abort": ("CRASH", "SIGABRT"), "exit3": ("CRASH", "exited with code 3"),
    "memory": ("CRASH", "MemoryError"),
}


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(pytester.path)]))
    monkeypatch.delenv("ACCEL_HW", raising=False)
    pytester.makepyfile(faults=FAULTS)
    return pytester


def _args(*extra):
    return ["-p", "accel-regress", "-p", "no:cacheprovider", "--hw", "emu", "--case-timeout", str(BOUND),
            "--inject-fault", "faults.py:fault", "--worker-memory", "3G", *extra]


def _cases(pytester) -> dict:
    data = results.load(pytester.path / "reports" / "results.json")
    return {c["test"].partition("[")[2].rstrip("]").removeprefix("emu-"): c for c in data["cases"]}


def _check_every_ending(cases: dict) -> None:
    assert set(cases) == set(KINDS), sorted(cases)
    for kind, (verdict, words) in EXPECT.items():
        case = cases[kind]
        assert case["verdict"] == verdict, (kind, case["verdict"], case["message"])
        if words:
            assert words in case["message"], (kind, case["message"])
        if verdict != "PASS" and kind != "memory":
            # Counted from the hand-over to the worker (a first case also waits for the fork server).
            assert case["detail"]["verdict_after_s"] < BOUND + SLACK, (kind, case["detail"])
        assert case["duration_s"] < 60, (kind, case["duration_s"])
    for kind in ("gil_sleep", "loop"):
        detail = cases[kind]["detail"]
        assert "in fault" in detail["stack"] and "faults.py" in detail["stack"], detail["stack"]
        assert f"fault {kind}: about to misbehave" in detail["output"]
    assert cases["segv"]["detail"]["signal"] == "SIGSEGV"
    assert "Segmentation fault" in cases["segv"]["detail"]["output"]     # faulthandler's report
    assert cases["exit3"]["detail"]["exit_code"] == 3


def test_every_bad_ending_is_a_verdict_of_its_own_case(suite):
    suite.makepyfile(test_small=SMALL_TEST.format(kinds=KINDS))
    start = time.monotonic()
    res = suite.runpytest_subprocess(*_args("--max-hangs", "0"), timeout=150)
    elapsed = time.monotonic() - start
    res.assert_outcomes(passed=3, failed=8)
    _check_every_ending(_cases(suite))
    # Two hangs of 2 s, the rest quick: the session never waited on a dead or stuck run.
    assert elapsed < 120, elapsed      # generous: a loaded 2-core CI box; speed itself is benchmarked


def test_same_under_xdist_with_one_device_per_worker(suite):
    # emu pretends to hold a device so --devices is exercised; the run records what it was given.
    suite.makeconftest(textwrap.dedent('''
        from accel_regress.backends.emu import EmuBackend
        EmuBackend.device_resource = "emu-dev"
    '''))
    suite.makepyfile(faults=FAULTS + textwrap.dedent('''
        _plain = fault
        def fault(case, outputs):
            with open(os.path.join(os.environ["ISO_SEEN"], case.id), "w") as f:
                f.write(f"{os.environ.get('PYTEST_XDIST_WORKER')} {os.environ.get('ACCEL_DEVICE_EMU_DEV')}")
            return _plain(case, outputs)
    '''))
    seen = suite.path / "seen"
    seen.mkdir()
    os.environ["ISO_SEEN"] = str(seen)
    try:
        suite.makepyfile(test_small=SMALL_TEST.format(kinds=KINDS))
        res = suite.runpytest_subprocess(*_args("--max-hangs", "0", "-n", "2", "--devices", "emu-dev=7,8",
                                                "--device-lock-dir", str(suite.path / "locks")), timeout=150)
    finally:
        del os.environ["ISO_SEEN"]
    res.assert_outcomes(passed=3, failed=8)
    _check_every_ending(_cases(suite))
    pairs = {tuple(p.read_text().split()) for p in seen.iterdir()}
    by_worker: dict = {}
    for worker, device in pairs:
        by_worker.setdefault(worker, set()).add(device)
    assert all(len(d) == 1 for d in by_worker.values()), by_worker       # a worker keeps its device
    held = [d.pop() for d in by_worker.values()]
    assert len(held) == len(set(held)) and set(held) <= {"7", "8"}, by_worker   # never shared


def test_max_hangs_skips_the_rest_and_resets_the_backend(suite):
    # The reset hook runs in the fresh worker after each hang; this module (preloaded by the fork
    # server) makes emu's reset leave a trace.
    suite.makepyfile(emu_reset_probe=textwrap.dedent('''
        import os
        from accel_regress.backends.emu import EmuBackend
        def _reset(self):
            with open(os.environ["ISO_RESETS"], "a") as f:
                f.write("reset\\n")
        EmuBackend.reset = _reset
    '''))
    resets = suite.path / "resets.txt"
    kinds = ["ok_a", "hang1", "hang2", "hang3", "ok_b"]
    suite.makepyfile(test_small=SMALL_TEST.format(kinds=kinds))
    os.environ["ACCEL_ISOLATION_PRELOAD"] = "emu_reset_probe"
    os.environ["ISO_RESETS"] = str(resets)
    try:
        res = suite.runpytest_subprocess(*_args("--max-hangs", "2"), timeout=120)
    finally:
        del os.environ["ACCEL_ISOLATION_PRELOAD"], os.environ["ISO_RESETS"]
    res.assert_outcomes(passed=1, failed=2, skipped=2)
    cases = _cases(suite)
    assert [cases[k]["verdict"] for k in kinds] == ["PASS", "HANG", "HANG", "SKIP", "SKIP"]
    assert "hung 2 times in a row" in cases["hang3"]["message"]
    assert "--max-hangs 2" in cases["ok_b"]["message"]
    assert resets.read_text().count("reset") == 2


# --- the pieces, in this process (fast) --------------------------------------------------------

def test_devices_spec_is_parsed_or_refused_with_the_reason():
    from accel_regress.core import devices
    assert devices.parse(["0,1"]) == {"*": ["0", "1"]}
    assert devices.parse(["npu=0,1", "a2a3=4"]) == {"npu": ["0", "1"], "a2a3": ["4"]}
    assert devices.parse(["npu=0;a2a3=1,2"]) == {"npu": ["0"], "a2a3": ["1", "2"]}
    for bad, words in [("npu=", "no device ids"), ("=1", "empty name"), ("0,0", "listed twice"),
                       ("a b", "bad device id")]:
        with pytest.raises(ValueError, match=words):
            devices.parse([bad])


def test_device_locks_give_each_holder_its_own_device_and_queue_the_rest(tmp_path):
    import threading
    from accel_regress.core import devices
    pools = devices.parse(["npu=0,1"])
    a, b = devices.DeviceLocks(pools, tmp_path, poll_s=0.05), devices.DeviceLocks(pools, tmp_path, poll_s=0.05)
    got_a, got_b = a.acquire("npu")["ACCEL_DEVICE_NPU"], b.acquire("npu")["ACCEL_DEVICE_NPU"]
    assert {got_a, got_b} == {"0", "1"}
    assert a.acquire("npu") == {"ACCEL_DEVICE_NPU": got_a, "ACCEL_DEVICE": got_a}   # kept, not re-locked
    assert a.acquire(None) == {} and a.acquire("firesim") == {}                      # no pool: no lock
    waiting = []
    c = devices.DeviceLocks(pools, tmp_path, poll_s=0.05, on_wait=waiting.append)
    got_c = []
    t = threading.Thread(target=lambda: got_c.append(c.acquire("npu")["ACCEL_DEVICE_NPU"]))
    t.start()
    time.sleep(0.3)
    assert not got_c and waiting and "waiting for a free npu device" in waiting[0]
    b.release()
    t.join(5)
    assert got_c == [got_b]
    a.release()
    c.release()


def test_hang_guard_counts_hangs_in_a_row_only():
    from accel_regress.core.isolation import HangGuard
    g = HangGuard(2)
    g.record("npu", "c1", "HANG")
    g.record("npu", "c2", "PASS")           # a completed run: the device works
    g.record("npu", "c3", "HANG")
    assert g.blocked("npu") is None
    g.record("npu", "c4", "HANG")
    assert "hung 2 times in a row (last: c4)" in g.blocked("npu") and g.blocked("emu") is None
    assert HangGuard(0).blocked("npu") is None


def test_exit_statuses_are_named():
    from accel_regress.core.isolation.bounds import describe_status, parse_size
    assert describe_status(11) == "killed by SIGSEGV (signal 11: Segmentation fault)"
    assert describe_status(3 << 8) == "exited with code 3"
    assert parse_size("8G") == 8 << 30 and parse_size("512M") == 512 << 20 and parse_size("none") is None
    with pytest.raises(ValueError, match="not a size"):
        parse_size("lots")


def test_inputs_are_written_once_per_content(monkeypatch):
    """The same inputs on the next run (the same case on another backend) reuse their files; other
    inputs are written; the kept files stay within INPUT_CACHE_BYTES; every answer is right."""
    import numpy as np

    from accel_regress.golden.case import Case
    from accel_regress.core import runner
    from accel_regress.core.isolation import Bounds, Isolation, pool, transfer

    written = []
    write = transfer.write_arrays

    def counting(folder, prefix, arrays):
        written.append(prefix)
        return write(folder, prefix, arrays)
    monkeypatch.setattr(transfer, "write_arrays", counting)
    iso = Isolation(Bounds(), preload=["accel_regress.backends.emu"])
    context = runner.Context(isolation=iso)
    try:
        case = Case("f32_reduction", "row_sum-R8-C64", {"kind": "row_sum", "shape": [8, 64], "variant": "v",
                                                        "vlen": 256}, 0)
        xs = [np.arange(8 * 64, dtype=np.float32).reshape(8, 64) * s for s in (1.0, 2.0, 3.0)]
        for x in (xs[0], xs[0].copy(), xs[1]):
            run = runner.run_case("emu", case, {"x": x}, context=context)
            np.testing.assert_allclose(run["sum"], x.sum(axis=1, dtype=np.float64), rtol=1e-6)
        assert written == ["in", "in"]               # the second run of xs[0] wrote nothing
        monkeypatch.setattr(pool, "INPUT_CACHE_BYTES", 1)
        run = runner.run_case("emu", case, {"x": xs[2]}, context=context)
        np.testing.assert_allclose(run["sum"], xs[2].sum(axis=1, dtype=np.float64), rtol=1e-6)
        assert len(list(iso.dir.glob("inputs-*"))) == 1       # the others were dropped, least recent first
        run = runner.run_case("emu", case, {"x": xs[0]}, context=context)       # dropped: written again, still right
        np.testing.assert_allclose(run["sum"], xs[0].sum(axis=1, dtype=np.float64), rtol=1e-6)
        assert written == ["in", "in", "in", "in"]
    finally:
        iso.close()
