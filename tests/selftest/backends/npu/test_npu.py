"""The npu backend against the pyxrt stand-in (raw pyxrt mode) and the IRON stand-in (IRON mode).

The stand-ins are injected per test (tests/selftest/fixtures/pyxrt_standin/npu_standin.py); they
log every pyxrt call, so these tests assert the call sequence the real bindings need, the verdict
for every command state, the reset after a hang, and that the GEMM numbers come back right.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

from accel_regress.golden import assert_close
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.golden.compare import Mismatch
from accel_regress import Crash, Hang
from accel_regress.core import registry, runner
from accel_regress.core.errors import CompileError
from accel_regress.backends.npu import device, manifest, states

_spec = importlib.util.spec_from_file_location(
    "npu_standin", Path(__file__).parents[2] / "fixtures" / "pyxrt_standin" / "npu_standin.py")
standin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(standin)

HERE = runner.Context()          # in this process, where the stand-ins are (the session's worker may predate them)
P4 = gemm.CI_CONFIGS[7]          # M64-K512-N256-m16-k64-n64-c4-bT-cF-P4: a 4-entry runlist
P1 = gemm.CI_CONFIGS[2]          # M192-K384-N64-m48-k96-n16-c4-bT-cT-P1: one kernel call, C col-major

HANG_STATES = ["ERT_CMD_STATE_TIMEOUT", "ERT_CMD_STATE_NORESPONSE", "ERT_CMD_STATE_ABORT"]
CRASH_STATES = ["ERT_CMD_STATE_ERROR", "ERT_CMD_STATE_SKERROR", "ERT_CMD_STATE_SKCRASHED",
                "ERT_CMD_STATE_NEW", "ERT_CMD_STATE_QUEUED", "ERT_CMD_STATE_SUBMITTED"]


@pytest.fixture
def raw(monkeypatch, tmp_path):
    log = standin.activate(monkeypatch, tmp_path)
    yield log
    standin.fresh()


@pytest.fixture
def iron(monkeypatch, tmp_path):
    log = standin.activate(monkeypatch, tmp_path, iron=True, artifacts=False)
    yield log
    standin.fresh()


def _case(cfg):
    case = gemm.make_case(cfg)
    return case, gemm.make_inputs(case)


def _check_numbers(out, cfg, inputs):
    """Every output against the torch reference within the GEMM error model (golden/)."""
    ref = gemm.product(inputs)
    tol = gemm.tolerance_for(inputs, ref, cfg)
    assert out["forward"].shape == (1, cfg.M, cfg.N)
    assert_close(out["forward"], ref[None], tol=tol[None], min_corr=gemm.MIN_CORR, name="forward")
    for i in range(cfg.partition_N):
        assert_close(out[f"C_{i}"][:cfg.M, :cfg.n_part], gemm.partition(ref, cfg, i),
                     tol=gemm.partition(tol, cfg, i), min_corr=gemm.MIN_CORR, name=f"C_{i}")


# --- availability and device facts ------------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("pyxrt") is not None, reason="pyxrt is installed here")
def test_unavailable_here_says_why():
    standin.fresh()
    reason = registry.get("npu").availability()
    assert "pyxrt is not importable" in reason and "No module named 'pyxrt'" in reason
    assert "source /opt/xilinx/xrt/setup.sh" in reason and "/dev/accel/accel0" in reason


def test_open_failure_gives_driver_text(raw, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_NO_DEVICE", "amdxdna: firmware load failed (-110)")
    reason = registry.get("npu").availability()
    assert "amdxdna: firmware load failed (-110)" in reason
    if not Path("/dev/accel/accel0").exists():
        assert "no NPU device node /dev/accel/accel0" in reason
    assert len(standin.calls(raw, "device")) == device.OPEN_RETRIES


def test_open_is_retried_and_then_kept(raw, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_OPEN_FAILURES", "2")
    backend = registry.get("npu")
    assert backend.availability() is None
    case, inputs = _case(P1)
    backend.run(case, inputs)
    backend.run(case, inputs)
    # two failed opens, one good one, then the same handle for every run
    assert [c["attempt"] for c in standin.calls(raw, "device")] == [1, 2, 3]


@pytest.mark.parametrize("name, kind", [("NPU Phoenix", "npu1"), ("RyzenAI-npu1", "npu1"),
                                        ("NPU Strix", "npu4"), ("RyzenAI-npu4", "npu4"),
                                        ("NPU Strix Halo", "npu5"), ("RyzenAI-npu5", "npu5"),
                                        ("NPU Krackan", "npu6"), ("RyzenAI-npu6", "npu6"),
                                        ("Alveo U250", None)])
def test_device_kind(name, kind):
    assert device.kind_of(name) == kind


def test_versions_name_device_and_stack(raw, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_DEVICE_NAME", "NPU Strix Halo")
    v = registry.get("npu").versions()
    assert v["npu_device_kind"] == "npu5" and v["npu_device_family"] == "Strix Halo"
    assert v["xrt_version"] == "2.19.0-standin" and v["driver_amdxdna"] == "2.19.0_standin"
    assert "npu_firmware" in v


# --- raw pyxrt mode: numbers and the call sequence -------------------------------------------

@pytest.mark.parametrize("cfg", [P4, P1, gemm.VOCAB_MINI], ids=lambda c: c.id)
def test_artifacts_mode_numbers(raw, cfg):
    case, inputs = _case(cfg)
    _check_numbers(registry.get("npu").run(case, inputs), cfg, inputs)


def test_call_sequence_runlist(raw):
    backend = registry.get("npu")
    case, inputs = _case(P4)
    backend.run(case, inputs)
    log = standin.calls(raw)
    kernel = next(c for c in log if c["call"] == "kernel")
    assert kernel["name"] == "MLIR_AIE"
    bos = {c["id"]: c for c in log if c["call"] == "bo"}
    insts = [b for b in bos.values() if b["flags"] == "cacheable"]
    assert len(insts) == 1 and insts[0]["group"] == 1                      # kernel.group_id(1)
    data = [b for b in bos.values() if b["flags"] == "host_only"]
    assert sorted(b["group"] for b in data) == [3] + [4] * 4 + [5] * 4     # A; B_i; C_i
    starts = standin.calls(raw, "run.start")
    assert len(starts) == 4
    for s in starts:
        assert s["opcode"] == 3 and s["insts"] == insts[0]["id"]
        assert s["n_insts"] == insts[0]["size"] // 4                       # words, not bytes
    assert [s["bos"][0] for s in starts] == [starts[0]["bos"][0]] * 4     # A shared
    assert len({s["bos"][2] for s in starts}) == 4                        # a C_i per entry
    order = [c["call"] for c in log]
    assert order.count("runlist.add") == 4 and order.count("runlist.execute") == 1
    first_start = order.index("runlist.execute")
    to_dev = [c for c in log[:first_start] if c["call"] == "bo.sync"]
    assert {c["id"] for c in to_dev} == set(bos) and {c["direction"] for c in to_dev} == {"XCL_BO_SYNC_BO_TO_DEVICE"}
    waits = [c for c in log if c["call"] == "runlist.wait" and log.index(c) > first_start]
    assert len(waits) == 1                    # runlist.wait(): pyxrt can take no timeout (below)
    c_ids = {s["bos"][2] for s in starts}
    from_dev = [c for c in log[first_start:] if c["call"] == "bo.sync"]
    assert {c["id"] for c in from_dev} == c_ids
    assert {c["direction"] for c in from_dev} == {"XCL_BO_SYNC_BO_FROM_DEVICE"}


def test_one_hardware_context_per_xclbin(raw):
    backend = registry.get("npu")
    for cfg in (P1, P1, P4, P1):
        backend.run(*_case(cfg))
    contexts = standin.calls(raw, "hw_context")
    assert len(contexts) == 2
    assert len({c["xclbin"] for c in contexts}) == 2
    assert len(standin.calls(raw, "register_xclbin")) == 2


def _xclbin_variants(n):
    """``n`` copies of P1's artifacts under distinct xclbin names (distinct hardware contexts)."""
    path = manifest.location()
    import json
    data = json.loads(path.read_text())
    entry = next(e for e in data["entries"] if e["case"] == gemm.make_case(P1).id)
    src = path.parent / entry["xclbin"]
    cases = []
    for i in range(n):
        (path.parent / f"v{i}.xclbin").write_text(src.read_text().replace('"name"', f'"variant": {i}, "name"'))
        data["entries"].append(dict(entry, case=f"{entry['case']}-v{i}", xclbin=f"v{i}.xclbin"))
        cases.append(gemm.make_case(P1).__class__(**{**gemm.make_case(P1).__dict__, "id": f"{entry['case']}-v{i}"}))
    path.write_text(json.dumps(data))
    return cases


