"""Issue 39: qemu-rvv links one harness per program, not per case: the inputs are read at run time
from a file, so cases that differ only in their inputs run one executable; their outputs are those
of the embedded-inputs build (what FireSim boots), bit for bit."""
import subprocess

import numpy as np
import pytest

from accel_regress.backends.qemu_rvv import QEMU, QemuRvvBackend, build, qemu_cpu
from accel_regress.families.f32_reduction import golden as R

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


def test_cases_of_one_program_share_one_link(links):
    cases = [R.make_case("row_sum", (4, 33), "v", 256, base_seed=s) for s in (0, 1, 2)]
    backend = QemuRvvBackend()
    got = [backend.run(c, R.make_inputs(c)) for c in cases]
    assert len(links) == 1, f"{len(links)} harness links for 3 cases of one program"
    for c, out in zip(cases, got):
        embedded, _ = build.cached_harness(c, "v", R.make_inputs(c), rdcycle=True)
        proc = subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(embedded)], capture_output=True, timeout=120)
        from accel_regress.backends.qemu_rvv import protocol
        want = protocol.parse(proc.stdout.decode()).outputs
        assert sorted(want) == sorted(out) and all(want[n].tobytes() == out[n].tobytes() for n in want)
    assert got[0]["sum"].tobytes() != got[1]["sum"].tobytes(), "the inputs were not read: every case gave the same"


def test_a_missing_inputs_file_is_a_clear_error(links, tmp_path):
    case = R.make_case("row_sum", (4, 33), "v", 256)
    exe, _ = build.cached_harness(case, "v", R.make_inputs(case), inputs_from_file=True)
    proc = subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(exe), str(tmp_path / "absent.bin")],
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"[err] cannot open the inputs file" in proc.stdout
    short = tmp_path / "short.bin"
    short.write_bytes(np.zeros(3, np.float32).tobytes())
    proc = subprocess.run([QEMU, "-cpu", qemu_cpu("v", 256), str(exe), str(short)], capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"shorter than the inputs" in proc.stdout
