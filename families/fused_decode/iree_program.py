"""linalg programs of the fused_decode family (families/fused_decode/golden.py): one per step, and the block.

``plan(case)`` of a ``steps`` case is the runlist step by step, each step its own module reading
and writing bf16 buffers (compare mode needs every step's output, computed from the device's own
inputs to it); of a ``fused`` case, the whole block as one function returning ``fused_out``, so
the compiler may fuse across steps as it likes (the end-to-end check). Every operator reads bf16, computes in f32
(``arith.extf``) and rounds its result once to bf16 (``arith.truncf``), as IRON's operators and
families/fused_decode/llama_ops.py's error model have it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from accel_regress.families.fused_decode import golden as F
from accel_regress.golden.case import Case
from accel_regress.families.f32_reduction.golden import EPS
from accel_regress.toolchains.iree.program import Program


def _t(shape, et="bf16") -> str:
    return "tensor<" + "x".join(str(d) for d in shape) + f"x{et}>"


def _f(x: float) -> str:
    return f"{float(x):.9e}"


def _map(dims: str, res: str) -> str:
    return f"affine_map<({dims}) -> ({res})>"


@dataclass
class Emitter:
    """Writes one function body; ``tmp`` gives SSA names unique within it."""
    prefix: str
    lines: list[str] = field(default_factory=list)
    n: int = 0

    def tmp(self, hint: str) -> str:
        self.n += 1
        return f"%{self.prefix}{hint}{self.n}"

    def emit(self, *lines: str) -> None:
        self.lines.extend("  " + ln for ln in lines)

    # -- building blocks ------------------------------------------------------------------------

    def reshape(self, v: str, src: tuple, dst: tuple) -> str:
        if tuple(src) == tuple(dst):
            return v
        out = self.tmp("r")
        flat = _t((math.prod(src),))
        if len(src) > 1:
            mid = self.tmp("c")
            self.emit(f"{mid} = tensor.collapse_shape {v} [[{', '.join(map(str, range(len(src))))}]] : "
                      f"{_t(src)} into {flat}")
            v = mid
        if len(dst) == 1:
            self.emit(f"{out} = tensor.cast {v} : {flat} to {_t(dst)}")
        else:
            self.emit(f"{out} = tensor.expand_shape {v} [[{', '.join(map(str, range(len(dst))))}]] "
                      f"output_shape [{', '.join(map(str, dst))}] : {flat} into {_t(dst)}")
        return out

    def generic(self, ins: list[tuple[str, tuple, str]], maps: list[str], out_shape: tuple, iters: list[str],
                body: list[str], *, init: str | None = None, out_et: str = "bf16", block_args: list[str]) -> str:
        """linalg.generic over ``ins`` ([(value, shape, element type)]) into a fresh (or ``init``) tensor."""
        out = self.tmp("g")
        if init is None:
            init = self.tmp("e")
            self.emit(f"{init} = tensor.empty() : {_t(out_shape, out_et)}")
        it = ", ".join(f'"{i}"' for i in iters)
        ins_txt = ", ".join(v for v, _, _ in ins)
        ins_ty = ", ".join(_t(s, et) for _, s, et in ins)
        args = ", ".join(f"%{a}: {et}" for a, et in zip(block_args, [et for _, _, et in ins] + [out_et]))
        self.emit(f"{out} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}} "
                  f"ins({ins_txt} : {ins_ty}) outs({init} : {_t(out_shape, out_et)}) {{")
        self.lines.append(f"  ^bb0({args}):")
        self.lines.extend("    " + b for b in body)
        self.emit(f"}} -> {_t(out_shape, out_et)}")
        return out

    def zeros_f32(self, shape: tuple) -> str:
        e, z, out = self.tmp("e"), self.tmp("z"), self.tmp("f")
        self.emit(f"{e} = tensor.empty() : {_t(shape, 'f32')}", f"{z} = arith.constant 0.0 : f32",
                  f"{out} = linalg.fill ins({z} : f32) outs({e} : {_t(shape, 'f32')}) -> {_t(shape, 'f32')}")
        return out

    def to_bf16(self, v: str, shape: tuple) -> str:
        ids = _map(_dims(len(shape)), _dims(len(shape)))
        return self.generic([(v, shape, "f32")], [ids, ids], shape, ["parallel"] * len(shape),
                            ["%t = arith.truncf %a : f32 to bf16", "linalg.yield %t : bf16"],
                            block_args=["a", "o"])

    def to_f32(self, v: str, shape: tuple) -> str:
        ids = _map(_dims(len(shape)), _dims(len(shape)))
        return self.generic([(v, shape, "bf16")], [ids, ids], shape, ["parallel"] * len(shape),
                            ["%t = arith.extf %a : bf16 to f32", "linalg.yield %t : f32"],
                            block_args=["a", "o"], out_et="f32")


def _dims(n: int) -> str:
    return ", ".join(f"d{i}" for i in range(n))


# --- operators: emit(E, params, [(value, shape)]) -> (value, shape) -------------------------------

def _rmsnorm(E: Emitter, p, args):
    (x, xs), (w, ws) = args
    n = xs[-1]
    x2 = E.reshape(x, xs, (math.prod(xs) // n, n))
    rows = math.prod(xs) // n
    ss = E.generic([(x2, (rows, n), "bf16")], [_map("i, j", "i, j"), _map("i, j", "i")], (rows,),
                   ["parallel", "reduction"],
                   ["%xf = arith.extf %a : bf16 to f32", "%sq = arith.mulf %xf, %xf : f32",
                    "%s = arith.addf %acc, %sq : f32", "linalg.yield %s : f32"],
                   init=E.zeros_f32((rows,)), out_et="f32", block_args=["a", "acc"])
    y = E.generic([(x2, (rows, n), "bf16"), (ss, (rows,), "f32"), (w, (n,), "bf16")],
                  [_map("i, j", "i, j"), _map("i, j", "i"), _map("i, j", "j"), _map("i, j", "i, j")],
                  (rows, n), ["parallel", "parallel"],
                  ["%xf = arith.extf %a : bf16 to f32", "%wf = arith.extf %w : bf16 to f32",
                   f"%n = arith.constant {_f(n)} : f32", f"%eps = arith.constant {_f(EPS)} : f32",
                   "%ms = arith.divf %s, %n : f32", "%me = arith.addf %ms, %eps : f32",
                   "%r = math.rsqrt %me : f32", "%xr = arith.mulf %xf, %r : f32", "%y = arith.mulf %xr, %wf : f32",
                   "%yb = arith.truncf %y : f32 to bf16", "linalg.yield %yb : bf16"],
                  block_args=["a", "s", "w", "o"])
    return E.reshape(y, (rows, n), xs), xs


def _dot(E: Emitter, a: str, a_shape: tuple, x: str, x_shape: tuple, maps: list[str], iters: list[str],
         out_shape: tuple, scale: float = 1.0):
    acc = E.generic([(a, a_shape, "bf16"), (x, x_shape, "bf16")], maps, out_shape, iters,
                    ["%af = arith.extf %a : bf16 to f32", "%xf = arith.extf %x : bf16 to f32",
                     "%pr = arith.mulf %af, %xf : f32", "%s = arith.addf %acc, %pr : f32", "linalg.yield %s : f32"],
                    init=E.zeros_f32(out_shape), out_et="f32", block_args=["a", "x", "acc"])
    if scale != 1.0:
        ids = _map(_dims(len(out_shape)), _dims(len(out_shape)))
        acc = E.generic([(acc, out_shape, "f32")], [ids, ids], out_shape, ["parallel"] * len(out_shape),
                        [f"%c = arith.constant {_f(scale)} : f32", "%y = arith.mulf %a, %c : f32",
                         "linalg.yield %y : f32"], out_et="f32", block_args=["a", "o"])
    return E.to_bf16(acc, out_shape), out_shape


def _gemv(E: Emitter, p, args):
    (w, ws), (x, xs) = args
    M, K = ws
    xv = E.reshape(x, xs, (K,))
    return _dot(E, w, ws, xv, (K,), [_map("m, k", "m, k"), _map("m, k", "k"), _map("m, k", "m")],
                ["parallel", "reduction"], (M,))


def _gemv_batched(E: Emitter, p, args):
    (a, as_), (x, xs) = args
    B, M, K = as_
    return _dot(E, a, as_, x, xs, [_map("b, m, k", "b, m, k"), _map("b, m, k", "b, k"), _map("b, m, k", "b, m")],
                ["parallel", "parallel", "reduction"], (B, M), float(p.get("scale", 1.0)))


def _gemm(E: Emitter, p, args):
    (a, as_), (b, bs) = args
    if p.get("c_col_maj"):
        raise NotImplementedError("c_col_maj GEMM steps have no program yet")
    N, K = bs if p.get("b_col_maj") else bs[::-1]
    M = math.prod(as_) // K
    a2 = E.reshape(a, as_, (M, K))
    bmap = _map("m, n, k", "n, k") if p.get("b_col_maj") else _map("m, n, k", "k, n")
    return _dot(E, a2, (M, K), b, bs, [_map("m, n, k", "m, k"), bmap, _map("m, n, k", "m, n")],
                ["parallel", "parallel", "reduction"], (M, N))


def _rope(E: Emitter, p, args):
    (x, xs), = args
    D = int(p["head_dim"])
    heads = math.prod(xs) // D
    half = D // 2
    xh = E.reshape(x, xs, (heads, D))
    x1, x2 = E.tmp("x1"), E.tmp("x2")
    E.emit(f"{x1} = tensor.extract_slice {xh}[0, 0] [{heads}, {half}] [1, 1] : {_t((heads, D))} to {_t((heads, half))}",
           f"{x2} = tensor.extract_slice {xh}[0, {half}] [{heads}, {half}] [1, 1] : {_t((heads, D))} to {_t((heads, half))}")
    ids = _map("h, i", "h, i")

    def rotated(sign: str, first: str, second: str) -> str:
        comb = "arith.subf" if sign == "-" else "arith.addf"
        return E.generic([(first, (heads, half), "bf16"), (second, (heads, half), "bf16")], [ids, ids, ids],
                         (heads, half), ["parallel", "parallel"],
                         ["%i = linalg.index 1 : index", "%ii = arith.index_cast %i : index to i32",
                          "%if = arith.sitofp %ii : i32 to f32", "%two = arith.constant 2.0 : f32",
                          f"%d = arith.constant {_f(D)} : f32", f"%theta = arith.constant {_f(p['rope_theta'])} : f32",
                          f"%pos = arith.constant {_f(p['pos'])} : f32",
                          "%t2 = arith.mulf %two, %if : f32", "%ex = arith.divf %t2, %d : f32",
                          "%nex = arith.negf %ex : f32", "%inv = math.powf %theta, %nex : f32",
                          "%ang = arith.mulf %pos, %inv : f32", "%c = math.cos %ang : f32", "%s = math.sin %ang : f32",
                          "%af = arith.extf %a : bf16 to f32", "%bf = arith.extf %b : bf16 to f32",
                          "%ac = arith.mulf %af, %c : f32", "%bs = arith.mulf %bf, %s : f32",
                          f"%y = {comb} %ac, %bs : f32", "%yb = arith.truncf %y : f32 to bf16",
                          "linalg.yield %yb : bf16"], block_args=["a", "b", "o"])

    y1 = rotated("-", x1, x2)     # x1 cos - x2 sin
    y2 = rotated("+", x2, x1)     # x2 cos + x1 sin
    e, r1, r2 = E.tmp("e"), E.tmp("i"), E.tmp("i")
    E.emit(f"{e} = tensor.empty() : {_t((heads, D))}",
           f"{r1} = tensor.insert_slice {y1} into {e}[0, 0] [{heads}, {half}] [1, 1] : {_t((heads, half))} into {_t((heads, D))}",
           f"{r2} = tensor.insert_slice {y2} into {r1}[0, {half}] [{heads}, {half}] [1, 1] : {_t((heads, half))} into {_t((heads, D))}")
    return r2, (heads, D)


def _softmax(E: Emitter, p, args):
    (x, xs), = args
    xf = E.to_f32(x, xs)
    e, y = E.tmp("e"), E.tmp("sm")
    E.emit(f"{e} = tensor.empty() : {_t(xs, 'f32')}",
           f"{y} = linalg.softmax dimension({len(xs) - 1}) ins({xf} : {_t(xs, 'f32')}) outs({e} : {_t(xs, 'f32')}) -> {_t(xs, 'f32')}")
    return E.to_bf16(y, xs), xs


def _masked_softmax(E: Emitter, p, args):
    """softmax(s + mask) written out (max, exp, sum, divide), since linalg.softmax of a row of -inf
    is NaN: a row with no valid position (its max -inf) subtracts 0 instead, so every exp is 0, and
    its zero sum gives 0 (llama_ops.masked_softmax, torch's safe softmax)."""
    (x, xs), (m, ms) = args
    rows, n = xs
    mm = E.reshape(m, ms, xs)
    ij, i_ = _map("i, j", "i, j"), _map("i, j", "i")
    z = E.generic([(x, xs, "bf16"), (mm, xs, "bf16")], [ij, ij, ij], xs, ["parallel", "parallel"],
                  ["%xf = arith.extf %a : bf16 to f32", "%mf = arith.extf %b : bf16 to f32",
                   "%y = arith.addf %xf, %mf : f32", "linalg.yield %y : f32"], out_et="f32", block_args=["a", "b", "o"])
    e0, ninf, mx0 = E.tmp("e"), E.tmp("ninf"), E.tmp("f")
    E.emit(f"{e0} = tensor.empty() : {_t((rows,), 'f32')}", f"{ninf} = arith.constant 0xFF800000 : f32",
           f"{mx0} = linalg.fill ins({ninf} : f32) outs({e0} : {_t((rows,), 'f32')}) -> {_t((rows,), 'f32')}")
    mx = E.generic([(z, xs, "f32")], [ij, i_], (rows,), ["parallel", "reduction"],
                   ["%y = arith.maximumf %a, %acc : f32", "linalg.yield %y : f32"],
                   init=mx0, out_et="f32", block_args=["a", "acc"])
    ex = E.generic([(z, xs, "f32"), (mx, (rows,), "f32")], [ij, i_, ij], xs, ["parallel", "parallel"],
                   ["%ninf = arith.constant 0xFF800000 : f32", "%zero = arith.constant 0.0 : f32",
                    "%dead = arith.cmpf oeq, %m, %ninf : f32", "%mx = arith.select %dead, %zero, %m : f32",
                    "%d = arith.subf %a, %mx : f32", "%y = math.exp %d : f32", "linalg.yield %y : f32"],
                   out_et="f32", block_args=["a", "m", "o"])
    sm = E.generic([(ex, xs, "f32")], [ij, i_], (rows,), ["parallel", "reduction"],
                   ["%y = arith.addf %a, %acc : f32", "linalg.yield %y : f32"],
                   init=E.zeros_f32((rows,)), out_et="f32", block_args=["a", "acc"])
    y = E.generic([(ex, xs, "f32"), (sm, (rows,), "f32")], [ij, i_, ij], xs, ["parallel", "parallel"],
                  ["%zero = arith.constant 0.0 : f32", "%empty = arith.cmpf oeq, %s, %zero : f32",
                   "%q = arith.divf %a, %s : f32", "%y = arith.select %empty, %zero, %q : f32",
                   "%yb = arith.truncf %y : f32 to bf16", "linalg.yield %yb : bf16"], block_args=["a", "s", "o"])
    return y, xs


def _elementwise(body: list[str], n_in: int):
    def op(E: Emitter, p, args):
        (a, as_) = args[0]
        ins = [(a, as_, "bf16")] + [(E.reshape(v, s, as_), as_, "bf16") for v, s in args[1:n_in]]
        ids = _map(_dims(len(as_)), _dims(len(as_)))
        names = ["a", "b"][:n_in]
        pre = [f"%{n}f = arith.extf %{n} : bf16 to f32" for n in names]
        y = E.generic(ins, [ids] * (n_in + 1), as_, ["parallel"] * len(as_),
                      pre + body + ["%yb = arith.truncf %y : f32 to bf16", "linalg.yield %yb : bf16"],
                      block_args=names + ["o"])
        return y, as_
    return op


_silu = _elementwise(["%na = arith.negf %af : f32", "%ex = math.exp %na : f32", "%one = arith.constant 1.0 : f32",
                      "%den = arith.addf %one, %ex : f32", "%y = arith.divf %af, %den : f32"], 1)
_mul = _elementwise(["%y = arith.mulf %af, %bf : f32"], 2)
_add = _elementwise(["%y = arith.addf %af, %bf : f32"], 2)


def _copy(E: Emitter, ins: tuple[str, tuple], out_map: str, out_shape: tuple, dims: int):
    x, xs = ins
    return E.generic([(x, xs, "bf16")], [out_map, _map(_dims(dims), _dims(dims))], out_shape,
                     ["parallel"] * dims, ["linalg.yield %a : bf16"], block_args=["a", "o"])


def _transpose(E: Emitter, p, args):
    (x, (B, M, N)), = args
    return _copy(E, (x, (B, M, N)), _map("b, n, m", "b, m, n"), (B, N, M), 3), (B, N, M)


def _repeat(E: Emitter, p, args):
    (x, (KV, T, D)), = args
    rep = int(p["n_heads"]) // int(p["n_kv_heads"])
    return _copy(E, (x, (KV, T, D)), _map("h, t, d", f"h floordiv {rep}, t, d"), (KV * rep, T, D), 3), (KV * rep, T, D)


def _kv_append(E: Emitter, p, args):
    (c, (KV, T, D)), (n, ns) = args
    n3 = E.reshape(n, ns, (KV, 1, D))
    e, r1, r2 = E.tmp("e"), E.tmp("i"), E.tmp("i")
    E.emit(f"{e} = tensor.empty() : {_t((KV, T + 1, D))}",
           f"{r1} = tensor.insert_slice {c} into {e}[0, 0, 0] [{KV}, {T}, {D}] [1, 1, 1] : {_t((KV, T, D))} into {_t((KV, T + 1, D))}",
           f"{r2} = tensor.insert_slice {n3} into {r1}[0, {T}, 0] [{KV}, 1, {D}] [1, 1, 1] : {_t((KV, 1, D))} into {_t((KV, T + 1, D))}")
    return r2, (KV, T + 1, D)


EMIT = {"rmsnorm": _rmsnorm, "gemv": _gemv, "gemv_batched": _gemv_batched, "gemm": _gemm, "rope": _rope,
        "softmax": _softmax, "masked_softmax": _masked_softmax, "silu": _silu, "mul": _mul, "add": _add, "transpose": _transpose,
        "repeat": _repeat, "kv_append": _kv_append}


def _function(name: str, case: Case, steps, shapes: dict, inputs: tuple[str, ...], result: str) -> str:
    E = Emitter(prefix="")
    values = {n: (f"%in_{n}", shapes[n]) for n in inputs}   # in_: never a region-local name
    for step in steps:
        E.prefix = f"{step.name}_"
        E.n = 0
        v, s = EMIT[step.op](E, F.step_params(case, step), [values[n] for n in step.ins])
        values[step.out] = (v, tuple(s))
    sig = ", ".join(f"%in_{n}: {_t(shapes[n])}" for n in inputs)
    v, s = values[result]
    return "\n".join([f"func.func @{name}({sig}) -> {_t(s)} {{", *E.lines, f"  return {v} : {_t(s)}", "}", ""])


def _block_inputs(steps) -> tuple[str, ...]:
    produced = {s.out for s in steps}
    seen: list[str] = []
    for step in steps:
        seen += [n for n in step.ins if n not in produced and n not in seen]
    return tuple(seen)


def plan(case: Case) -> tuple[Program, ...]:
    shapes = F.buffer_shapes(case)
    steps = F.block(case)
    if case.params["program"] == "fused":
        ins = _block_inputs(steps)
        return (Program(_function("fused_block", case, steps, shapes, ins, F.OUTPUT), "fused_block",
                        ins, (F.FUSED_OUTPUT,)),)
    return tuple(Program(_function(s.name, case, [s], shapes, s.ins, s.out), s.name, s.ins, (s.out,))
                 for s in steps)


def program(case: Case) -> Program:
    """The whole block as one module."""
    return plan(F.as_program(case, "fused"))[0]
