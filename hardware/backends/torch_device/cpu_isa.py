"""``torch-cpu-<isa>``: torch-cpu with oneDNN capped at an older ISA than the CPU's best, each a
device of its own: the same cases on several kernel paths of one machine, a differential no
CPU-only anchor has (an AMX bf16 GEMM against the AVX-512 BF16 one against torch's own kernel).

oneDNN reads ``ONEDNN_MAX_CPU_ISA`` once per process, at its first ISA query (uxlfoundation/oneDNN
doc/performance_considerations/dispatcher_control.md: "the first internal ISA query will disable
the ability to change the ISA"), so a variant runs in an isolated worker of its own
(Backend.process_env), never in one where another torch-cpu run fixed the ISA already. torch asks
oneDNN, capped, whether bf16 is supported before it gives a bf16 GEMM to it (ideep's
has_bf16_type_support, which reads oneDNN's effective ISA): capped at AVX2, torch keeps the GEMM.

A variant is available where the CPU has the ISA and has a better one; at the CPU's best ISA it
is torch-cpu itself, said as its reason. Its known bugs are torch-cpu's (expectations/torch-cpu.toml),
decided by the kernel path each run recorded.
"""
from __future__ import annotations

from typing import Optional

from accel_regress.backends.torch_device import TorchCpuBackend, onednn
from accel_regress.util import host_cpu

# oneDNN's x64 ISA ladder (dispatcher_control.md's partial order; AVX2_VNNI's branch left out:
# no bf16 GEMM kernel of its own), each rung with the Linux cpuinfo flags it needs on top of the
# rungs below (oneDNN src/cpu/x64/cpu_isa_traits.hpp mayiuse: avx512_core = F+BW+VL+DQ, ...).
LADDER: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("AVX2", ("avx2", "fma")),
    ("AVX512_CORE", ("avx512f", "avx512bw", "avx512vl", "avx512dq")),
    ("AVX512_CORE_VNNI", ("avx512_vnni",)),
    ("AVX512_CORE_BF16", ("avx512_bf16",)),
    ("AVX10_1_512", ("avx512_fp16",)),
    ("AVX10_1_512_AMX", ("amx_tile", "amx_int8", "amx_bf16")),
    ("AVX10_1_512_AMX_FP16", ("amx_fp16",)),
)
_RUNGS = [name for name, _ in LADDER]


def needs(isa: str) -> tuple[str, ...]:
    """Every cpuinfo flag oneDNN needs for ``isa`` (those of the rungs below it too)."""
    out: list[str] = []
    for name, flags in LADDER[:_RUNGS.index(isa) + 1]:
        out.extend(flags)
    return tuple(out)


def best(cpu: host_cpu.HostCpu) -> Optional[str]:
    """The highest rung this CPU has (what oneDNN's default dispatch picks), or None (not x86 or
    below AVX2)."""
    if cpu.arch not in ("x86_64", "AMD64"):
        return None
    top = None
    for name in _RUNGS:
        if not cpu.has(*needs(name)):
            break
        top = name
    return top


def _described(isa: str) -> str:
    return f"torch-cpu with oneDNN capped at {isa} (ONEDNN_MAX_CPU_ISA): that kernel path on this CPU"


class TorchCpuIsaBackend(TorchCpuBackend):
    """torch-cpu with oneDNN capped at ``isa`` (a subclass per rung names it)."""
    isa = "AVX2"
    shares_expectations_of = ("torch-cpu",)

    def availability(self) -> Optional[str]:
        reason = super().availability()
        if reason:
            return reason
        cpu = host_cpu.host()
        if cpu.arch not in ("x86_64", "AMD64"):
            return f"oneDNN's ISA cap {self.isa} is an x86-64 kernel path; this CPU is {cpu.arch}"
        lacking = [f for f in needs(self.isa) if not cpu.has(f)]
        if lacking:
            return f"this CPU ({cpu.model}) lacks {' '.join(lacking)}: oneDNN has no {self.isa} path here"
        if best(cpu) == self.isa:
            return f"{self.isa} is this CPU's best oneDNN ISA: torch-cpu runs that kernel path already"
        return None

    def process_env(self) -> dict[str, str]:
        return {onednn.ISA_ENV: self.isa}


class TorchCpuAvx2Backend(TorchCpuIsaBackend):
    isa = "AVX2"
    description = _described(isa)


class TorchCpuAvx512CoreBackend(TorchCpuIsaBackend):
    isa = "AVX512_CORE"
    description = _described(isa)


class TorchCpuAvx512CoreBf16Backend(TorchCpuIsaBackend):
    isa = "AVX512_CORE_BF16"
    description = _described(isa)
