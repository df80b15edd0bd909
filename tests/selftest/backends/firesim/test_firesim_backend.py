"""The firesim backend (issue 5 item 6) end to end against the stand-in ``firesim`` manager.

The stand-in (fixtures/firesim/bin/firesim) takes the real command line and writes a real results
folder; the backend under test is the real one, with only the harness builder replaced by one
that writes a stand-in "boot binary" (the stand-in cannot simulate; it replays a UART fixture).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from accel_regress.golden.case import Case
from accel_regress.core.errors import Crash, Hang, Unsupported
from accel_regress.backends.firesim import FireSimBackend, Incomplete

yaml = pytest.importorskip("yaml", reason="the firesim backend reads config_runtime.yaml: the extra accel-regress[firesim]")

FIXTURES = Path(__file__).parents[2] / "fixtures" / "firesim"
BIN = FIXTURES / "bin"

RUNTIME = {
    "run_farm": {"base_recipe": "run-farm-recipes/externally_provisioned.yaml"},
    "metasimulation": {"metasimulation_enabled": False, "metasimulation_host_simulator": "verilator",
                       "metasimulation_only_plusargs": "+fesvr-step-size=128 +max-cycles=100000000",
                       "metasimulation_only_vcs_plusargs": "+vcs+initreg+0 +vcs+initmem+0"},
    "target_config": {"topology": "no_net_config", "no_net_num_nodes": 1, "link_latency": 6405,
                      "switching_latency": 10, "net_bandwidth": 200, "profile_interval": -1,
                      "default_hw_config": "firesim_rocket_saturn_singlecore", "plusarg_passthrough": ""},
    "workload": {"workload_name": "null.json", "terminate_on_completion": False, "suffix_tag": None},
}


def case(name="layernorm-64x128", **params):
    base = {"kind": "layernorm", "shape": [64, 128], "dtype": "f32", "variant": "+v", "vlen": 256,
            "has_f32_reduction": True}
    return Case.make("f32_reduction", name, dict(base, **params))


class StandInBuilder:
    """build_harness's signature; writes the stand-in spec for the case as its "boot binary", and
    says how much it prints (as BareMetalBuilder.console_chars does from the schedule)."""

    def __init__(self, specs):
        self.specs, self.calls = specs, []

    def console_chars(self, case, variant):
        spec = self.specs[case.id]
        if isinstance(spec, dict) and "uart" in spec:
            return len((FIXTURES / spec["uart"]).read_bytes())
        return 100

    def __call__(self, case, variant, out_dir, uart_outputs):
        self.calls.append((case.id, variant, uart_outputs))
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / "mt.elf"
        spec = self.specs[case.id]
        path.write_bytes(spec if isinstance(spec, bytes) else b"#STANDIN-FIRESIM" + json.dumps(spec).encode())
        return path


@pytest.fixture
def deploy(tmp_path):
    d = tmp_path / "deploy"
    (d / "workloads").mkdir(parents=True)
    (d / "config_runtime.yaml").write_text(yaml.safe_dump(RUNTIME, sort_keys=False))
    return d


@pytest.fixture
def env(deploy):
    return {"ACCEL_FIRESIM_DEPLOY_DIR": str(deploy), "FIRESIM_SOURCED": "1",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "ACCEL_FIRESIM_MAX_CYCLES": "5000000",
            "ACCEL_FIRESIM_WALL_S": "60", "ACCEL_FIRESIM_INFRASETUP_S": "60",
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HOME": os.environ.get("HOME", "/tmp")}


def backend(env, specs, **extra):
    return FireSimBackend(builder=StandInBuilder(specs), env=dict(env, **extra))


def run(env, spec, **extra):
    c = case()
    return backend(env, {c.id: spec}, **extra).run(c, {})


def test_availability_names_what_is_missing(env, deploy):
    assert backend(env, {}).availability() is None
    no_dir = {k: v for k, v in env.items() if k != "ACCEL_FIRESIM_DEPLOY_DIR"}
    assert "ACCEL_FIRESIM_DEPLOY_DIR is not set" in FireSimBackend(builder=StandInBuilder({}), env=no_dir).availability()
    assert "FIRESIM_SOURCED" in FireSimBackend(builder=StandInBuilder({}),
                                               env={k: v for k, v in env.items() if k != "FIRESIM_SOURCED"}).availability()
    assert "not on PATH" in backend(env, {}, PATH="/nonexistent").availability()
    assert "no workloads/ folder" in backend(env, {}, ACCEL_FIRESIM_DEPLOY_DIR=str(deploy.parent)).availability()
    (deploy / "config_runtime.yaml").unlink()
    assert "config_runtime.yaml" in backend(env, {}).availability()


def test_availability_without_the_harness_builder(env):
    reason = FireSimBackend(env=env).availability()
    try:
        from accel_regress.backends.qemu_rvv.build import toolchain_missing
    except Exception:
        assert "accel_regress.backends.qemu_rvv.build.build_harness" in reason
    else:
        # the default builder makes the bare-metal image: available once that build is possible
        missing = toolchain_missing("baremetal")
        assert reason == (None if missing is None else
                          f"the boot binary (the bare-metal harness) cannot be built here: {missing}")


def test_supports_only_the_micro_tests(env):
    assert backend(env, {}).supports(case()) is None
    assert "f32_reduction" in backend(env, {}).supports(Case.make("gemm_partition_n", "x", {}))


def test_pass_returns_the_printed_outputs(env, deploy):
    b = backend(env, {case().id: {"uart": "uart/pass_outputs.txt", "end": "passed"}})
    out = b.run(case(), {})
    assert set(out) == {"y", "idx"}
    np.testing.assert_array_equal(out["y"], (np.arange(6, dtype=np.float32) / 4 - 0.5).reshape(2, 3))
    assert out["y"].dtype == np.float32
    np.testing.assert_array_equal(out["idx"], np.array([3, -1, 7, 0], np.int32))
    assert b._builder.calls == [(case().id, "+v", True)]
    assert (b.last_report["log_verdict"], b.last_report["cycles"]) == ("pass", 13000)
    # FireSim's results folder is kept; our generated workload inputs are removed
    folders = list((deploy / "results-workload").iterdir())
    assert len(folders) == 1 and (folders[0] / "job0" / "uartlog").is_file()
    assert (folders[0] / "job0" / "HW_CFG_SUMMARY").is_file()
    assert [p.name for p in (deploy / "workloads").iterdir()] == []


def test_workload_json_and_runtime_config(env, deploy):
    c = case()
    b = backend(env, {c.id: {"uart": "uart/pass_outputs.txt", "end": "passed"}}, ACCEL_FIRESIM_KEEP="1")
    b.run(c, {})
    (wl_file,) = (deploy / "workloads").glob("*.json")
    wl = json.loads(wl_file.read_text())
    assert wl["benchmark_name"] == wl_file.stem
    assert wl["common_rootfs"] is None and "common_rootfs" in wl
    assert wl["common_simulation_outputs"] == ["uartlog", "metasim_stderr.out", "heartbeat.csv"]
    assert wl["post_run_hook"] is None
    assert [j["name"] for j in wl["workloads"]] == ["job0"]
    assert (deploy / "workloads" / wl["benchmark_name"] / wl["common_bootbinary"]).is_file()
    (folder,) = (deploy / "results-workload").iterdir()
    assert folder.name.endswith("-" + wl["benchmark_name"])
    assert time.strptime(folder.name[:20], "%Y-%m-%d--%H-%M-%S")


def test_hang_is_hang_with_the_dispatch_and_the_cycle_bound_reaches_the_driver(env):
    with pytest.raises(Hang) as info:
        run(env, {"uart": "uart/hang_d1.txt", "end": "max-cycles"})
    assert "d=1" in info.value.message
    assert "simulation timed out after 5000000 cycles" in info.value.detail["driver"]
    assert "[dn] d=1 wg=2" in info.value.detail["uartlog_tail"]


def test_metasimulation_reads_the_driver_line_from_metasim_stderr(env):
    # the user's metasim plusargs carry +max-cycles=100000000; ours must be the one in force
    with pytest.raises(Hang) as info:
        run(env, {"uart": "uart/hang_d1.txt", "end": "max-cycles"}, ACCEL_FIRESIM_METASIM="1")
    assert "after 5000000 cycles" in info.value.detail["driver"]
    out = run(env, {"uart": "uart/pass_outputs.txt", "end": "passed"}, ACCEL_FIRESIM_METASIM="1")
    assert set(out) == {"y", "idx"}


@pytest.mark.parametrize("fixture,log_verdict", [("uart/progress_d0.txt", "progress"),
                                                  ("uart/warmup_done.txt", "warmup"),
                                                  ("uart/stopped_after_iter1.txt", "pass")])
def test_stopped_while_advancing_is_incomplete_not_hang(env, fixture, log_verdict):
    with pytest.raises(Incomplete) as info:
        run(env, {"uart": fixture, "end": "max-cycles"})
    assert not isinstance(info.value, Hang)
    assert info.value.verdict == "FAIL" and info.value.stage == "run"
    assert info.value.detail["log_verdict"] == log_verdict
    assert "not a hang" in info.value.message and "+max-cycles" in info.value.message


def test_early_and_fail_are_crash_with_the_driver_code(env):
    with pytest.raises(Crash) as info:
        run(env, {"uart": "uart/early_nothing.txt", "end": "failed:1"})
    assert info.value.detail["code"] == 1 and "before the first dispatch" in info.value.message
    with pytest.raises(Crash) as info:
        run(env, {"uart": "uart/fail_d0.txt", "end": "failed:3"})
    assert info.value.detail["code"] == 3 and "exited with code 3" in info.value.message
    with pytest.raises(Crash) as info:
        run(env, {"uart": "uart/early_nothing.txt", "end": "max-cycles"})
    assert info.value.detail["log_verdict"] == "early"


def test_wall_clock_bound_stops_a_manager_that_never_returns(env):
    start = time.monotonic()
    with pytest.raises(Incomplete) as info:
        run(env, {"hang": "manager"}, ACCEL_FIRESIM_WALL_S="2", ACCEL_FIRESIM_COPYBACK_S="3")
    assert time.monotonic() - start < 60
    assert "wall-clock bound of 2 s" in info.value.message and "no uartlog" in info.value.message
    assert "no evidence of a hang" in info.value.message
    assert info.value.detail["kill"] == "exit 0" and "stopped" in info.value.detail["runworkload_after_kill"]


def test_wall_clock_bound_kills_the_simulation_first_so_the_partial_uartlog_comes_back(env):
    """`firesim kill` while runworkload still polls: runworkload copies the logs back (issue 13).
    Stopping runworkload first (the old order) brought nothing back."""
    with pytest.raises(Incomplete) as info:
        run(env, {"hang": True, "uart": "uart/hang_d1.txt", "cycles": 1000}, ACCEL_FIRESIM_WALL_S="2")
    d = info.value.detail
    assert "[dn] d=1 wg=2" in d["uartlog_tail"] and d["runworkload_after_kill"] == "returned 0"
    assert d["log_verdict"] == "stopped" and "advancing" in d["heartbeat"]
    assert "no evidence of a hang" in info.value.message


def test_heartbeat_far_past_the_same_dispatch_is_a_hang(env):
    """heartbeat.csv as progress evidence: workgroups of d=0 took 41000 cycles, the open one has been
    running for billions of target cycles by the time the wall clock ends it."""
    with pytest.raises(Hang) as info:
        run(env, {"hang": True, "uart": "uart/progress_d0.txt", "cycles": 10**9}, ACCEL_FIRESIM_WALL_S="2")
    d = info.value.detail
    assert (d["hang_evidence"], d["hang_of"]) == ("cycles", "target")
    assert "more than 100x its longest earlier completion (41000 cycles)" in info.value.message


def test_simulator_deadlock_is_a_hang_of_the_simulator_not_a_crash(env):
    with pytest.raises(Hang) as info:
        run(env, {"uart": "uart/hang_d1.txt", "end": "deadlock:1421084536"})
    d = info.value.detail
    assert (d["log_verdict"], d["hang_evidence"], d["hang_of"]) == ("hang", "deadlock", "simulator")
    assert "simulator deadlock" in info.value.message and "not the target's" in info.value.message
    assert "Simulator deadlock detected at target cycle 1421084536" in d["deadlock"]


def test_runtime_config_carries_one_cycle_bound_and_this_workload():
    from accel_regress.backends.firesim.workload import runtime_config
    base = dict(RUNTIME, target_config=dict(RUNTIME["target_config"], plusarg_passthrough="+a=1 +max-cycles=7",
                                            topology="example_8config", no_net_num_nodes=4))
    cfg = runtime_config(base, "accel-x.json", 123, True)
    assert cfg["workload"]["workload_name"] == "accel-x.json" and cfg["workload"]["suffix_tag"] is None
    assert cfg["target_config"]["plusarg_passthrough"] == "+a=1 +max-cycles=123"
    # the user's metasim step size stays unless we set ours
    assert cfg["metasimulation"]["metasimulation_only_plusargs"] == "+fesvr-step-size=128"
    assert cfg["metasimulation"]["metasimulation_enabled"] is True
    # one node, whatever the user's topology
    assert (cfg["target_config"]["topology"], cfg["target_config"]["no_net_num_nodes"]) == ("no_net_config", 1)
    # the run farm outlives each case
    assert runtime_config(dict(RUNTIME, workload=dict(RUNTIME["workload"], terminate_on_completion=True)),
                          "w.json", 5, None)["workload"]["terminate_on_completion"] is False
    assert base["target_config"]["plusarg_passthrough"] == "+a=1 +max-cycles=7"   # the user's is untouched
    assert runtime_config(RUNTIME, "w.json", 5, None)["metasimulation"]["metasimulation_enabled"] is False
    cfg = runtime_config(base, "w.json", 5, None, fesvr_step_size=300)
    assert cfg["target_config"]["plusarg_passthrough"] == "+a=1 +max-cycles=5 +fesvr-step-size=300"
    assert cfg["metasimulation"]["metasimulation_only_plusargs"] == ""


def test_max_cycles_above_int_max_is_refused(env):
    """systematic_scheduler.cc:11 reads +max-cycles with atoi: 3e9 would wrap to no bound at all."""
    with pytest.raises(Unsupported, match=r"above 2147483647.*atoi.*wraps it to -1294967296") as info:
        run(env, {}, ACCEL_FIRESIM_MAX_CYCLES="3000000000")
    assert "use at most 2147483647" in str(info.value)
    assert backend(env, {}, ACCEL_FIRESIM_MAX_CYCLES="2147483647").settings().max_cycles == 2**31 - 1


def test_console_fits_the_cycle_budget(env, deploy):
    """FireSim serves the HTIF console once per +fesvr-step-size cycles (2004765 by default): at that rate
    a 5M-cycle budget prints two characters. The backend sets the step so the console fits."""
    c = case()
    b = backend(env, {c.id: {"uart": "uart/pass_outputs.txt", "end": "passed"}}, ACCEL_FIRESIM_KEEP="1")
    out = b.run(c, {})
    assert set(out) == {"y", "idx"}
    step = b.last_report["fesvr_step_size"]
    chars = b.last_report["console_chars"]
    assert 128 <= step and 11 * step * chars <= 0.25 * 5_000_000
    (wl_file,) = (deploy / "workloads").glob("*.json")
    assert "heartbeat.csv" in json.loads(wl_file.read_text())["common_simulation_outputs"]

    class NoConsoleInfo(StandInBuilder):
        console_chars = None
    # the old behaviour: no step size, FireSim's default -- the console runs out of cycles
    b = FireSimBackend(builder=NoConsoleInfo({c.id: {"uart": "uart/pass_outputs.txt", "end": "passed"}}), env=env)
    with pytest.raises((Incomplete, Crash)) as info:
        b.run(c, {})
    assert b.last_report["fesvr_step_size"] == 2004765
    assert "simulation timed out after 5000000 cycles" in info.value.detail["driver"]


def test_a_console_that_cannot_fit_is_refused():
    from accel_regress.backends.firesim import console
    assert console.step_size(None, 10**9) == console.DEFAULT_STEP
    assert console.step_size(10, 2_000_000_000) == console.DEFAULT_STEP
    assert console.step_size(65_600, 2_000_000_000) == int(0.25 * 2e9) // (11 * 65_600)
    with pytest.raises(console.ConsoleTooLong, match="raise ACCEL_FIRESIM_MAX_CYCLES to at least"):
        console.step_size(10**6, 100_000_000)


def test_bad_out_line_names_the_file_and_line(env):
    with pytest.raises(Crash) as info:
        run(env, {"uart": "uart/bad_out_hex.txt", "end": "passed"})
    assert "uartlog line" in info.value.message and "bad [out] line for 'y'" in info.value.message
    assert "results-workload" in info.value.message
    with pytest.raises(Crash, match="dtype 'bf16'"):
        run(env, {"uart": "uart/bad_out_dtype.txt", "end": "passed"})
    with pytest.raises(Crash, match=r"\[done\] but no \[out\]"):
        run(env, {"uart": "uart/done_no_out.txt", "end": "passed"})
    with pytest.raises(Crash, match=r"never printed \[done\]"):
        run(env, {"uart": "uart/stopped_after_iter1.txt", "end": "passed"})


def test_manager_failure_without_uartlog_is_crash_naming_the_folder(env, tmp_path):
    # a real bare-metal ELF: the stand-in cannot simulate it and exits 1 after making the folder
    with pytest.raises(Crash) as info:
        run(env, _elf(tmp_path / "bare.elf", 0x8000_0000).read_bytes())
    assert "runworkload exited 1" in info.value.message and "no uartlog" in info.value.message
    assert "cannot simulate a real boot binary" in info.value.detail["manager_log"]


def test_infrasetup_cannot_be_turned_off(env):
    """Simulations run from sim_slot_N and only infrasetup copies the binary there: without it a case
    runs the previous case's binary (issue 13)."""
    with pytest.raises(Unsupported, match=r"ACCEL_FIRESIM_INFRASETUP=0 is refused: .*sim_slot_N.*previous case's binary"):
        run(env, {"uart": "uart/pass_outputs.txt", "end": "passed"}, ACCEL_FIRESIM_INFRASETUP="0")