@pytest.mark.parametrize("name, slots", [("NPU Phoenix", 6), ("NPU Strix", 16), ("NPU Krackan", 16)])
def test_context_cache_is_sized_per_generation(raw, monkeypatch, name, slots):
    from accel_regress.backends.npu import xrt_runner
    monkeypatch.setenv("PYXRT_STANDIN_DEVICE_NAME", name)
    backend = registry.get("npu")
    cases = _xclbin_variants(slots + 1)
    inputs = gemm.make_inputs(gemm.make_case(P1))
    for case in cases[:slots]:
        backend.run(case, inputs)
    assert len(xrt_runner._contexts) == slots and not standin.calls(raw, "hw_context.release")
    backend.run(cases[slots], inputs)
    released = standin.calls(raw, "hw_context.release")
    if name == "NPU Phoenix":                     # a full drain, never a single eviction
        assert len(released) == slots and len(xrt_runner._contexts) == 1
    else:                                         # the oldest one only
        assert len(released) == 1 and len(xrt_runner._contexts) == slots


def test_context_creation_retries_after_eviction(raw, monkeypatch):
    """Other processes hold 14 of Strix's 16 slots: the third context of ours needs one of ours freed."""
    from accel_regress.backends.npu import xrt_runner
    monkeypatch.setenv("PYXRT_STANDIN_HWCTX_HELD", "14")
    backend = registry.get("npu")
    cases = _xclbin_variants(3)
    inputs = gemm.make_inputs(gemm.make_case(P1))
    for case in cases:
        _check_numbers(backend.run(case, inputs), P1, inputs)
    assert len(standin.calls(raw, "hw_context.refused")) == 1
    assert len(standin.calls(raw, "hw_context.release")) == 1 and len(xrt_runner._contexts) == 2


