"""The seed 002 tile op (families/rowexpandmul_fillpad/golden.py) as a linalg program: row-broadcast multiply in the tile's
dtype, then the valid-shape mask and the pad fill, the whole [R, C] tile returned.

The product is one ``arith.mulf`` in the tile dtype (f32, f16 or bf16: one rounding of the exact
product, the error model of families/rowexpandmul_fillpad/golden.py); outside [0, valid_row) x [0, valid_col) the pad value
is selected. The valid shape and the pad value are run-time arguments (``Program.constants``), as
valid_rows is the seed kernel's run-time argument, so cases that differ only in them share a module.
"""
from __future__ import annotations

import numpy as np

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden.case import Case
from accel_regress.toolchains.iree.program import Program

ENTRY = "rowexpandmul_fillpad"
RISCV_VARIANTS = False      # params['variant'] is seed 002's kernel variant, not a RISC-V build
ELEMENT = {"f32": "f32", "f16": "f16", "bf16": "bf16"}


def program(case: Case) -> Program:
    cfg = tiles.config_of(case)
    R, C, et = cfg.rows, cfg.cols, ELEMENT[cfg.dtype]
    t = f"tensor<{R}x{C}xf32>"
    ids = "affine_map<(i, j) -> (i, j)>"
    one = "affine_map<(i, j) -> (0)>"
    ins = ["gated"]
    maps = [ids]
    types = [t]
    if cfg.variant == "mul":
        ins.append("scale"), maps.append(ids), types.append(t)
    elif cfg.variant != "loaded":
        ins.append("scale"), maps.append("affine_map<(i, j) -> (i, 0)>"), types.append(f"tensor<{R}x1xf32>")
    ins += ["valid_row", "valid_col", "pad"]
    maps += [one, one, one]
    types += ["tensor<1xi32>", "tensor<1xi32>", "tensor<1xf32>"]
    cast = (lambda v: [f"%{v}t = arith.truncf %{v} : f32 to {et}"]) if et != "f32" else (lambda v: [])
    name = (lambda v: f"%{v}t") if et != "f32" else (lambda v: f"%{v}")
    if cfg.variant == "loaded":
        product = cast("g") + ([f"%p = arith.extf {name('g')} : {et} to f32"] if et != "f32" else ["%p = arith.addf %g, %z : f32"])
    else:
        product = cast("g") + cast("s") + [f"%pt = arith.mulf {name('g')}, {name('s')} : {et}"]
        product += [f"%p = arith.extf %pt : {et} to f32"] if et != "f32" else ["%p = arith.addf %pt, %z : f32"]
    block = ["g"] + (["s"] if len(ins) == 5 else []) + ["vr", "vc", "pv", "o"]
    block_types = ["f32"] * (len(block) - 4) + ["i32", "i32", "f32", "f32"]
    lines = [
        f"func.func @{ENTRY}({', '.join(f'%{n}: {ty}' for n, ty in zip(ins, types))}) -> {t} {{",
        f"  %e = tensor.empty() : {t}",
        f"  %out = linalg.generic {{indexing_maps = [{', '.join(maps + [ids])}], "
        f"iterator_types = [\"parallel\", \"parallel\"]}} ins({', '.join('%' + n for n in ins)} : {', '.join(types)}) "
        f"outs(%e : {t}) {{",
        f"  ^bb0({', '.join(f'%{b}: {ty}' for b, ty in zip(block, block_types))}):",
        "    %z = arith.constant -0.0 : f32",      # x + -0.0 is x, for every x: a no-op the compiler may drop
        *("    " + ln for ln in product),
        "    %i = linalg.index 0 : index",
        "    %j = linalg.index 1 : index",
        "    %ii = arith.index_cast %i : index to i32",
        "    %jj = arith.index_cast %j : index to i32",
        "    %inr = arith.cmpi slt, %ii, %vr : i32",
        "    %inc = arith.cmpi slt, %jj, %vc : i32",
        "    %in = arith.andi %inr, %inc : i1",
        "    %y = arith.select %in, %p, %pv : f32",
        "    linalg.yield %y : f32",
        f"  }} -> {t}",
        f"  return %out : {t}", "}", ""]
    constants = {"valid_row": np.array([cfg.valid_row], np.int32), "valid_col": np.array([cfg.valid_col], np.int32),
                 "pad": np.array([tiles.pad_value(cfg.pad, cfg.dtype)], np.float32)}
    return Program("\n".join(lines), ENTRY, tuple(ins), ("out",), constants)
