"""linalg programs of the f32 reduction family (families/f32_reduction/golden.py), one per kind and shape.

Reductions are ``linalg.generic`` ops with a reduction iterator (row sum, mean/variance,
LayerNorm, RMSNorm, log-softmax), ``linalg.softmax``, ``linalg.matmul`` and ``linalg.batch_matmul``; the
controls are elementwise ``linalg.generic`` ops (math.rsqrt / sqrt / erf, arith.divf,
fptosi / sitofp) and an i8 x i8 -> i32 ``linalg.matmul``. The computation follows the order the
error model of families/f32_reduction/golden.py assumes (two-pass variance; mean as sum / n;
log-softmax as x - max - log(sum(exp(x - max))), torch's CPU order, pytorch/pytorch@029586d
aten/src/ATen/native/cpu/SoftMaxKernel.cpp:104-111). MLIR has no log-softmax op
(``linalg.log_softmax`` is an unknown op to iree-compile 3.13.0rc20261016): max, sum of exp and
the log are written out as ``linalg.generic`` ops.
"""
from __future__ import annotations

from accel_regress.golden.case import Case
from accel_regress.families.f32_reduction.golden import EPS, output_names
from accel_regress.toolchains.iree.program import Program

ENTRY = "main"


def _t(shape, et="f32") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{et}>"


def _f(x: float) -> str:
    return f"{float(x):.9e}"   # a decimal that rounds back to the same f32


ID2 = "affine_map<(i, j) -> (i, j)>"
ROW = "affine_map<(i, j) -> (i)>"
COL = "affine_map<(i, j) -> (j)>"
ID1 = "affine_map<(i) -> (i)>"


def _sum_rows(res: str, src_args: str, src_types: str, maps: str, M: int, body: list[str], value: str) -> list[str]:
    """%res = sum over j of <value> computed by ``body`` from the block arguments."""
    return [
        f"  %{res}_init = linalg.fill ins(%zero : f32) outs(%empty_m : {_t((M,))}) -> {_t((M,))}",
        f"  %{res} = linalg.generic {{indexing_maps = [{maps}, {ROW}], iterator_types = [\"parallel\", \"reduction\"]}}"
        f" ins({src_args} : {src_types}) outs(%{res}_init : {_t((M,))}) {{",
        *body,
        f"    %acc_next = arith.addf %acc, {value} : f32",
        "    linalg.yield %acc_next : f32",
        f"  }} -> {_t((M,))}",
    ]


def _divide_rows(res: str, src: str, M: int, n: int) -> list[str]:
    return [
        f"  %{res} = linalg.generic {{indexing_maps = [{ID1}, {ID1}], iterator_types = [\"parallel\"]}}"
        f" ins(%{src} : {_t((M,))}) outs(%empty_m : {_t((M,))}) {{",
        "  ^bb0(%s: f32, %o: f32):",
        f"    %q = arith.divf %s, %n : f32",
        "    linalg.yield %q : f32",
        f"  }} -> {_t((M,))}",
    ]


def _row_prologue(M: int, n: int) -> list[str]:
    return ["  %zero = arith.constant 0.0 : f32", f"  %n = arith.constant {_f(n)} : f32",
            f"  %eps = arith.constant {_f(EPS)} : f32",
            f"  %empty_m = tensor.empty() : {_t((M,))}"]


def _mean_var(M: int, N: int) -> list[str]:
    x2 = _t((M, N))
    lines = _sum_rows("sum", "%x", x2, ID2, M, ["  ^bb0(%a: f32, %acc: f32):"], "%a")
    lines += _divide_rows("mean", "sum", M, N)
    lines += _sum_rows("sq", "%x, %mean", f"{x2}, {_t((M,))}", f"{ID2}, {ROW}", M,
                       ["  ^bb0(%a: f32, %m: f32, %acc: f32):", "    %d = arith.subf %a, %m : f32",
                        "    %d2 = arith.mulf %d, %d : f32"], "%d2")
    lines += _divide_rows("var", "sq", M, N)
    return lines