def test_context_cache_size_from_environment(raw, monkeypatch):
    from accel_regress.backends.npu import xrt_runner
    monkeypatch.setenv("XRT_CONTEXT_CACHE_SIZE", "2")
    assert xrt_runner.cache_size("npu4") == 2
    monkeypatch.setenv("XRT_CONTEXT_CACHE_SIZE", "many")
    with pytest.raises(Crash, match="XRT_CONTEXT_CACHE_SIZE"):
        xrt_runner.cache_size("npu4")
    monkeypatch.delenv("XRT_CONTEXT_CACHE_SIZE")
    assert (xrt_runner.cache_size("npu1"), xrt_runner.cache_size("npu6"), xrt_runner.cache_size(None)) == (6, 16, 6)


def test_single_entry_is_one_bounded_kernel_call(raw):
    backend = registry.get("npu")
    case, inputs = _case(P1)
    backend.run(case, inputs)
    assert not standin.calls(raw, "runlist.execute")
    waits = standin.calls(raw, "run.wait")
    assert [w["timeout_ms"] for w in waits] == [backend.run_bound_ms(case)]


def test_runlist_is_one_runlist_and_its_wait_takes_no_timeout(raw):
    """Seed 000's bug lives in runlists: the entries are never split into separate calls, though
    pyxrt's runlist.wait(timeout) cannot be called (TypeError, no chrono caster)."""
    import pyxrt
    rl = pyxrt.runlist()
    with pytest.raises(TypeError, match=r"timeout: std::chrono::duration<long, std::ratio<1l, 1000l> >\) -> std::cv_status"):
        rl.wait(1000)
    case, inputs = _case(P4)
    _check_numbers(registry.get("npu").run(case, inputs), P4, inputs)
    assert len(standin.calls(raw, "runlist.execute")) == 1 and len(standin.calls(raw, "runlist.add")) == 4
    assert not standin.calls(raw, "run.wait")


def test_missing_sync_would_be_caught(raw, monkeypatch):
    """The stand-in keeps host and device memory apart: without the syncs the numbers are wrong."""
    from accel_regress.backends.npu import xrt_runner
    monkeypatch.setattr(xrt_runner, "_sync", lambda bo, direction: None)
    case, inputs = _case(P1)
    with pytest.raises(Crash, match="ERT_CMD_STATE_ERROR"):      # instructions never reached the device
        registry.get("npu").run(case, inputs)


