"""Issue 47 S1 and defect 3: a qemu-rvv harness in the cache root is code the host runs (qemu-user
is no sandbox: a guest's execve runs a host program), so an executable or a harness object is
used only when its entry's index carries this machine's signature (hardware/core/build_seal.py)
and every file matches. A planted harness that would create a marker file, its checksums
recomputed, is never executed; a truncated or bit-flipped executable is rebuilt, not a CRASH or
a FAIL every run."""
import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from accel_regress.backends.qemu_rvv import QemuRvvBackend, build
from accel_regress.families.f32_reduction import golden as R
from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(QemuRvvBackend().availability() is not None,
                                reason=str(QemuRvvBackend().availability()))

# A riscv64 program that runs a host command: what an attacker plants as the harness.
PLANTED = r"""
#include <unistd.h>
int main(void) {
  execl("/bin/sh", "sh", "-c", "touch %s", (char *)0);
  return 0;
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    compiler._verified.clear()
    return tmp_path / "cache"


def _recompute_checksums(entry):
    index = entry / "index.json"
    if not index.is_file():          # 60769d1 kept no index: the planted file alone is the attack
        return
    doc = json.loads(index.read_text())
    for name in doc["files"]:
        data = (entry / name).read_bytes()
        doc["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    index.write_text(json.dumps(doc))


def _plant(exe, marker):
    src = exe.parent.parent / "planted.c"
    src.write_text(PLANTED % marker)
    subprocess.run([build.CLANG, "--target=riscv64-linux-gnu", "-march=rv64gc", "-static", "-fuse-ld=lld",
                    str(src), "-o", str(exe)], check=True, capture_output=True, timeout=120)


def test_planted_harness_is_rebuilt_never_run(cache, tmp_path, capsys):
    case = R.make_case("row_sum", (4, 33), "v", 256)
    backend = QemuRvvBackend()
    want = backend.run(case, R.make_inputs(case))
    exe = Path(backend.last_report["harness"])
    marker = tmp_path / "planted-harness-ran"
    _plant(exe, marker)
    _recompute_checksums(exe.parent)
    compiler._verified.clear()           # a new process on the same root
    capsys.readouterr()
    got = QemuRvvBackend().run(case, R.make_inputs(case))
    assert not marker.exists(), "the planted harness was executed"
    assert got["sum"].tobytes() == want["sum"].tobytes()
    assert "signature does not match" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_a_damaged_executable_is_rebuilt(cache, capsys, damage):
    case = R.make_case("row_sum", (4, 33), "v", 256)
    backend = QemuRvvBackend()
    want = backend.run(case, R.make_inputs(case))
    exe = Path(backend.last_report["harness"])
    data = bytearray(exe.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 3] ^= 0x10
    exe.write_bytes(bytes(data))
    compiler._verified.clear()
    got = QemuRvvBackend().run(case, R.make_inputs(case))
    assert got["sum"].tobytes() == want["sum"].tobytes()
    assert "does not match its checksum" in capsys.readouterr().err


def test_a_planted_harness_object_is_rebuilt(cache, capsys):
    """The object every executable links: one replaced (checksums recomputed) is not linked in."""
    obj = build.harness_object(True, True, True)
    genuine = obj.read_bytes()
    obj.write_bytes(genuine[:-64] + b"\0" * 64)
    _recompute_checksums(obj.parent)
    compiler._verified.clear()
    capsys.readouterr()
    again = build.harness_object(True, True, True)
    assert again.read_bytes() == genuine
    assert "signature does not match" in capsys.readouterr().err
