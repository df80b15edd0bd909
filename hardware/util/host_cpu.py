"""The host CPU as device facts: what a verdict of a CPU backend, and code compiled for ``host``,
depend on, read from the machine (never assumed from the machine kind).

The features kept are the ones that change which kernel runs or what numbers it gives: oneDNN's
ISA ladder (AVX2 -> AVX-512 -> AVX-512 BF16/FP16 -> AMX, uxlfoundation/oneDNN src/cpu/x64/cpu_isa_traits.hpp)
and the Arm extensions with their own GEMM paths (SVE, SME, BF16, I8MM). ``fingerprint`` hashes
every flag the kernel reports, so two CPUs that differ in any of them never share a key.
"""
from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")

# Linux's names (arch/x86/include/asm/cpufeatures.h; arch/arm64/kernel/cpuinfo.c hwcap_str).
NOTABLE = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16",
           "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16",
           "asimd", "asimdhp", "sve", "sve2", "sme", "bf16", "i8mm")


@dataclass(frozen=True)
class HostCpu:
    arch: str
    model: str
    flags: frozenset

    @property
    def notable(self) -> tuple[str, ...]:
        return tuple(f for f in NOTABLE if f in self.flags)

    def has(self, *features: str) -> bool:
        return all(f in self.flags for f in features)

    def facts(self) -> dict[str, str]:
        """What a result records of its CPU: ``cpu`` (model), ``cpu-features`` (the notable ones)."""
        return {"cpu": self.model, "cpu-arch": self.arch, "cpu-features": " ".join(self.notable) or "none"}

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for part in (self.arch, self.model, " ".join(sorted(self.flags))):
            h.update(part.encode())
            h.update(b"\x00")
        return h.hexdigest()[:16]


def parse(text: str, arch: str = "") -> HostCpu:
    """/proc/cpuinfo's first processor: its model name and flags (x86 ``flags``, Arm ``Features``)."""
    model, flags = "", ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if model or flags:
                break           # the first processor's block is enough: Linux reports one feature set
            continue
        key = key.strip().lower()
        if key in ("model name", "cpu model", "uarch") and not model:
            model = value.strip()
        elif key in ("flags", "features", "isa") and not flags:
            flags = value.strip()
    return HostCpu(arch or platform.machine(), model or platform.processor() or "unknown",
                   frozenset(flags.replace(",", " ").split()))


@lru_cache(maxsize=1)
def host() -> HostCpu:
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        text = ""
    return parse(text)


def boot_id() -> str:
    """A memo of a probe of this machine is good until the next boot: a cache root restored onto
    another machine (or this one after a change of CPU) probes again."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "no-boot-id"