def test_each_case_runs_its_own_binary_from_the_slot(env, deploy):
    a, b = case("a"), case("b")
    fs = backend(env, {a.id: {"uart": "uart/pass_outputs.txt", "end": "passed"},
                       b.id: {"uart": "uart/fail_d0.txt", "end": "failed:3"}})
    fs.run(a, {})
    slot_a = fs.last_report["slot_bootbinary"]
    with pytest.raises(Crash, match="exited with code 3"):
        fs.run(b, {})
    slot_b = fs.last_report["slot_bootbinary"]
    # distinct names in the slot (<job>-<sha256 prefix>-<name>), both present: neither can stand for the other
    assert slot_a != slot_b and slot_a.startswith("job0-") and fs.last_report["boot_sha256"][:16] in slot_b
    slot = deploy / ".standin-runfarm" / "sim_slot_0"
    assert (slot / slot_a).is_file() and (slot / slot_b).is_file()


def test_bad_runtime_config_is_named(env, deploy):
    (deploy / "config_runtime.yaml").write_text("workload: {workload_name: x.json}\n")
    with pytest.raises(Crash, match=r"config_runtime\.yaml: cannot use this runtime config: .*target_config"):
        run(env, {"uart": "uart/pass_outputs.txt", "end": "passed"})


def test_settings_errors_are_unsupported_at_run(env):
    with pytest.raises(Unsupported, match="ACCEL_FIRESIM_MAX_CYCLES"):
        run(env, {}, ACCEL_FIRESIM_MAX_CYCLES="lots")


