"""Every known backend, imported lazily so that a missing toolchain never breaks the suite."""
from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Optional

from hardware.backend import Backend

# id -> "module:Class". One folder per backend under hardware/.
KNOWN = {
    "emu": "hardware.emu:EmuBackend",
    "iree-cpu": "hardware.iree_cpu:IreeCpuBackend",
    "qemu-rvv": "hardware.qemu_rvv:QemuRvvBackend",
    "npu": "hardware.npu:NpuBackend",
    "iree-amd-aie": "hardware.iree_amd_aie:IreeAmdAieBackend",
    "a2a3": "hardware.pypto:A2a3Backend",
    "a2a3sim": "hardware.pypto:A2a3SimBackend",
    "firesim": "hardware.firesim:FireSimBackend",
}

# The embedded default, runnable anywhere; other available backends join it when --hw is absent.
DEFAULT = ("emu",)


class Unavailable(Backend):
    """Stands for a backend whose module could not even be imported."""

    def __init__(self, name: str, reason: str):
        self.name, self._reason = name, reason

    def availability(self) -> Optional[str]:
        return self._reason


@lru_cache(maxsize=None)
def get(name: str) -> Backend:
    if name not in KNOWN:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(KNOWN)}")
    module, cls = KNOWN[name].split(":")
    try:
        backend = getattr(importlib.import_module(module), cls)()
    except Exception as exc:  # an import-time failure is a reason, not a crash of the suite
        return Unavailable(name, f"{module} failed to import: {type(exc).__name__}: {exc}")
    backend.name = name
    return backend


@lru_cache(maxsize=None)
def availability(name: str) -> Optional[str]:
    try:
        return get(name).availability()
    except Exception as exc:
        return f"availability check failed: {type(exc).__name__}: {exc}"


def parse(spec: Optional[str]) -> list[str]:
    """``--hw a,b`` (or $ACCEL_HW); none given: every available backend. 'all' selects every known one."""
    spec = spec or os.environ.get("ACCEL_HW", "")
    if not spec.strip():
        return [n for n in KNOWN if availability(n) is None]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if names == ["all"]:
        return list(KNOWN)
    unknown = [n for n in names if n not in KNOWN]
    if unknown:
        raise ValueError(f"unknown backend(s) {', '.join(unknown)}; known: {', '.join(KNOWN)}")
    return names
