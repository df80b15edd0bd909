"""The bare-metal harness image (what the firesim backend boots), run for real under
qemu-system-riscv64's ``spike`` machine, which implements HTIF as FireSim's driver does.

Each case: IREE compiles the program for riscv64, ``build_harness(..., target="baremetal")`` links
it with our crt0, HTIF console and picolibc at 0x80000000, qemu boots it (``-bios none -kernel``:
the ELF is loaded where it is linked and hart 0 starts at the DRAM base), and the console is read
back with the FireSim backend's own reader (hardware/backends/firesim/uart.py) and compared with the
float64 golden within the f32 error model of families/f32_reduction/golden.py. The HTIF exit code is qemu's
exit status (0: the harness returned 0; FireSim's driver would print ``*** PASSED ***``).

The checks are shown to bite: the vector build on a core without V traps (illegal instruction)
and must exit 4 with an ``[err] trap`` line, and outputs compared against the golden of other
inputs must fail.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from accel_regress.golden import assert_close
from accel_regress.families.f32_reduction import golden as R
from accel_regress.golden.compare import Mismatch
from accel_regress.core.errors import CompileError
from accel_regress.backends.firesim import bootbin, uart

QEMU_SYSTEM = "qemu-system-riscv64"
QEMU_APT = "apt-get install -y qemu-system-misc"
BOUND_S = 60.0          # one run takes well under a second; a hang must not stall the suite

CASES = [("row_sum", "v"), ("row_sum", "novec"), ("softmax", "v"), ("softmax", "novec"), ("erf", "v")]


def _missing() -> str | None:
    if shutil.which(QEMU_SYSTEM) is None:
        return f"{QEMU_SYSTEM} is missing (the spike machine runs the bare-metal image): {QEMU_APT}"
    from accel_regress.backends.qemu_rvv import build
    reason = build.toolchain_missing("baremetal")
    if reason:
        return reason
    from accel_regress.toolchains.iree import compiler
    return compiler.availability()


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "")


def qemu_argv(image, variant: str, vlen: int = 256) -> list[str]:
    from accel_regress.backends.qemu_rvv import qemu_cpu
    return [QEMU_SYSTEM, "-machine", "spike", "-cpu", qemu_cpu(variant, vlen), "-m", "256M", "-bios", "none",
            "-kernel", str(image), "-display", "none", "-monitor", "none", "-serial", "stdio"]


def boot(image, variant: str) -> tuple[int, str]:
    """Run the image to its HTIF exit; (exit code, console text). Killed at BOUND_S."""
    try:
        proc = subprocess.run(qemu_argv(image, variant), stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=BOUND_S)
    except subprocess.TimeoutExpired as exc:
        text = (exc.stdout or b"").decode("utf-8", "replace")
        pytest.fail(f"{image}: no HTIF exit within {BOUND_S:.0f} s; console tail: {text[-500:]!r}")
    return proc.returncode, proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Built lazily, once per (kind, variant) for the module."""
    from accel_regress.backends.qemu_rvv import build
    root = tmp_path_factory.mktemp("baremetal")
    made = {}

    def get(kind: str, variant: str):
        if (kind, variant) not in made:
            case = R.make_case(kind, R.SEED_SHAPES[kind], variant, 256)
            inputs = R.make_inputs(case)
            # as the firesim backend builds it (BareMetalBuilder): rdcycle on
            image = build.build_harness(case, variant, root / f"{kind}-{variant}", True, inputs=inputs,
                                        rdcycle=True, target="baremetal")
            made[kind, variant] = (case, inputs, image)
        return made[kind, variant]
    return get


def read_console(text: str, where: str):
    found = uart.markers(uart.split_lines(text))
    kinds = [m.kind for m in found]
    return found, kinds, uart.outputs(found, where)


@pytest.mark.parametrize("kind,variant", CASES, ids=[f"{k}-{v}" for k, v in CASES])
def test_baremetal_image_runs_to_the_golden(images, kind, variant):
    case, inputs, image = images(kind, variant)
    assert bootbin.unbootable_reason(image) is None
    code, text = boot(image, variant)
    assert code == 0, f"HTIF exit code {code}; console: {text[-800:]!r}"
    found, kinds, out = read_console(text, str(image))
    assert kinds[0] == "bench" and kinds[-1] == "done", kinds
    assert kinds.count("dn") == kinds.count("dc") >= 1
    assert all(int(m.fields["cyc"]) > 0 for m in found if m.kind == "dc"), "rdcycle read nothing in M-mode"
    ref = R.reference(case, inputs)
    tol = R.tolerances(case, inputs, ref)
    assert set(out) == set(R.output_names(kind))
    for name in R.output_names(kind):
        assert out[name].shape == ref[name].shape
        assert_close(out[name], ref[name], tol=tol[name], name=f"{kind} {variant} bare-metal output {name!r}")