def _elf(path, vaddr, machine=243):
    import struct
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<HHI", header, 16, 2, machine, 1)
    struct.pack_into("<QQQ", header, 24, vaddr, 64, 0)          # entry, phoff, shoff
    struct.pack_into("<HHH", header, 52, 64, 56, 1)             # ehsize, phentsize, phnum
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, vaddr, vaddr, 0x100, 0x100, 0x1000)
    path.write_bytes(bytes(header) + phdr)
    return path


def test_boot_binary_check(tmp_path):
    from accel_regress.backends.firesim.bootbin import unbootable_reason
    assert unbootable_reason(_elf(tmp_path / "bare.elf", 0x8000_0000)) is None
    assert "Linux user-mode executable" in unbootable_reason(_elf(tmp_path / "user.elf", 0x10000))
    assert "not RISC-V" in unbootable_reason(_elf(tmp_path / "x86.elf", 0x8000_0000, machine=62))
    assert unbootable_reason(tmp_path / "missing.elf").endswith("No such file or directory")
    (tmp_path / "spec").write_bytes(b"#STANDIN-FIRESIM{}")
    assert unbootable_reason(tmp_path / "spec") is None


def test_a_user_mode_harness_is_refused_before_any_run(env, deploy, tmp_path):
    user = _elf(tmp_path / "user.elf", 0x10000)
    with pytest.raises(Unsupported, match="FireSim cannot boot"):
        run(env, user.read_bytes())
    assert not (deploy / "results-workload").exists()


