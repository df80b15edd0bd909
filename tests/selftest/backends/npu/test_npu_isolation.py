"""The npu backend under the isolation layer: a wait that never returns, device locking under
``-n 2``, and the ``supported_devices`` marker, with the pyxrt stand-in."""
import importlib.util
import textwrap
import time
from pathlib import Path

import pytest

from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.core import runner

_spec = importlib.util.spec_from_file_location(
    "npu_standin", Path(__file__).parents[2] / "fixtures" / "pyxrt_standin" / "npu_standin.py")
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)

pytest_plugins = ["pytester"]

isolation = pytest.importorskip("accel_regress.core.isolation", reason="the isolation layer is not on this checkout")

P1 = gemm.CI_CONFIGS[2]


@pytest.fixture
def raw(monkeypatch, tmp_path):
    log = standin.activate(monkeypatch, tmp_path)
    yield log
    standin.fresh()


@pytest.mark.timeout(120)
def test_wait_that_never_returns_is_a_hang_then_reset(raw, monkeypatch, tmp_path):
    """run.wait blocks in native code holding the GIL; only the process bound can end it."""
    flag = tmp_path / "hang"
    flag.touch()
    monkeypatch.setenv("PYXRT_STANDIN_HANG_IF", str(flag))
    iso = isolation.Isolation(root=tmp_path)
    context = runner.Context(isolation=iso)
    try:
        case = gemm.make_case(P1)
        inputs = gemm.make_inputs(case)
        start = time.monotonic()
        run = runner.run_case("npu", case, inputs, timeout_s=3.0, context=context)     # as --case-timeout 3
        took = time.monotonic() - start
        assert run.verdict == "HANG", (run.error, run.skip)
        assert took < 60, took
        assert "_block_forever" in run.error.detail.get("stack", "") or "wait" in run.error.detail.get("stack", "")
        assert not run.error.detail.get("reset"), run.error.detail.get("reset")   # reset() succeeded
        starts = standin.calls(raw, "run.start")
        assert len(starts) == 1
        # the reset hook ran in a fresh worker and reopened the device there
        opens = standin.calls(raw, "device")
        assert len({o["pid"] for o in opens if o["pid"] != starts[0]["pid"]}) >= 1
        flag.unlink()
        run = runner.run_case("npu", case, inputs, timeout_s=30.0, context=context)
        assert run.verdict is None, (run.error, run.skip)
        assert run.outputs["forward"].shape == (1, P1.M, P1.N)
    finally:
        iso.close()


LOCKING_TESTS = textwrap.dedent('''
    import pytest
    from accel_regress.families.gemm_partition_n import golden as gemm

    CFG = gemm.CI_CONFIGS[2]

    @pytest.mark.parametrize("i", range(8))
    def test_run(hw, i):
        case = gemm.make_case(CFG, i)
        run = hw.run(case, gemm.make_inputs(case))
        assert run["forward"].shape == (1, CFG.M, CFG.N)
''')


@pytest.mark.timeout(300)
def test_each_xdist_worker_owns_one_npu(raw, pytester, tmp_path):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_lock=LOCKING_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "accel-regress", "-n", "2", "--isolation", "none", "--hw", "npu", "--devices", "npu=0,1", "--device-lock-dir", str(tmp_path / "locks"),
        "-p", "no:cacheprovider", "--report-dir", str(tmp_path / "reports"), "-q")
    result.assert_outcomes(passed=8)
    starts = standin.calls(raw, "run.start")
    runners = {s["pid"] for s in starts}
    opened = {}
    for o in standin.calls(raw, "device"):
        if o["pid"] in runners:
            opened.setdefault(o["pid"], set()).add(o["index"])
    assert all(len(ids) == 1 for ids in opened.values()), opened      # one device per process
    assert {i for ids in opened.values() for i in ids} <= {0, 1}
    assert len(runners) == 2                                            # both workers ran cases
    assert len({next(iter(ids)) for ids in opened.values()}) == 2         # never on the same NPU


MARKER_TESTS = textwrap.dedent('''
    import pytest
    from accel_regress.families.gemm_partition_n import golden as gemm

    CFG = gemm.CI_CONFIGS[2]

    @pytest.mark.supported_devices("npu1")
    def test_phoenix_only(hw):
        case = gemm.make_case(CFG)
        assert hw.run(case, gemm.make_inputs(case))["forward"].shape == (1, CFG.M, CFG.N)

    @pytest.mark.supported_devices("npu4", "npu5", "npu6")
    def test_aie2p_only(hw):
        case = gemm.make_case(CFG)
        assert hw.run(case, gemm.make_inputs(case))["forward"].shape == (1, CFG.M, CFG.N)
''')


@pytest.mark.timeout(300)
def test_supported_devices_marker(raw, pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_DEVICE_NAME", "NPU Krackan")
    pytester.makepyfile(test_marker=MARKER_TESTS)
    result = pytester.runpytest_subprocess("--hw", "npu,emu", "--isolation", "none", "-rs", "-p", "no:cacheprovider",
                                           "--report-dir", str(tmp_path / "reports"))
    result.assert_outcomes(passed=3, skipped=1)     # emu is not an NPU: the marker does not apply
    result.stdout.fnmatch_lines(["*npu: test runs on npu1 only; this device is npu6*"])
