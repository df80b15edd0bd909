"""The console budget of the bare-metal harness on FireSim (hardware/backends/firesim/console.py).

BareMetalBuilder.console_chars counts what the image will print from its schedule; the backend
sizes +fesvr-step-size from it. Checked against what the real image prints when qemu's spike
machine (HTIF, as FireSim) runs it: an upper bound, and a tight one.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest

from accel_regress.families.f32_reduction import golden as R
from accel_regress.backends.firesim import console
from accel_regress.backends.firesim.backend import BareMetalBuilder

QEMU_SYSTEM = "qemu-system-riscv64"


def _missing():
    if shutil.which(QEMU_SYSTEM) is None:
        return f"{QEMU_SYSTEM} is missing: apt-get install -y qemu-system-misc"
    from accel_regress.backends.qemu_rvv import build
    return build.toolchain_missing("baremetal")


@pytest.mark.skipif(bool(_missing()), reason=_missing() or "")
@pytest.mark.parametrize("kind,variant", [("row_sum", "novec"), ("layernorm", "novec")])
def test_console_chars_bound_what_the_image_prints(tmp_path, kind, variant):
    from accel_regress.backends.qemu_rvv import build, qemu_cpu
    case = R.make_case(kind, R.SEED_SHAPES[kind], variant, 256)
    image = build.build_harness(case, variant, tmp_path, True, inputs=R.make_inputs(case), rdcycle=True,
                                target="baremetal")
    argv = [QEMU_SYSTEM, "-machine", "spike", "-cpu", qemu_cpu(variant, 256), "-m", "256M", "-bios", "none",
            "-kernel", str(image), "-display", "none", "-monitor", "none", "-serial", "stdio"]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stdout[-500:]
    printed = len(done.stdout)
    bound = BareMetalBuilder.console_chars(case, variant)
    assert printed <= bound <= printed + 400, (printed, bound)


def test_the_default_step_cannot_print_an_output_line():
    """The issue's arithmetic: FireSim's default step and cycle bound leave ~1000 characters, at best."""
    assert 2_000_000_000 // console.DEFAULT_STEP == 997
    chars = console.harness_chars([("y", "f32", "64x128", 64 * 128 * 4)], dispatches=2)
    assert chars > 65_536
    step = console.step_size(chars, 2_000_000_000)
    assert console.MIN_STEP <= step < console.DEFAULT_STEP
    assert console.worst_cycles_per_char(step) * chars <= console.CONSOLE_SHARE * 2_000_000_000


@pytest.mark.skipif(bool(_missing()), reason=_missing() or "")
def test_console_chars_reads_the_programs_own_function_when_it_was_compiled_in_a_batch(tmp_path, monkeypatch):
    """A cold `make test` compiles the default run's riscv64 programs ahead in batches: a batch's
    host program holds every program, the later ones renamed. The bound must be the program's
    own (its function in the batch), not the first program's @main: on 60769d1 layernorm's bound
    was row_sum's (674 characters for an image that prints 65,668, issue 51)."""
    from accel_regress.backends.qemu_rvv import build
    from accel_regress.toolchains.iree import compiler, riscv
    from accel_regress.toolchains.iree.program import program_for
    cases = [R.make_case(kind, R.SEED_SHAPES[kind], "novec", 256) for kind in ("row_sum", "layernorm")]
    programs = [program_for(c) for c in cases]
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "alone"))
    alone = BareMetalBuilder.console_chars(cases[1], "novec")
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "batched"))
    flags = build.riscv_flags(programs[0], riscv.canonical("novec"))
    assert flags == build.riscv_flags(programs[1], riscv.canonical("novec"))
    assert compiler.compile_batch([p.mlir for p in programs], flags, output="host.mlir", shared_files=True) is not None
    batched = build.compile_riscv(programs[1], riscv.canonical("novec"))
    assert batched.cached and batched.symbol(programs[1].entry) != programs[1].entry     # renamed in the batch
    assert BareMetalBuilder.console_chars(cases[1], "novec") == alone > 65_536