def test_versions_name_the_driver_era():
    from accel_regress.backends.firesim.backend import driver_era
    assert "simulation timed out" in driver_era("1.20.1-145-gbe558e3f9")
    assert "+max_cycles specified timeout" in driver_era("1.15.1")
    assert "(timeout)" in driver_era("1.12.0-3-gabc")
    assert driver_era("be558e3").startswith("unknown")


def test_a_stale_metasim_stderr_in_the_slot_is_not_read_in_fpga_mode(env):
    """The slot keeps files between runs and runworkload copies every listed output it finds there
    (firesim_topology_elements.py:553-567): after a metasimulation, an FPGA run brings back the old
    metasim_stderr.out with its PASSED line. Only a metasimulation's own is read."""
    c = case()
    fs = backend(env, {c.id: {"uart": "uart/pass_outputs.txt", "end": "passed"}}, ACCEL_FIRESIM_METASIM="1")
    fs.run(c, {})
    fs = backend(env, {c.id: {"uart": "uart/hang_d1.txt", "end": "max-cycles"}}, ACCEL_FIRESIM_METASIM="0")
    with pytest.raises(Hang) as info:
        fs.run(c, {})
    assert (Path(info.value.detail["results"]) / "job0" / "metasim_stderr.out").is_file()   # it did come back
    assert "simulation timed out" in info.value.detail["driver"]


def test_without_pyyaml_it_is_unavailable_naming_the_extra(env, monkeypatch):
    """PyYAML is the extra accel-regress[firesim] (issue 48), not a requirement of every installation."""
    monkeypatch.setitem(sys.modules, "yaml", None)          # import yaml: ImportError, as when not installed
    reason = FireSimBackend(builder=StandInBuilder({}), env=env).availability()
    assert reason == "PyYAML is missing (the runtime config is YAML): the extra accel-regress[firesim], or pip install pyyaml"