def _log_softmax(M: int, N: int) -> list[str]:
    """max (arith.maximumf: a NaN propagates, as in numpy and torch), sum of exp(x - max), its log,
    then (x - max) - log(sum)."""
    x2, v1 = _t((M, N)), _t((M,))
    lines = _row_prologue(M, N) + [
        "  %ninf = arith.constant 0xFF800000 : f32",
        f"  %max_init = linalg.fill ins(%ninf : f32) outs(%empty_m : {v1}) -> {v1}",
        f"  %max = linalg.generic {{indexing_maps = [{ID2}, {ROW}], iterator_types = [\"parallel\", \"reduction\"]}}"
        f" ins(%x : {x2}) outs(%max_init : {v1}) {{",
        "  ^bb0(%a: f32, %acc: f32):",
        "    %m = arith.maximumf %a, %acc : f32",
        "    linalg.yield %m : f32",
        f"  }} -> {v1}"]
    lines += _sum_rows("sum", "%x, %max", f"{x2}, {v1}", f"{ID2}, {ROW}", M,
                       ["  ^bb0(%a: f32, %m: f32, %acc: f32):", "    %d = arith.subf %a, %m : f32",
                        "    %e = math.exp %d : f32"], "%e")
    lines += [f"  %lse = linalg.generic {{indexing_maps = [{ID1}, {ID1}], iterator_types = [\"parallel\"]}}"
              f" ins(%sum : {v1}) outs(%empty_m : {v1}) {{",
              "  ^bb0(%s: f32, %o: f32):",
              "    %l = math.log %s : f32",
              "    linalg.yield %l : f32",
              f"  }} -> {v1}",
              f"  %empty_y = tensor.empty() : {x2}",
              f"  %y = linalg.generic {{indexing_maps = [{ID2}, {ROW}, {ROW}, {ID2}], "
              "iterator_types = [\"parallel\", \"parallel\"]}"
              f" ins(%x, %max, %lse : {x2}, {v1}, {v1}) outs(%empty_y : {x2}) {{",
              "  ^bb0(%a: f32, %m: f32, %l: f32, %o: f32):",
              "    %d = arith.subf %a, %m : f32",
              "    %res = arith.subf %d, %l : f32",
              "    linalg.yield %res : f32",
              f"  }} -> {x2}"]
    return lines