@pytest.mark.parametrize("count", ["words", "bytes"])
def test_instruction_count_in_words_or_bytes(raw, count):
    """mlir-aie's own runtimes pass either (python/utils/xrt.py: len(insts); hostruntime.py:
    insts.nbytes), and both run on hardware: the stand-in takes both."""
    path = manifest.location()
    path.write_text(path.read_text().replace('"insts":', f'"insts_count": "{count}", "insts":'))
    case, inputs = _case(P1)
    _check_numbers(registry.get("npu").run(case, inputs), P1, inputs)
    insts = next(b for b in standin.calls(raw, "bo") if b["flags"] == "cacheable")
    assert standin.calls(raw, "run.start")[0]["n_insts"] == insts["size"] // (4 if count == "words" else 1)


def test_xrt_info_device_values_are_xrts():
    """xrt/xrt_device.h numbers aie=15, aie_shim=16, which pyxrt does not bind."""
    sys.path.insert(0, str(standin.PYXRT_DIR))
    try:
        standin.fresh()
        import pyxrt
        assert (pyxrt.xrt_info_device.host, pyxrt.xrt_info_device.dynamic_regions, pyxrt.xrt_info_device.vmr) == (14, 17, 18)
    finally:
        sys.path.remove(str(standin.PYXRT_DIR))
        standin.fresh()


# --- verdicts for every command state ---------------------------------------------------------

@pytest.mark.parametrize("cfg", [P1, P4], ids=["kernel-call", "runlist"])
@pytest.mark.parametrize("state", HANG_STATES + CRASH_STATES)
def test_command_state_verdict(raw, monkeypatch, cfg, state):
    monkeypatch.setenv("PYXRT_STANDIN_STATE", state)
    case, inputs = _case(cfg)
    run = runner.run_case("npu", case, inputs, context=HERE)
    expected = "HANG" if state in HANG_STATES else "CRASH"
    assert run.verdict == expected, run.error
    assert state in run.error.message
    assert run.error.detail.get("ert_cmd_state") == state or state in run.error.detail.get("exception", "")


def test_state_names_from_values():
    assert states.name_of(8) == "ERT_CMD_STATE_TIMEOUT"
    assert states.name_of("ert_cmd_state.ERT_CMD_STATE_NORESPONSE") == "ERT_CMD_STATE_NORESPONSE"
    assert states.verdict_for(4, what="x") is None
    assert isinstance(states.verdict_for(9, what="x"), Hang)
    assert isinstance(states.verdict_for(3, what="x"), Crash)      # RUNNING after a bounded wait


def _driver_timeout(tmp_path, seconds):
    param = device.SYS_MODULE / "amdxdna" / "parameters"
    param.mkdir(parents=True, exist_ok=True)
    (param / "timeout_in_sec").write_text(f"{seconds}\n")


@pytest.mark.parametrize("cfg", [P1, P4], ids=["kernel-call", "runlist"])
def test_hang_ended_by_the_driver_says_so(raw, monkeypatch, tmp_path, cfg):
    """amdxdna's watchdog (timeout_in_sec) ends a command long before our bound: the HANG names it."""
    _driver_timeout(tmp_path, 1)
    monkeypatch.setenv("PYXRT_STANDIN_STATE", "ERT_CMD_STATE_TIMEOUT")
    monkeypatch.setenv("PYXRT_STANDIN_ELAPSED_S", "0.7")
    run = runner.run_case("npu", *_case(cfg), context=HERE)
    assert run.verdict == "HANG"
    assert "amdxdna driver's own timeout (timeout_in_sec=1" in run.error.message
    assert run.error.detail["ended_by"] == "amdxdna timeout_in_sec=1"


def test_hang_at_our_bound_does_not_blame_the_driver(raw, monkeypatch, tmp_path):
    _driver_timeout(tmp_path, 0)                       # watchdog off
    monkeypatch.setenv("PYXRT_STANDIN_STATE", "ERT_CMD_STATE_TIMEOUT")
    run = runner.run_case("npu", *_case(P1), context=HERE)
    assert run.verdict == "HANG" and "driver" not in run.error.message
    assert states.ended_by_driver(3000, 10000, 2) and not states.ended_by_driver(3000, 10000, 0)
    assert not states.ended_by_driver(9900, 10000, 2) and not states.ended_by_driver(100, 10000, 2)


