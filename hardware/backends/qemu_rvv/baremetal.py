"""The harness as a bare-metal RISC-V image: what FireSim boots (and qemu's spike machine runs).

``build.build_harness(..., target="baremetal")`` lands here. The case tables, the embedded
inputs and harness.c are the same as for the Linux executable (build.generate); what differs is
the runtime under them (baremetal_rt/):

- crt0.S: entry at 0x80000000 in M-mode; stack, gp, trap vector, mstatus.FS and .VS switched on
  before any float or vector instruction, .bss/.tbss cleared, tp set, main, exit.
- htif.c: stdout is the HTIF device-1 console (one tohost write per character), exit(code) is
  the HTIF exit command (tohost = code<<1 | 1): FireSim's driver prints ``*** PASSED ***`` /
  ``*** FAILED *** (code = K)`` from it. A trap prints ``[err] trap mcause=...`` and exits 4.
- link.ld: everything in DRAM from 0x80000000 (hardware/backends/firesim/bootbin.py checks this), 128 MiB.
- libc: picolibc (Debian ``picolibc-riscv64-unknown-elf``, rv64imafdc/lp64d, medany code), for
  printf/malloc/memcpy/strcmp. The IREE static library itself imports nothing (its math is
  inlined polynomials; ``llvm-nm -u lib.o`` is empty), so the harness's own calls are all.

Outputs always go over the console as ``[out]`` lines (there is no file system), so the
bare-metal build needs ``uart_outputs=True``. ``rdcycle`` is always legal in M-mode (the
firesim backend turns it on, so ``[dc] cyc=`` carries each dispatch's cycles).
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Optional

from accel_regress.core.errors import CompileError

HERE = Path(__file__).resolve().parent
RUNTIME_DIR = HERE / "baremetal_rt"
PICOLIBC = Path("/usr/lib/picolibc/riscv64-unknown-elf")
PICOLIBC_LIB = PICOLIBC / "lib" / "release" / "rv64imafdc" / "lp64d"
APT_PACKAGES = "picolibc-riscv64-unknown-elf clang-16 lld-16"
APT_HINT = f"apt-get install -y {APT_PACKAGES}"
TARGET = "riscv64-unknown-elf"
DRAM_BASE = 0x8000_0000


def toolchain_missing(clang: str) -> Optional[str]:
    """None when clang-16, lld and picolibc for rv64gc/lp64d are here; else what is missing and the fix."""
    missing = [t for t in (clang, "ld.lld-16") if shutil.which(t) is None and not Path(f"/usr/bin/{t}").exists()]
    for need in (PICOLIBC / "include" / "stdio.h", PICOLIBC_LIB / "libc.a"):
        if not need.exists():
            missing.append(f"{need} (picolibc-riscv64-unknown-elf)")
    if missing:
        return f"bare-metal harness: missing {', '.join(missing)}: {APT_HINT}"
    return None


def clang_base(clang: str, harness_dir: Path, uart_outputs: bool, rdcycle: bool) -> list[str]:
    if not uart_outputs:
        raise CompileError("the bare-metal harness has no file system: it needs uart_outputs=True", stage="build")
    argv = [clang, f"--target={TARGET}", "-march=rv64gc", "-mabi=lp64d", "-mcmodel=medany", "-O2",
            "-nostdlibinc", "-isystem", str(PICOLIBC / "include"), f"-I{harness_dir}",
            "-ffunction-sections", "-fdata-sections", "-fno-common",
            "-Wall", "-Werror=implicit-function-declaration", "-DACCEL_UART_OUTPUTS", "-DACCEL_BAREMETAL"]
    if rdcycle:
        argv.append("-DACCEL_RDCYCLE")
    return argv


def runtime_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(RUNTIME_DIR.iterdir()):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def link(clang: str, run_clang, harness_dir: Path, sources: list[Path], objects: list[Path], out: Path, *,
         uart_outputs: bool, rdcycle: bool) -> None:
    """Compile the runtime, harness.c and ``sources`` and link them with ``objects`` (IREE's
    lib.o) and picolibc at 0x80000000. ``run_clang(argv, what)`` raises CompileError."""
    base = clang_base(clang, harness_dir, uart_outputs, rdcycle)
    srcs = [RUNTIME_DIR / "crt0.S", RUNTIME_DIR / "htif.c", *sources]
    tmp = out.with_name(out.name + ".tmp")
    argv = [*base, "-nostdlib", "-static", "-fuse-ld=lld", "-Wl,--gc-sections", "-Wl,--no-relax",
            f"-Wl,-T,{RUNTIME_DIR / 'link.ld'}", "-Wl,-z,max-page-size=4096", "-Wl,-z,norelro",
            *map(str, srcs), *map(str, objects),
            f"{PICOLIBC_LIB / 'libc.a'}", "-o", str(tmp)]
    run_clang(argv, "the bare-metal harness")
    os.replace(tmp, out)
