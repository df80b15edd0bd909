"""Issue 17: a second checkout of the same sources compiles nothing again. The build caches live
in the user cache folder and their keys hold what decides the output, never where the checkout
is (the clone rehearsal of notes/s3-xdist.md ran two clones against one cache)."""
import shutil

import pytest

from accel_regress.toolchains.iree import riscv
from accel_regress.backends.iree_cpu import HOST_FLAGS
from accel_regress.backends.qemu_rvv import build

ROOT = str(build.HERE.parents[1])


def _fake_clang(calls):
    def run_clang(argv, what):
        calls.append(argv)
        out = argv[argv.index("-o") + 1]
        with open(out, "wb") as f:
            f.write(b"object")
    return run_clang


def test_the_harness_object_is_shared_by_checkouts(tmp_path, monkeypatch):
    """harness.c of checkout B is the same object as checkout A's: its key must not hold the
    checkout's path (it held the -I folder, so every clone compiled the harness again)."""
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "cache" / "iree"))
    calls = []
    monkeypatch.setattr(build, "_run_clang", _fake_clang(calls))
    objects = []
    for clone in ("cloneA", "cloneB"):
        harness = tmp_path / clone / "hardware" / "backends" / "qemu_rvv" / "harness"
        shutil.copytree(build.HARNESS_DIR, harness)
        monkeypatch.setattr(build, "HARNESS_DIR", harness)
        objects.append(build.harness_object(uart_outputs=True, rdcycle=True))
    assert objects[0] == objects[1]
    assert len(calls) == 1, f"checkout B compiled the harness again: {calls[-1]}"


def test_a_changed_harness_source_is_a_new_object(tmp_path, monkeypatch):
    """The other side of sharing: the sources' bytes are in the key."""
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "cache" / "iree"))
    calls = []
    monkeypatch.setattr(build, "_run_clang", _fake_clang(calls))
    harness = tmp_path / "clone" / "harness"
    shutil.copytree(build.HARNESS_DIR, harness)
    monkeypatch.setattr(build, "HARNESS_DIR", harness)
    first = build.harness_object(uart_outputs=True, rdcycle=True)
    (harness / "harness.c").write_text((harness / "harness.c").read_text() + "\n/* edited */\n")
    assert build.harness_object(uart_outputs=True, rdcycle=True) != first
    assert len(calls) == 2


@pytest.mark.parametrize("variant", sorted(riscv.VARIANTS))
def test_no_compile_flag_names_the_checkout(variant):
    """The IREE key is the program text, the flags and the compiler version; output paths are the
    ``{out}`` placeholder, so no flag of iree-cpu or qemu-rvv may name this checkout."""
    flags = (*HOST_FLAGS, *riscv.compile_flags(variant), *build.STATIC_FLAGS)
    assert not [f for f in flags if ROOT in f]
