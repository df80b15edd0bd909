"""``iree-cpu-x86-64-v3``: iree-cpu compiled for the portable x86-64-v3 baseline (AVX2, FMA, BMI2,
F16C, MOVBE, LZCNT) instead of this host's own CPU: the code a fleet of mixed runners can share,
run on a CPU that also runs the host build, so the two kernel paths are compared case by case.
Available where they differ: on an AVX-512 CPU the host build vectorizes with AVX-512, this one
cannot; on an AVX2 CPU both are the same code path, said as its reason.

LLVM names the level x86-64-v3 (the x86-64 psABI's micro-architecture levels; llvm/llvm-project
llvm/lib/TargetParser/X86TargetParser.cpp, CK_x86_64_v3). The module cache keys it by that name:
code compiled for it runs on every CPU of the level, whichever compiled it. Its known bugs are
iree-cpu's (expectations/iree-cpu.toml).
"""
from __future__ import annotations

from typing import Optional

from accel_regress.backends.iree_cpu import IreeCpuBackend
from accel_regress.util import host_cpu

# Linux cpuinfo names of the features the level needs on top of x86-64-v2 (abm: LZCNT).
X86_64_V3 = ("avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "abm", "xsave")


class IreeCpuX8664V3Backend(IreeCpuBackend):
    name = "iree-cpu-x86-64-v3"
    description = "IREE compiles the linalg program for the portable x86-64-v3 level, run on this CPU"
    target_cpu = "x86-64-v3"
    shares_expectations_of = ("iree-cpu",)

    def availability(self) -> Optional[str]:
        cpu = host_cpu.host()
        if cpu.arch not in ("x86_64", "AMD64"):
            return f"x86-64-v3 is an x86-64 level; this CPU is {cpu.arch}"
        lacking = [f for f in X86_64_V3 if not cpu.has(f)]
        if lacking:
            return f"this CPU ({cpu.model}) lacks {' '.join(lacking)}: it cannot run x86-64-v3 code"
        if not cpu.has("avx512f"):
            # Without AVX-512 the host build's vector ISA is the level's own (AVX2, FMA): a second
            # compile of every program for the same code path.
            return (f"this CPU ({cpu.model}) has no AVX-512: iree-cpu's host build is the x86-64-v3 "
                    f"code path here already")
        return super().availability()
