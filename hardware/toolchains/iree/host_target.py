"""What IREE compiles for when told ``--iree-llvmcpu-target-cpu=host``: the CPU name and feature
list LLVM resolves on this machine (llvm::sys::getHostCPUName / getHostCPUFeatures, called by
IREE's LLVMTarget resolution, compiler/plugins/target/LLVMCPU/LLVMTargetOptions.cpp), as IREE
writes them into the executable target (``#hal.executable.target<"llvm-cpu", ..., {cpu = "znver1",
cpu_features = "+adx,..."}>``).

Read by compiling a one-op program to the HAL stage, once per boot and CPU (util/machine_memo).
The answer goes into the key of every module compiled for ``host`` (compiler.cache_key), so a
cache root restored onto another CPU compiles again instead of running code that CPU lacks, and
into the versions iree-cpu records, so a verdict names the code path it ran.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

from accel_regress.util import machine_memo

HOST_SPELLINGS = ("--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-target-cpu-features=host")

_PROBE = """func.func @probe(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
# The target sits inside a string attribute at this stage, its quotes escaped as \22.
_Q = r'(?:\\22|")'
_TARGET = re.compile(rf'cpu = {_Q}([^"\\]*){_Q}, cpu_features = {_Q}([^"\\]*){_Q}')


def uses_host(flags: Sequence[str]) -> bool:
    return any(f in HOST_SPELLINGS for f in flags)


def parse(text: str) -> Optional[tuple[str, str]]:
    """(cpu, cpu_features) of the first llvm-cpu executable target in IREE's HAL-stage output."""
    m = _TARGET.search(text)
    return (m.group(1), m.group(2)) if m else None


def _probe(tool: str, cpu: str = "host") -> dict:
    with tempfile.TemporaryDirectory(prefix="accel-host-target-") as tmp:
        src = Path(tmp) / "probe.mlir"
        src.write_text(_PROBE)
        argv = [tool, str(src), "--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                f"--iree-llvmcpu-target-cpu={cpu}", "--compile-to=hal", "--mlir-disable-threading",
                "-o", str(Path(tmp) / "probe.hal.mlir")]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            out = (Path(tmp) / "probe.hal.mlir").read_text() if proc.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
    found = parse(out)
    if found is None:
        return {"error": f"iree-compile exit {proc.returncode}: no llvm-cpu target in its HAL output "
                         f"({(proc.stderr or '').strip()[:200]})"}
    return {"cpu": found[0], "cpu_features": found[1]}


@lru_cache(maxsize=8)
def resolved(tool: str, compiler_version: str, cpu: str = "host") -> dict:
    """{'cpu': 'znver1', 'cpu_features': '+adx,...'} (or {'error': why}) for this machine; ``cpu``
    a named target (x86-64-v3) gives the features IREE compiles that one with."""
    return machine_memo.memo("iree-host-target", (tool, compiler_version, cpu), lambda: _probe(tool, cpu))


def identity(tool: str, compiler_version: str) -> str:
    """The resolved target as one string for a cache key (the error text where the probe failed:
    a key nobody else has, so nothing compiled elsewhere is taken)."""
    r = resolved(tool, compiler_version)
    return f"{r['cpu']}:{r['cpu_features']}" if "cpu" in r else f"unresolved:{r.get('error', '?')}"


def enabled_features(features: str) -> tuple[str, ...]:
    """'+avx2,-avx512f,+fma' -> ('avx2', 'fma'): what the code may use."""
    return tuple(dict.fromkeys(f[1:] for f in features.split(",") if f.startswith("+")))