def test_bound_longer_than_the_driver_timeout_warns(raw, tmp_path):
    from accel_regress.backends.npu.backend import DriverTimeoutWarning
    _driver_timeout(tmp_path, 2)
    backend = registry.get("npu")
    case = gemm.make_case(gemm.VOCAB_MINI)
    assert backend.run_bound_ms(case) > 2000
    with pytest.warns(DriverTimeoutWarning, match="timeout_in_sec=2"):
        backend.timeout(case)
    assert backend.versions()["amdxdna_timeout_in_sec"] == "2"


def test_no_driver_parameter_no_warning(raw, recwarn):
    backend = registry.get("npu")
    backend.timeout(gemm.make_case(gemm.VOCAB_MINI))
    assert not [w for w in recwarn if "timeout_in_sec" in str(w.message)]
    assert backend.versions()["amdxdna_timeout_in_sec"] == "no such parameter"


def test_hang_resets_and_reopens_the_device(raw, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_STATE", "ERT_CMD_STATE_TIMEOUT")
    case, inputs = _case(P1)
    run = runner.run_case("npu", case, inputs, context=HERE)
    assert run.verdict == "HANG" and run.error.detail["needs_reset"]
    assert len(standin.calls(raw, "device")) == 2                 # opened, then reopened by reset()
    monkeypatch.setenv("PYXRT_STANDIN_STATE", "ERT_CMD_STATE_COMPLETED")
    run = runner.run_case("npu", case, inputs, context=HERE)
    assert run.verdict is None
    _check_numbers(run.outputs, P1, inputs)
    assert len(standin.calls(raw, "hw_context")) == 2             # a fresh context on the new handle


# --- bad input --------------------------------------------------------------------------------

def test_broken_manifest_is_a_crash_naming_file_and_field(raw):
    path = manifest.location()
    path.write_text(path.read_text().replace('"dtype": "bfloat16"', '"dtype": "bf17"', 1))
    case, inputs = _case(P1)
    run = runner.run_case("npu", case, inputs, context=HERE)
    assert run.verdict == "CRASH" and run.error.stage == "build"
    assert str(path) in run.error.message and "entries[0].buffers.A.dtype" in run.error.message


def test_no_manifest_entry_is_a_skip_with_reason(raw):
    case = gemm.make_case(gemm.GemmConfig(64, 64, 64, 16, 16, 16, 1, False, False, 1))
    reason = registry.get("npu").supports(case)
    assert "has no entry for gemm_partition_n/M64-K64-N64" in reason


def test_device_kinds_in_manifest(raw, monkeypatch):
    path = manifest.location()
    path.write_text(path.read_text().replace('"op":', '"device_kinds": ["npu1"], "op":'))
    case, inputs = _case(P1)
    run = runner.run_case("npu", case, inputs, context=HERE)
    assert run.verdict == "SKIP" and "built for npu1; this NPU is npu4" in run.skip


# --- the seed 000 bug on the stand-in device: the suite's check catches it ----------------------

def test_stale_dma_is_caught(raw, monkeypatch):
    monkeypatch.setenv("PYXRT_STANDIN_STALE_DMA", "1")
    case, inputs = _case(P4)
    out = registry.get("npu").run(case, inputs)
    ref = gemm.product(inputs)
    tol = gemm.tolerance_for(inputs, ref, P4)
    assert_close(out["C_0"][:P4.M, :P4.n_part], gemm.partition(ref, P4, 0), tol=gemm.partition(tol, P4, 0))
    with pytest.raises(Mismatch):
        assert_close(out["C_1"][:P4.M, :P4.n_part], gemm.partition(ref, P4, 1), tol=gemm.partition(tol, P4, 1),
                     min_corr=gemm.MIN_CORR)


# --- IRON mode --------------------------------------------------------------------------------

@pytest.mark.parametrize("cfg", [P4, P1, gemm.VOCAB_MINI, *gemm.K_TAIL_CONFIGS], ids=lambda c: c.id)
def test_iron_mode_numbers(iron, cfg):
    backend = registry.get("npu")
    case, inputs = _case(cfg)
    assert backend.supports(case) is None
    _check_numbers(backend.run(case, inputs), cfg, inputs)
    assert backend.versions()["iron_aiegemm"].startswith("seed 000's partition_N AIEGEMM")


@pytest.mark.parametrize("bug, caught", [("forward-shape", "forward"), ("stale-dma", "C_1"),
                                         ("padded-stride", "C_1")])
def test_iron_bugs_are_caught(iron, monkeypatch, bug, caught):
    monkeypatch.setenv("IRON_STANDIN_BUGS", bug)
    cfg = gemm.VOCAB_MINI
    case, inputs = _case(cfg)
    out = registry.get("npu").run(case, inputs)
    with pytest.raises((Mismatch, AssertionError)):
        _check_numbers(out, cfg, inputs) if caught == "forward" else assert_close(
            out["C_1"][:cfg.M, :cfg.n_part], gemm.partition(gemm.product(inputs), cfg, 1),
            tol=gemm.partition(gemm.tolerance_for(inputs, gemm.product(inputs), cfg), cfg, 1),
            min_corr=gemm.MIN_CORR)
    assert_close(out["C_0"][:cfg.M, :cfg.n_part], gemm.partition(gemm.product(inputs), cfg, 0),
                 tol=gemm.partition(gemm.tolerance_for(inputs, gemm.product(inputs), cfg), cfg, 0))


@pytest.mark.parametrize("state", HANG_STATES + ["ERT_CMD_STATE_ERROR"])
def test_iron_mode_state_verdicts(iron, monkeypatch, state):
    monkeypatch.setenv("IRON_STANDIN_STATE", state)
    run = runner.run_case("npu", *_case(P1), context=HERE)
    assert run.verdict == ("HANG" if state in HANG_STATES else "CRASH") and state in run.error.message


@pytest.mark.parametrize("cfg", [P1, P4], ids=["standalone-P1", "P4"])
def test_iron_later_revision_buffer_names(iron, monkeypatch, cfg):
    """The later AIEGEMM calls partition 0's C 'C' when partition_N == 1: ask the operator."""
    monkeypatch.setenv("IRON_STANDIN_REVISION", "later")
    standin.fresh()
    case, inputs = _case(cfg)
    backend = registry.get("npu")
    _check_numbers(backend.run(case, inputs), cfg, inputs)
    assert backend.versions()["iron_aiegemm"].startswith("later partition_N AIEGEMM")


def test_iron_reset_gives_the_next_case_a_fresh_device(iron, monkeypatch):
    """IRON's reset() is a no-op and mlir-aie keeps the handle for the process: reset must clear it."""
    monkeypatch.setenv("IRON_STANDIN_STATE", "ERT_CMD_STATE_TIMEOUT")
    backend = registry.get("npu")
    case, inputs = _case(P1)
    with pytest.raises(Hang):
        backend.run(case, inputs)
    backend.reset()
    monkeypatch.delenv("IRON_STANDIN_STATE")
    _check_numbers(backend.run(case, inputs), P1, inputs)
    used = sys.modules["iron.operators.gemm.op"].DEVICES_USED
    assert len(used) == 2 and used[0] != used[1]


def test_iron_compile_error(iron, monkeypatch):
    monkeypatch.setenv("IRON_STANDIN_COMPILE_ERROR", "aiecc: error: 'aie.objectfifo' op exceeds memory")
    run = runner.run_case("npu", *_case(P1), context=HERE)
    assert isinstance(run.error, CompileError) and "exceeds memory" in run.error.detail["diagnostic"]


def test_iron_without_partition_n_is_a_skip(iron, monkeypatch):
    import iron.operators.gemm.op as op
    monkeypatch.delattr(op, "AIEGEMM")
    reason = registry.get("npu").supports(gemm.make_case(P1))
    assert "no AIEGEMM" in reason


def test_auto_mode_prefers_iron_and_falls_back_to_artifacts(monkeypatch, tmp_path):
    standin.activate(monkeypatch, tmp_path, iron=True, artifacts=True)
    monkeypatch.setenv("ACCEL_NPU_MODE", "auto")
    backend = registry.get("npu")
    assert backend._choose(gemm.make_case(P1))[0] == "iron"
    for name in [n for n in sys.modules if n == "iron" or n.startswith("iron.")]:
        del sys.modules[name]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if "iron_standin" not in p])
    assert backend._choose(gemm.make_case(P1))[0] == "artifacts"
    standin.fresh()