def _mlir(kind: str, shape) -> tuple[str, tuple[str, ...]]:
    """(function body text, input names)."""
    if kind in ("row_sum", "mean_var", "layernorm", "rmsnorm"):
        M, N = shape
        x2, v1 = _t((M, N)), _t((M,))
        lines = _row_prologue(M, N)
        if kind == "row_sum":
            lines += _sum_rows("sum", "%x", x2, ID2, M, ["  ^bb0(%a: f32, %acc: f32):"], "%a")
            return _func([("x", x2)], [("sum", v1)], lines), ("x",)
        if kind == "mean_var":
            lines += _mean_var(M, N)
            return _func([("x", x2)], [("mean", v1), ("var", v1)], lines), ("x",)
        if kind == "layernorm":
            lines += _mean_var(M, N)
            lines += [f"  %empty_y = tensor.empty() : {x2}",
                      f"  %y = linalg.generic {{indexing_maps = [{ID2}, {ROW}, {ROW}, {COL}, {COL}, {ID2}], "
                      "iterator_types = [\"parallel\", \"parallel\"]}"
                      f" ins(%x, %mean, %var, %gamma, %beta : {x2}, {v1}, {v1}, {_t((N,))}, {_t((N,))})"
                      f" outs(%empty_y : {x2}) {{",
                      "  ^bb0(%a: f32, %m: f32, %v: f32, %g: f32, %b: f32, %o: f32):",
                      "    %d = arith.subf %a, %m : f32",
                      "    %ve = arith.addf %v, %eps : f32",
                      "    %r = math.rsqrt %ve : f32",
                      "    %t = arith.mulf %d, %r : f32",
                      "    %tg = arith.mulf %t, %g : f32",
                      "    %res = arith.addf %tg, %b : f32",
                      "    linalg.yield %res : f32",
                      f"  }} -> {x2}"]
            return _func([("x", x2), ("gamma", _t((N,))), ("beta", _t((N,)))], [("y", x2)], lines), \
                ("x", "gamma", "beta")
        lines += _sum_rows("ss", "%x", x2, ID2, M, ["  ^bb0(%a: f32, %acc: f32):", "    %a2 = arith.mulf %a, %a : f32"],
                           "%a2")
        lines += [f"  %empty_y = tensor.empty() : {x2}",
                  f"  %y = linalg.generic {{indexing_maps = [{ID2}, {ROW}, {COL}, {ID2}], "
                  "iterator_types = [\"parallel\", \"parallel\"]}"
                  f" ins(%x, %ss, %gamma : {x2}, {v1}, {_t((N,))}) outs(%empty_y : {x2}) {{",
                  "  ^bb0(%a: f32, %s: f32, %g: f32, %o: f32):",
                  "    %ms = arith.divf %s, %n : f32",
                  "    %se = arith.addf %ms, %eps : f32",
                  "    %r = math.rsqrt %se : f32",
                  "    %t = arith.mulf %a, %r : f32",
                  "    %res = arith.mulf %t, %g : f32",
                  "    linalg.yield %res : f32",
                  f"  }} -> {x2}"]
        return _func([("x", x2), ("gamma", _t((N,)))], [("y", x2)], lines), ("x", "gamma")
    if kind == "log_softmax":
        return _func([("x", _t(shape))], [("y", _t(shape))], _log_softmax(*shape)), ("x",)
    if kind == "softmax":
        x2 = _t(shape)
        lines = [f"  %empty = tensor.empty() : {x2}",
                 f"  %y = linalg.softmax dimension(1) ins(%x : {x2}) outs(%empty : {x2}) -> {x2}"]
        return _func([("x", x2)], [("y", x2)], lines), ("x",)
    if kind in ("matmul", "bmm", "i8_matmul"):
        if kind == "bmm":
            B, M, K, N = shape
            ta, tb, tc, op = _t((B, M, K)), _t((B, K, N)), _t((B, M, N)), "linalg.batch_matmul"
        else:
            M, K, N = shape
            et = "i8" if kind == "i8_matmul" else "f32"
            ta, tb, op = _t((M, K), et), _t((K, N), et), "linalg.matmul"
            tc = _t((M, N), "i32" if kind == "i8_matmul" else "f32")
        zero = ["  %zero = arith.constant 0 : i32"] if kind == "i8_matmul" else ["  %zero = arith.constant 0.0 : f32"]
        acc_t = "i32" if kind == "i8_matmul" else "f32"
        lines = zero + [f"  %empty = tensor.empty() : {tc}",
                        f"  %init = linalg.fill ins(%zero : {acc_t}) outs(%empty : {tc}) -> {tc}",
                        f"  %c = {op} ins(%a, %b : {ta}, {tb}) outs(%init : {tc}) -> {tc}"]
        return _func([("a", ta), ("b", tb)], [("c", tc)], lines), ("a", "b")
    (N,) = shape
    v = _t((N,))
    if kind in ("rsqrt", "sqrt", "erf"):
        return _func([("x", v)], [("y", v)], _elementwise("y", ["%x"], [v], v, ["^bb0(%a: f32, %o: f32):",
                     f"  %r = math.{kind} %a : f32"], "f32")), ("x",)
    if kind == "divide":
        return _func([("a", v), ("b", v)], [("y", v)], _elementwise("y", ["%a", "%b"], [v, v], v,
                     ["^bb0(%p: f32, %q: f32, %o: f32):", "  %r = arith.divf %p, %q : f32"], "f32")), ("a", "b")
    if kind == "cvt":
        vi = _t((N,), "i32")
        lines = _elementwise("to_int", ["%x"], [v], vi, ["^bb0(%a: f32, %o: i32):", "  %r = arith.fptosi %a : f32 to i32"], "i32")
        lines += _elementwise("to_float", ["%k"], [vi], v, ["^bb0(%a: i32, %o: f32):", "  %r = arith.sitofp %a : i32 to f32"], "f32")
        return _func([("x", v), ("k", vi)], [("to_int", vi), ("to_float", v)], lines), ("x", "k")
    raise ValueError(f"no program for kind {kind!r}")


def _elementwise(res: str, args: list[str], types: list[str], out_t: str, body: list[str], et: str) -> list[str]:
    maps = ", ".join([ID1] * (len(args) + 1))
    return [f"  %{res}_empty = tensor.empty() : {out_t}",
            f"  %{res} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\"]}}"
            f" ins({', '.join(args)} : {', '.join(types)}) outs(%{res}_empty : {out_t}) {{",
            *("  " + b for b in body),
            f"    linalg.yield %r : {et}",
            f"  }} -> {out_t}"]


def _func(args, results, lines) -> str:
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    rtypes = ", ".join(t for _, t in results)
    ret = f"  return {', '.join('%' + n for n, _ in results)} : {rtypes}"
    return "\n".join([f"func.func @{ENTRY}({sig}) -> ({rtypes}) {{", *lines, ret, "}", ""])


def program(case: Case) -> Program:
    kind, shape = case.params["kind"], tuple(case.params["shape"])
    text, inputs = _mlir(kind, shape)
    return Program(mlir=text, entry=ENTRY, inputs=inputs, outputs=output_names(kind))
