"""RISC-V builds of an IREE program: the flag variants of seed 004 and the VLENs they may run at.

A case's ``params['variant']`` names one of ``VARIANTS``; ``params['vlen']`` the vector length
the simulator runs with. Code built for ``+zvl512b`` assumes VLEN >= 512 and is wrong below it, so
``min_vlen`` bounds the VLEN a variant may run at (``check_vlen``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from accel_regress.core.errors import NotApplicable

BASE_FEATURES = "+m,+a,+f,+d,+c"
BASELINE_VARIANT = "v"
BASELINE_VLEN = 256
VLENS = (128, 256, 512)


@dataclass(frozen=True)
class Variant:
    name: str
    features: str              # --iree-llvmcpu-target-cpu-features
    extra: tuple = ()          # further iree-compile flags
    min_vlen: int = 0          # 0: no vector extension assumed
    note: str = ""

    @property
    def vector(self) -> bool:
        return "+v" in self.features.split(",")


VARIANTS = {v.name: v for v in (
    Variant("v", BASE_FEATURES + ",+v", min_vlen=128, note="baseline +v (seed 004's hanging build)"),
    Variant("novec", BASE_FEATURES, note="-v: no vector extension (seed 004's working fix)"),
    Variant("v-vw0", BASE_FEATURES + ",+v", ("--iree-llvmcpu-target-vector-width-in-bytes=0",), 128,
            "+v with IREE's vector width 0 (seed 004: still hangs; LLVM re-vectorizes)"),
    Variant("v-zvl512b", BASE_FEATURES + ",+v,+zvl512b", (), 512, "+v,+zvl512b: code assumes VLEN >= 512"),
    Variant("v-reassoc", BASE_FEATURES + ",+v", ("--iree-llvmcpu-reassociate-fp-reductions=true",), 128,
            "+v with reassociated FP reductions (vfredusum)"),
)}


# Seed 004's spellings of the same builds.
ALIASES = {"+v": "v", "-v": "novec", "+v,+zvl512b": "v-zvl512b"}


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def variant(name: str) -> Variant:
    name = canonical(name)
    if name not in VARIANTS:
        raise ValueError(f"unknown RISC-V variant {name!r}; known: {', '.join(VARIANTS)}")
    return VARIANTS[name]


def check_vlen(name: str, vlen: int) -> Optional[str]:
    """None when ``vlen`` is one this variant's code may run at; else why not."""
    v = variant(name)
    name = v.name
    if vlen not in VLENS:
        return f"VLEN {vlen} is not one of {VLENS}"
    if vlen < v.min_vlen:
        return NotApplicable(f"variant {name} assumes VLEN >= {v.min_vlen}; running it at VLEN {vlen} would be "
                             "wrong code, not a bug")
    return None


TRIPLE_FLAGS = ("--iree-llvmcpu-target-triple=riscv64-unknown-linux-gnu", "--iree-llvmcpu-target-abi=lp64d")


def compile_flags(name: str) -> tuple[str, ...]:
    """iree-compile flags (without output paths) for a riscv64 llvm-cpu build of this variant."""
    v = variant(name)
    return ("--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
            *TRIPLE_FLAGS, f"--iree-llvmcpu-target-cpu-features={v.features}", *v.extra)
