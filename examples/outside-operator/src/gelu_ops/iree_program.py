"""The linalg program of GELU that accel-regress's IREE backends (iree-cpu, qemu-rvv) compile:
one elementwise linalg.generic in the order golden.py's error model assumes."""
from __future__ import annotations

import math

from accel_regress.toolchains.iree.program import Program


def program(case) -> Program:
    n = math.prod(case.params["shape"])
    t = f"tensor<{n}xf32>"
    mlir = f"""
func.func @main(%x: {t}) -> {t} {{
  %c = arith.constant {1.0 / math.sqrt(2.0):.9e} : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : {t}
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                        iterator_types = ["parallel"]}} ins(%x : {t}) outs(%empty : {t}) {{
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %c : f32
    %e = math.erf %s : f32
    %p = arith.addf %e, %one : f32
    %h = arith.mulf %a, %half : f32
    %v = arith.mulf %h, %p : f32
    linalg.yield %v : f32
  }} -> {t}
  return %y : {t}
}}
"""
    return Program(mlir=mlir, entry="main", inputs=("x",), outputs=("y",))
