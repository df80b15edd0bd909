"""The harness's ABI structs (hardware/backends/qemu_rvv/harness/abi.h) agree field by field with the
LLVM struct types the pinned compiler emits into every executable library."""
import re
from pathlib import Path

import pytest

ABI = Path(__file__).resolve().parents[4] / "hardware" / "backends" / "qemu_rvv" / "harness" / "abi.h"
# abi.h name -> the compiler's LLVM type name
PAIRS = {"accel_library_header_t": "iree_hal_executable_library_header_t",
         "accel_dispatch_state_t": "iree_hal_executable_dispatch_state_v0_t",
         "accel_workgroup_state_t": "iree_hal_executable_workgroup_state_v0_t",
         "accel_dispatch_attrs_t": "iree_hal_executable_dispatch_attrs_v0_t",
         "accel_export_table_t": "iree_hal_executable_export_table_v0_t"}
C_TO_LLVM = {"uint64_t": "i64", "int64_t": "i64", "uint32_t": "i32", "int32_t": "i32", "uint16_t": "i16",
             "uint8_t": "i8", "size_t": "i64"}


def _c_fields(name: str) -> list[str]:
    text = ABI.read_text()
    m = re.search(r"typedef struct \{([^{}]*)\} " + name + ";", text)
    assert m, name
    out = []
    for decl in m.group(1).split(";"):
        decl = decl.strip()
        if not decl:
            continue
        arr = re.search(r"\[(\d+)\]$", decl)
        base = "ptr" if "*" in decl else C_TO_LLVM[decl.split()[0]]
        out += [base] * (int(arr.group(1)) if arr else 1)
    return out


def _llvm_types() -> dict[str, list[str]]:
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.toolchains.iree.program import program_for
    from accel_regress.backends.qemu_rvv import build
    case = R.make_case("softmax", R.SEED_SHAPES["softmax"])
    dump = build.compile_riscv(program_for(case), "v").dir / "dump"
    (ll,) = [p for p in dump.glob("*.linked.ll")][:1] or [None]
    assert ll is not None, "no linked LLVM IR in the dump"
    types = {}
    for name, body in re.findall(r"^%(\w+) = type \{ (.*) \}$", ll.read_text(), re.M):
        types[name] = [t.strip() for t in body.split(",")]
    return types


def test_structs_match_the_compiler():
    types = _llvm_types()
    for ours, theirs in PAIRS.items():
        want, got = types[theirs], _c_fields(ours)
        assert got == want, f"{ours} has fields {got}, the compiler's {theirs} is {want}"


def test_library_reports_abi_version_6():
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.toolchains.iree.program import program_for
    from accel_regress.backends.qemu_rvv import build
    dump = build.compile_riscv(program_for(R.make_case("row_sum", (64, 128))), "v").dir / "dump"
    text = next(dump.glob("*.linked.ll")).read_text()
    assert re.search(r"%iree_hal_executable_library_header_t \{ i32 6,", text)
    assert "#define ACCEL_IREE_LIBRARY_VERSION 6u" in ABI.read_text()
