"""qemu-rvv and iree-cpu are judged with the IREE the environment has (issue 37 item 3): an
``iree-compile`` found on PATH outside the environment is not used, and the reason both backends
give names it. Failed on e6e33d9: with the wheel missing, tool_path() returned the PATH one, so
qemu-rvv was available (through another compiler) while iree-cpu said IREE was not installed."""
import sys

from accel_regress.backends.iree_cpu import IreeCpuBackend
from accel_regress.backends.qemu_rvv import QemuRvvBackend
from accel_regress.toolchains.iree import compiler


def test_an_iree_compile_on_path_outside_the_environment_is_not_used(tmp_path, monkeypatch):
    other = tmp_path / "iree-compile"
    other.write_text("#!/bin/sh\necho 'IREE compiler version 1.0 @ elsewhere'\n")
    other.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setitem(sys.modules, "iree.compiler.tools", None)    # the wheel is not installed
    compiler.tool_path.cache_clear()
    try:
        assert compiler.tool_path() is None
        for backend in (QemuRvvBackend(), IreeCpuBackend()):
            reason = backend.availability()
            assert reason and f"{other} on PATH is not this environment's and is not used" in reason, reason
    finally:
        compiler.tool_path.cache_clear()
