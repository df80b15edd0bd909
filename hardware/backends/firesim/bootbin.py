"""Is a file something FireSim can boot? A check of RISC-V ELF boot binaries before a run.

FireSim loads the boot binary (``+prog0=<job>-<bootbinary>``, runtime_config.py:503) into target
DRAM, which starts at 0x80000000 on Chipyard/FireChip targets; bare-metal programs and
OpenSBI+Linux payloads are linked there. A Linux user-mode executable (what qemu-riscv64 runs,
linked near 0x10000) cannot boot: the run would print nothing and end as ``early`` after the whole
cycle bound. We refuse it up front with the reason instead. Files that are not ELF are passed to
FireSim as they are (its loader decides).
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Optional

DRAM_BASE = 0x8000_0000
EM_RISCV = 243
PT_LOAD = 1


def unbootable_reason(path: Path) -> Optional[str]:
    """None when FireSim can load ``path`` (or it is not an ELF); otherwise why not."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return None
            if head[4] != 2 or head[5] != 1:
                return f"{path}: not a 64-bit little-endian ELF (class {head[4]}, data {head[5]})"
            machine, = struct.unpack_from("<H", head, 18)
            if machine != EM_RISCV:
                return f"{path}: ELF for machine {machine}, not RISC-V ({EM_RISCV})"
            phoff, = struct.unpack_from("<Q", head, 32)
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    loads = []
    for k in range(phnum):
        entry = table[k * phentsize:(k + 1) * phentsize]
        if len(entry) < 56:
            return f"{path}: truncated ELF program header table"
        p_type, = struct.unpack_from("<I", entry, 0)
        if p_type == PT_LOAD:
            p_vaddr, = struct.unpack_from("<Q", entry, 16)
            p_paddr, = struct.unpack_from("<Q", entry, 24)
            loads.append(p_paddr or p_vaddr)
    if not loads:
        return f"{path}: ELF with no loadable segment"
    if min(loads) < DRAM_BASE:
        return (f"{path}: loads at {min(loads):#x}, below target DRAM at {DRAM_BASE:#x}: a Linux user-mode "
                f"executable, which FireSim cannot boot; build the harness bare-metal (linked at "
                f"{DRAM_BASE:#x}, printing through HTIF: build_harness(..., target=\"baremetal\"))")
    return None