def test_the_comparison_catches_other_outputs(images):
    case, inputs, image = images("softmax", "v")
    _, text = boot(image, "v")
    _, _, out = read_console(text, str(image))
    other = {k: np.roll(v, 1, axis=-1) for k, v in inputs.items()}
    ref = R.reference(case, other)
    with pytest.raises(Mismatch):
        assert_close(out["y"], ref["y"], tol=R.tolerances(case, other, ref)["y"], name="softmax y")


def test_a_trap_is_reported_and_exits_4(images):
    """The +v image on a core without V: its first vector instruction is illegal (mcause 2)."""
    _, _, image = images("row_sum", "v")
    code, text = boot(image, "novec")
    assert code == 4, f"exit {code}; console {text[-400:]!r}"
    assert "[err] trap mcause=2 " in text
    found, kinds, out = read_console(text, str(image))
    assert "done" not in kinds and not out


def test_the_image_loads_at_the_dram_base_with_htif_symbols(images):
    _, _, image = images("row_sum", "novec")
    data = image.read_bytes()
    import struct
    entry, = struct.unpack_from("<Q", data, 24)
    assert entry == bootbin.DRAM_BASE
    nm = shutil.which("llvm-nm-16")
    if nm:
        symbols = subprocess.run([nm, "-S", str(image)], capture_output=True, text=True, timeout=60).stdout
        sizes = {line.split()[-1]: line.split()[1] for line in symbols.splitlines() if len(line.split()) == 4}
        # qemu's HTIF refuses a tohost/fromhost that is not an 8-byte object
        assert int(sizes["tohost"], 16) == 8 and int(sizes["fromhost"], 16) == 8


def test_the_baremetal_build_needs_uart_outputs(tmp_path):
    from accel_regress.backends.qemu_rvv import build
    case = R.make_case("row_sum", R.SEED_SHAPES["row_sum"], "novec", 256)
    with pytest.raises(CompileError, match="uart_outputs=True"):
        build.build_harness(case, "novec", tmp_path / "out", False, target="baremetal")
    assert not (tmp_path / "out").exists()


def test_the_firesim_backend_boots_its_own_image(tmp_path, monkeypatch):
    """With its default builder the firesim backend no longer refuses its boot binary: the
    bare-metal image passes bootbin, is copied into the workload and reaches runworkload. (The
    stand-in manager cannot simulate a real binary and says so: CRASH with its words.)"""
    yaml = pytest.importorskip("yaml", reason="the firesim backend reads config_runtime.yaml: the extra accel-regress[firesim]")
    import os
    from pathlib import Path
    from accel_regress.core.errors import Crash
    from accel_regress.backends.firesim import FireSimBackend
    from accel_regress.backends.firesim.backend import BareMetalBuilder
    deploy = tmp_path / "deploy"
    (deploy / "workloads").mkdir(parents=True)
    runtime = {
        "run_farm": {"base_recipe": "run-farm-recipes/externally_provisioned.yaml"},
        "metasimulation": {"metasimulation_enabled": False, "metasimulation_host_simulator": "verilator",
                           "metasimulation_only_plusargs": "", "metasimulation_only_vcs_plusargs": ""},
        "target_config": {"topology": "no_net_config", "no_net_num_nodes": 1, "link_latency": 6405,
                          "switching_latency": 10, "net_bandwidth": 200, "profile_interval": -1,
                          "default_hw_config": "firesim_rocket_saturn_singlecore", "plusarg_passthrough": ""},
        "workload": {"workload_name": "null.json", "terminate_on_completion": False, "suffix_tag": None},
    }
    (deploy / "config_runtime.yaml").write_text(yaml.safe_dump(runtime, sort_keys=False))
    stand_in = Path(__file__).parents[2] / "fixtures" / "firesim" / "bin"
    env = {"ACCEL_FIRESIM_DEPLOY_DIR": str(deploy), "FIRESIM_SOURCED": "1",
           "PATH": f"{stand_in}{os.pathsep}{os.environ.get('PATH', '')}", "ACCEL_FIRESIM_MAX_CYCLES": "5000000",
           "ACCEL_FIRESIM_WALL_S": "60", "ACCEL_FIRESIM_INFRASETUP_S": "60", "ACCEL_FIRESIM_KEEP": "1",
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    backend = FireSimBackend(env=env)
    assert backend.availability() is None
    builder, _ = backend.builder()
    assert isinstance(builder, BareMetalBuilder)
    case = R.make_case("row_sum", R.SEED_SHAPES["row_sum"], "novec", 256)
    with pytest.raises(Crash) as info:
        backend.run(case, R.make_inputs(case))
    assert "cannot simulate a real boot binary" in str(info.value.detail.get("manager_log", ""))
    wl_json = list((deploy / "workloads").glob("*.json"))
    assert len(wl_json) == 1
    import json
    spec = json.loads(wl_json[0].read_text())
    boot = deploy / "workloads" / spec["benchmark_name"] / spec["common_bootbinary"]
    assert boot.read_bytes()[:4] == b"\x7fELF" and bootbin.unbootable_reason(boot) is None
