"""Issue 39: qemu-rvv links one harness per static library, not per case or program: a case's
tables and inputs are read at run time from a case file (build.write_case; harness.c, read_case),
so the cases of one program, and the programs compiled in one batch (compile ahead, a plan's
steps), run one executable; their outputs are those of the embedded build (what FireSim boots),
bit for bit. A case file that is missing, short or malformed is a clear [err], exit 2."""
import subprocess

import numpy as np
import pytest

from accel_regress.backends.qemu_rvv import QEMU, QemuRvvBackend, build, protocol, qemu_cpu
from accel_regress.families.f32_reduction import golden as R
from accel_regress.toolchains.iree import compiler
from accel_regress.toolchains.iree.program import program_for

pytestmark = pytest.mark.skipif(QemuRvvBackend().availability() is not None,
                                reason=str(QemuRvvBackend().availability()))


@pytest.fixture
def links(tmp_path, monkeypatch):
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    real = build._run_clang

    def counting(argv, what):
        if "-static" in argv:
            calls.append(argv)
        return real(argv, what)
    monkeypatch.setattr(build, "_run_clang", counting)
    return calls


def _embedded(case) -> dict:
    exe, _ = build.cached_harness(case, "v", R.make_inputs(case), rdcycle=True)
    proc = subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(exe)], capture_output=True, timeout=120)
    return protocol.parse(proc.stdout.decode()).outputs


def _same(want: dict, got: dict) -> bool:
    return sorted(want) == sorted(got) and all(want[n].tobytes() == got[n].tobytes() for n in want)


def test_cases_of_one_program_share_one_link(links):
    cases = [R.make_case("row_sum", (4, 33), "v", 256, base_seed=s) for s in (0, 1, 2)]
    backend = QemuRvvBackend()
    got = [backend.run(c, R.make_inputs(c)) for c in cases]
    assert len(links) == 1, f"{len(links)} harness links for 3 cases of one program"
    assert all(_same(_embedded(c), out) for c, out in zip(cases, got))
    assert got[0]["sum"].tobytes() != got[1]["sum"].tobytes(), "the inputs were not read: every case gave the same"


def test_programs_of_one_batch_share_one_link(links):
    """What compile ahead does for a session: several programs in one iree-compile (one static
    library, renamed entries), then each case runs its own program's dispatches from it."""
    cases = [R.make_case("row_sum", (4, 33), "v", 256), R.make_case("softmax", (4, 33), "v", 256),
             R.make_case("mean_var", (8, 17), "v", 256)]
    programs = [program_for(c) for c in cases]
    batch = compiler.compile_batch([p.mlir for p in programs], build.riscv_flags(programs[0], "v"),
                                   output="host.mlir", shared_files=True)
    assert batch is not None and all(build.compile_riscv(p, "v").dir == batch.dir for p in programs)
    backend = QemuRvvBackend()
    got = [backend.run(c, R.make_inputs(c)) for c in cases]
    assert len(links) == 1, f"{len(links)} harness links for 3 programs of one static library"
    assert all(_same(_embedded(c), out) for c, out in zip(cases, got))


def test_a_bad_case_file_is_a_clear_error(links, tmp_path):
    case = R.make_case("row_sum", (4, 33))
    program = program_for(case)
    compiled = build.compile_riscv(program, "v")
    exe = build.library_harness(compiled)

    def run(path) -> subprocess.CompletedProcess:
        return subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(exe), str(path)], capture_output=True, timeout=120)

    proc = run(tmp_path / "absent.bin")
    assert proc.returncode == 2 and b"[err] cannot open the case file" in proc.stdout
    whole = build.write_case(compiled, program, R.make_inputs(case), tmp_path / "case.bin").read_bytes()
    head = whole[:whole.index(b"end\n") + 4]
    (tmp_path / "short.bin").write_bytes(head + np.zeros(3, np.float32).tobytes())
    proc = run(tmp_path / "short.bin")
    assert proc.returncode == 2 and b"[err] the case file is shorter than the inputs" in proc.stdout
    (tmp_path / "inputs-only.bin").write_bytes(whole[len(head):])
    proc = run(tmp_path / "inputs-only.bin")
    assert proc.returncode == 2 and b"[err] the case file is malformed (accel-case)" in proc.stdout
    lines = head.split(b"\n")
    outputs_at = lines.index(next(ln for ln in lines if ln.startswith(b"outputs ")))
    out = lines[outputs_at + 1].split()
    out[3] = b"99"                   # the buffer an output is read from
    lines[outputs_at + 1] = b" ".join(out)
    (tmp_path / "no-buffer.bin").write_bytes(b"\n".join(lines) + whole[len(head):])
    proc = run(tmp_path / "no-buffer.bin")
    assert proc.returncode == 2 and b"malformed (output of a buffer that does not exist)" in proc.stdout, proc.stdout
    (tmp_path / "cut.bin").write_bytes(head[:len(head) // 2])
    proc = run(tmp_path / "cut.bin")
    assert proc.returncode == 2 and b"[err] the case file is malformed" in proc.stdout, proc.stdout
    proc = run(tmp_path / "case.bin")
    assert proc.returncode == 0 and _same(_embedded(case), protocol.parse(proc.stdout.decode()).outputs)
