"""A cache root restored onto an older CPU (issue 46): modules compiled for ``host`` are keyed by
the CPU IREE resolves ``host`` to, so on a Haswell the same flags find no entry built here and
compile for the Haswell, never run this machine's code; iree-cpu-x86-64-v3's modules run on any
CPU of that level.

The Haswell is Debian's qemu-user (``qemu-x86_64-static -cpu Haswell``): IREE's own resolution
runs inside it (LLVM's getHostCPUName reads the emulated CPUID: "haswell"), and so do the compile
and the runs. Where this CPU has AVX-512, the module built here for ``host`` dies there with
SIGILL, which is what the key prevents.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from accel_regress.backends.iree_cpu import HOST_FLAGS, target_flags
from accel_regress.toolchains.iree import compiler, host_target
from accel_regress.util import host_cpu

QEMU = shutil.which("qemu-x86_64-static") or shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.skipif(host_cpu.host().arch != "x86_64", reason="an x86-64 host emulating an older x86-64 CPU"),
    pytest.mark.skipif(QEMU is None, reason="qemu-user (Debian qemu-user-static) is not installed"),
    pytest.mark.skipif(bool(compiler.availability()), reason=str(compiler.availability())),
]

MLIR = """func.func @main(%a: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<4096xf32> {
  %0 = arith.mulf %a, %b : tensor<4096xf32>
  %1 = arith.addf %0, %a : tensor<4096xf32>
  return %1 : tensor<4096xf32>
}
"""
RUN = """import sys, numpy as np, iree.runtime as rt
config = rt.Config("local-sync")
ctx = rt.SystemContext(config=config)
ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, open(sys.argv[1], "rb").read()))
a = np.arange(4096, dtype=np.float32)
print(repr(float(np.asarray(ctx.modules.module["main"](a, np.full(4096, 2, np.float32))).sum())))
"""
EXPECTED = float((np.arange(4096, dtype=np.float32) * 3).sum())


def _on_haswell(argv, timeout=600):
    return subprocess.run([QEMU, "-cpu", "Haswell", *argv], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_a_restored_root_compiles_for_the_cpu_it_is_on_and_never_runs_this_ones_code(tmp_path):
    root = tmp_path / "root"
    here = compiler.compile_cached(MLIR, HOST_FLAGS, name="restored/here", root=root)
    # iree-compile as it runs on a Haswell: the resolution, the compile, all under the emulated CPU.
    wrapper = tmp_path / "iree-compile"
    wrapper.write_text(f'#!/bin/sh\nexec "{QEMU}" -cpu Haswell "{compiler.tool_path()}" "$@"\n')
    wrapper.chmod(0o755)
    resolved = host_target.resolved(str(wrapper), compiler.compiler_version(str(wrapper)))
    assert resolved.get("cpu") == "haswell", resolved
    assert compiler.cache_key(MLIR, HOST_FLAGS, tool=str(wrapper)) != compiler.cache_key(MLIR, HOST_FLAGS)
    there = compiler.compile_cached(MLIR, HOST_FLAGS, name="restored/there", root=root, tool=str(wrapper))
    assert not there.cached and there.vmfb != here.vmfb          # compiled again, for the Haswell
    (tmp_path / "run.py").write_text(RUN)
    ran = _on_haswell([sys.executable, str(tmp_path / "run.py"), str(there.vmfb)])
    assert ran.returncode == 0 and float(ran.stdout.strip()) == EXPECTED, ran.stderr[-2000:]
    if host_cpu.host().has("avx512f"):
        # What the key keeps from happening: this machine's AVX-512 code on the Haswell.
        died = _on_haswell([sys.executable, str(tmp_path / "run.py"), str(here.vmfb)])
        assert died.returncode in (-4, 132) or "Illegal instruction" in died.stderr, (died.returncode, died.stderr[-500:])


def test_x86_64_v3_modules_run_on_every_cpu_of_the_level(tmp_path):
    portable = compiler.compile_cached(MLIR, target_flags("x86-64-v3"), name="portable", root=tmp_path / "root")
    (tmp_path / "run.py").write_text(RUN)
    ran = _on_haswell([sys.executable, str(tmp_path / "run.py"), str(portable.vmfb)])
    assert ran.returncode == 0 and float(ran.stdout.strip()) == EXPECTED, ran.stderr[-2000:]
    assert os.path.getsize(portable.vmfb) > 0
