"""pytest plugin: put the RVV codegen scan into the result record of every RISC-V case.

For a test whose run went to ``qemu-rvv`` or ``firesim`` (both run IREE's riscv64 build of the
case's program), the record's ``detail['codegen_scan']`` gets, per dispatch, the
``vfredusum`` / ``vfredosum`` counts and whether seed 004's candidate hang pattern appears
(hardware/backends/qemu_rvv/scan.py), whatever the verdict. The compile is the cached one the run used,
so this costs a cache lookup, once per program and variant in a process (the cases of one
program share its dispatches), and the scan is read from the scan cache (hardware/backends/qemu_rvv/scan.py).
"""
from __future__ import annotations

import json

RISCV_BACKENDS = ("qemu-rvv", "firesim")
_scans: dict[tuple, str] = {}


def codegen_scan_for(case) -> list[dict]:
    from accel_regress.toolchains.iree import riscv
    from accel_regress.core import registry
    from accel_regress.toolchains.iree.program import IREE_PROGRAMS, program_for
    from accel_regress.backends.qemu_rvv import build
    if registry.module_for(IREE_PROGRAMS, case.op) is None:
        return []
    variant = case.params.get("variant") or riscv.BASELINE_VARIANT
    if variant not in riscv.VARIANTS:
        return []
    program = program_for(case)
    key = (program.mlir, variant, tuple(getattr(program, "compile_flags", ())))
    if key not in _scans:
        _scans[key] = json.dumps(build.program_scan(program, variant, name=case.id))
    return json.loads(_scans[key])      # each record its own copy


def add_scan(record: dict) -> None:
    if record.get("backend") not in RISCV_BACKENDS or not record.get("runs"):
        return
    if "codegen_scan" in record.get("detail", {}):
        return
    from accel_regress.golden.case import Case
    try:
        case = Case.from_json(record["runs"][0]["case"])
        scans = codegen_scan_for(case)
    except Exception as exc:          # a compile error is already the verdict; say why no scan
        record.setdefault("detail", {})["codegen_scan_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        return
    record.setdefault("detail", {})["codegen_scan"] = scans


def pytest_accel_regress_record(item, record):
    add_scan(record)
