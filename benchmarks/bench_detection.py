"""How small a bug the comparison catches, per family on emu, measured with injected faults.

For a few cases of each family, with the check the suite's tests make (golden/compare.py with
the family's error model), and the same check with the per-element bound alone (for GEMM also
without the bfp16-quantized reference, as before the statistical check existed):

- 1-elem: the smallest relative error of ONE element that is caught, by bisection; the element
  is a typical one (median |expected|) and the error is r * |its expected value|;
- gain: the smallest gain error (every element times 1 + g) that is caught, by bisection;
- rtz: a device that rounds toward zero instead of to nearest: GEMM its bf16 output, tiles the
  product, reductions and matmul every f32 addition of their sums;
- bf16-acc: a device that accumulates its sums in bf16 (rounded to nearest) instead of f32;
- +1/4 ulp: a quarter of the elements (every fourth) one output ulp too large: a mean bias of
  a quarter of an ulp;
- false alarms: clean emu runs over 50 --golden-seed values that the check flags.

``--curve``: the detection rate of the project's own mutants against size (issue 38): GEMM
partial sums in bf16 (per K tile of 64, or every addition) for K 32..8192; the reductions' bf16
and f16 accumulators, one-pass variance, a moved eps and log-softmax's wrong forms (log of
softmax, no max subtracted, max + log(sum) first) for row lengths 33..16384; the fused block's
steps with f16 / bf16 accumulators (tests/selftest/fixtures/*_mutants.py), per block.

    python benchmarks/bench_detection.py [--seeds 50]
    python benchmarks/bench_detection.py --curve --seeds 3
"""
from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from ml_dtypes import bfloat16

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accel_regress.golden import census
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.matmul import golden as mm
from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.rowexpandmul_fillpad import golden as tiles  # noqa: E402
from accel_regress.golden.dtypes import ulp  # noqa: E402
from accel_regress.families.f32_reduction import emu as emu_red  # noqa: E402
from accel_regress.families.gemm_partition_n import emu as emu_gemm  # noqa: E402
from accel_regress.families.matmul import emu as emu_mm  # noqa: E402
from accel_regress.families.rowexpandmul_fillpad import emu as emu_tiles  # noqa: E402


# --- roundings a faulty device may use ------------------------------------------------------------

def round_toward_zero(x, fmt: str) -> np.ndarray:
    """x (exact in float64) rounded toward zero onto format ``fmt``'s grid, as float64."""
    x = np.asarray(x, np.float64)
    step = ulp(x, fmt)
    return np.trunc(x / step) * step


def round_bf16(x) -> np.ndarray:
    return np.asarray(x, np.float32).astype(bfloat16).astype(np.float64)


def rtz_f32(x) -> np.ndarray:
    return round_toward_zero(x, "f32")


def accumulate(a: np.ndarray, b: np.ndarray, rnd) -> np.ndarray:
    """a @ b summed over K in order, each partial sum rounded by ``rnd`` (products exact in f64)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    acc = np.zeros(a.shape[:-1] + b.shape[-1:])
    for k in range(a.shape[-1]):
        acc = rnd(acc + a[..., :, k:k + 1] * b[..., k:k + 1, :])
    return acc


# --- the families: cases, the device (emu, or emu with a fault), the check -----------------------

class Family:
    name = ""
    cases: list = []

    def run(self, case, inputs, fault=None) -> dict:
        raise NotImplementedError

    def expected(self, case, inputs, legacy: bool = False) -> dict:
        """{output: (ref, ErrorModel)}."""
        raise NotImplementedError

    def element(self, ref: np.ndarray) -> tuple:
        """Index of a typical element: median |expected| among the finite, nonzero ones."""
        mag = np.where(np.isfinite(ref) & (ref != 0), np.abs(ref), np.nan)
        med = np.nanmedian(mag)
        return np.unravel_index(int(np.nanargmin(np.abs(mag - med))), ref.shape)


def caught(exp: dict, outs: dict, stats: bool = True) -> bool:
    for name, (ref, model) in exp.items():
        tol = model if stats else np.asarray(model.tol)
        if not census(outs[name], ref, tol=tol, name=name).ok:
            return True
    return False


class Gemm(Family):
    name = "gemm_partition_n"
    cases = [gemm.make_case(gemm.CI_CONFIGS[7]),
             gemm.make_case(gemm.GemmConfig(64, 64, 256, 16, 64, 64, 4, True, False, 1))]

    def run(self, case, inputs, fault=None):
        with _patched(emu_gemm, fault):
            return {"forward": emu_gemm.run(case, inputs)["forward"][0]}

    def expected(self, case, inputs, legacy=False):
        cfg = gemm.config_of(case)
        ref, model = gemm.expected(inputs, cfg, None if legacy else gemm.BLOCK_ROUNDING)
        return {"forward": (ref, model)}

    out_fmt = "bf16"
    faults = {
        "rtz": {"to_bf16": lambda x: round_toward_zero(np.asarray(x, np.float32), "bf16").astype(np.float32)},
        "bf16-acc": {"IronGemm._mmul": lambda self, a, b: _gemm_bf16_acc(self, a, b)},
    }


def _gemm_bf16_acc(op, a, b):
    from accel_regress.golden.dtypes import quantize_bfp16
    if op.emulate_bfp16:
        a, b = quantize_bfp16(a, 1), quantize_bfp16(b, 0)
    return accumulate(a, b, round_bf16).astype(np.float32)


class Tiles(Family):
    name = "rowexpandmul_fillpad"
    cases = [tiles.make_case(tiles.seed_config(16, "fused")),
             tiles.make_case(tiles.TileConfig(16, 100, 16, 97, "bf16", "zero", "fused"))]
    out_fmt = None

    def run(self, case, inputs, fault=None):
        out = emu_tiles.run(case, inputs)
        if fault == "rtz":      # the product rounded toward zero in the tile dtype
            cfg = tiles.config_of(case)
            ref = tiles.tile_reference(inputs, cfg)
            inside = tiles.valid_mask(cfg)
            got = np.asarray(out["out"], np.float64).copy()
            got[inside] = round_toward_zero(ref[inside], cfg.dtype)
            out = {"out": got}
        return out

    def expected(self, case, inputs, legacy=False):
        cfg = tiles.config_of(case)
        ref = tiles.tile_reference(inputs, cfg)
        return {"out": (ref, tiles.error_model(ref, cfg))}

    faults = {"rtz": None}

    def fmt(self, case):
        return case.params["dtype"]


class Reductions(Family):
    name = "f32_reduction"
    cases = [R.make_case(k, R.SEED_SHAPES[k]) for k in ("row_sum", "layernorm", "matmul")]
    out_fmt = "f32"

    def run(self, case, inputs, fault=None):
        with _patched(emu_red, fault):
            return emu_red.run(case, inputs)

    def expected(self, case, inputs, legacy=False):
        ref = R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        return {n: (ref[n], tol[n]) for n in ref}

    faults = {
        "rtz": {"_sum_rows": lambda x, variant, vlen: _rows(x, rtz_f32), "_matmul": lambda a, b: _mm(a, b, rtz_f32)},
        "bf16-acc": {"_sum_rows": lambda x, variant, vlen: _rows(x, round_bf16),
                     "_matmul": lambda a, b: _mm(a, b, round_bf16)},
    }


def _rows(x, rnd):
    x = np.asarray(x, np.float64)
    acc = np.zeros(x.shape[0])
    for j in range(x.shape[1]):
        acc = rnd(acc + x[:, j])
    return acc.astype(np.float32)


def _mm(a, b, rnd):
    return accumulate(a, b, rnd).astype(np.float32)


class Matmul(Family):
    name = "matmul"
    cases = [mm.make_case(mm.MatmulConfig(127, 129, 131, "f32", "f32", inputs="normal")),
             mm.make_case(mm.MatmulConfig(512, 512, 640, inputs="normal"))]
    out_fmt = "f32"

    def run(self, case, inputs, fault=None):
        if fault is None:
            return emu_mm.run(case, inputs)
        rnd = rtz_f32 if fault == "rtz" else round_bf16
        a = np.asarray(inputs["lhs"], np.float32)
        b = np.asarray(inputs["rhs"], np.float32)
        return {"out": accumulate(a, b, rnd).astype(np.float32)}

    def expected(self, case, inputs, legacy=False):
        ref, tol = mm.expected(case, inputs)
        return {"out": (ref, tol)}

    faults = {"rtz": None, "bf16-acc": None}


@contextlib.contextmanager
def _patched(module, fault_name):
    """Replace the named attributes of an emu module (``Class.attr`` for methods) for a while."""
    family = {emu_gemm: Gemm, emu_red: Reductions}[module]
    patch = family.faults.get(fault_name) if fault_name else None
    saved = []
    try:
        for dotted, fn in (patch or {}).items():
            owner, attr = module, dotted
            if "." in dotted:
                cls, attr = dotted.split(".")
                owner = getattr(module, cls)
            saved.append((owner, attr, getattr(owner, attr)))
            setattr(owner, attr, fn)
        yield
    finally:
        for owner, attr, old in reversed(saved):
            setattr(owner, attr, old)


# --- the measurements --------------------------------------------------------------------------

LOWEST = 1e-12        # below this a relative change is under any format's resolution here


def bisect(is_caught, lo: float = LOWEST, hi: float = 4.0, steps: int = 60) -> float:
    """Smallest x in [lo, hi] (log scale) with is_caught(x), assuming monotony; inf if none."""
    if not is_caught(hi):
        return math.inf
    if is_caught(lo):
        return lo
    for _ in range(steps):
        mid = math.sqrt(lo * hi)
        if is_caught(mid):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.02:
            break
    return hi


def one_element(exp, outs, stats) -> float:
    name = next(iter(exp))
    ref = exp[name][0]
    idx = Family().element(ref)

    def moved(r):
        got = {k: np.asarray(v, np.float64).copy() for k, v in outs.items()}
        got[name][idx] += r * abs(ref[idx])
        return caught(exp, got, stats)
    return bisect(moved)


def gain(exp, outs, stats) -> float:
    return bisect(lambda g: caught(exp, {k: np.asarray(v, np.float64) * (1 + g) for k, v in outs.items()}, stats))


def quarter_ulp(exp, outs, fmt, stats) -> bool:
    got = {}
    for k, v in outs.items():
        v = np.asarray(v, np.float64).copy()
        flat = v.reshape(-1)
        sel = np.arange(0, flat.size, 4)
        finite = np.isfinite(flat[sel]) & (np.asarray(exp[k][0], np.float64).reshape(-1)[sel] != 0)
        sel = sel[finite]
        flat[sel] += ulp(flat[sel], fmt)
        got[k] = v
    return caught(exp, got, stats)


def measure(fam: Family, case, seeds: int) -> dict:
    inputs = fam.__class__.inputs(case)
    clean = fam.run(case, inputs)
    fmt = fam.fmt(case) if hasattr(fam, "fmt") else fam.out_fmt
    row = {"case": case.id, "elements": sum(int(np.size(v[0])) for v in fam.expected(case, inputs).values())}
    for label, stats, legacy in (("model", True, False), ("per-element", False, fam.name == "gemm_partition_n")):
        exp = fam.expected(case, inputs, legacy)
        outs = {k: clean[k] for k in exp}
        r = {"1-elem": one_element(exp, outs, stats), "gain": gain(exp, outs, stats)}
        for f in ("rtz", "bf16-acc"):
            if f in fam.faults:
                r[f] = caught(exp, {k: v for k, v in fam.run(case, inputs, f).items() if k in exp}, stats)
            else:
                r[f] = None
        r["+1/4 ulp"] = quarter_ulp(exp, outs, fmt, stats)
        row[label] = r
    alarms = 0
    for s in range(seeds):
        c = fam.__class__.reseed(case, s)
        inp = fam.__class__.inputs(c)
        exp = fam.expected(c, inp)
        out = fam.run(c, inp)
        alarms += caught(exp, {k: out[k] for k in exp})
    row["false alarms"] = alarms
    return row


def _inputs_of(module):
    return staticmethod(lambda case: module.make_inputs(case))


Gemm.inputs = _inputs_of(gemm)
Tiles.inputs = _inputs_of(tiles)
Reductions.inputs = _inputs_of(R)
Matmul.inputs = _inputs_of(mm)
Gemm.reseed = staticmethod(lambda c, s: gemm.make_case(gemm.config_of(c), s))
Tiles.reseed = staticmethod(lambda c, s: tiles.make_case(tiles.config_of(c), s))
Reductions.reseed = staticmethod(lambda c, s: R.make_case(c.params["kind"], c.params["shape"], c.params["variant"],
                                                          c.params["vlen"], s))
Matmul.reseed = staticmethod(lambda c, s: mm.make_case(mm.config_of(c), s))


def _fmt_x(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "caught" if x else "missed"
    if x <= LOWEST:
        return f"<={LOWEST:g}"
    return "never" if math.isinf(x) else f"{x:.2g}"


# --- detection against size (issue 38): the project's own mutants, K 32..8192, rows to 16384 -------

def _fixture(name: str):
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "tests" / "selftest" / "fixtures" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _gemm_tile_bf16(a, b, tk=64):
    """C accumulated in f32 within each K tile of ``tk``, stored as bf16 between tiles."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k0 in range(0, a.shape[1], tk):
        part = (a[:, k0:k0 + tk].astype(np.float64) @ b[k0:k0 + tk].astype(np.float64)).astype(np.float32)
        acc = round_bf16(acc + part).astype(np.float32)
    return acc


def curve_gemm(sizes, seeds, classes=("normal", "shifted")):
    """gemm_partition_n's bf16 path, M = N = 64: {(mutant, class): {K: rate}}."""
    mutants = {"bf16 partial sums per K tile": _gemm_tile_bf16,
               "bf16 accumulator": lambda a, b: accumulate(a, b, round_bf16).astype(np.float32)}
    out = {}
    for cls in classes:
        for K in sizes:
            cfg = gemm.GemmConfig(64, K, 64, 16, 64, 64, 4, True, False, 1, emulate_bfp16=False, inputs=cls)
            for s in range(seeds):
                case = gemm.make_case(cfg, s)
                ins = gemm.make_inputs(case)
                ref, model = gemm.expected(ins, cfg)
                for name, fn in mutants.items():
                    got = round_bf16(fn(ins["A"], ins["B"]))
                    hit = not census(got, ref, tol=model, name="C").ok
                    out.setdefault((name, cls), {}).setdefault(K, []).append(hit)
    return out


def curve_reductions(sizes, seeds, rows=16, classes=("normal", "shifted")):
    """f32_reduction's row kinds, ``rows`` rows of each length: {(kind mutant, class): {n: rate}}."""
    mut = _fixture("reduction_mutants")
    out = {}
    for cls in classes:
        for n in sizes:
            for kind in R.ROW_KINDS:
                for s in range(seeds):
                    case = R.make_case(kind, (rows, n), base_seed=s, inputs=cls)
                    ins = R.make_inputs(case)
                    ref = R.reference(case, ins)
                    tol = R.tolerances(case, ins, ref)
                    for name, how in mut.MUTANTS.items():
                        if kind not in mut.APPLIES[name]:
                            continue
                        got = mut.compute(kind, ins, **how)
                        hit = any(not census(got[o], ref[o], tol=tol[o], name=o).ok for o in ref)
                        out.setdefault((f"{kind} {name}", cls), {}).setdefault(n, []).append(hit)
    return out


def curve_fused(seeds):
    """fused_decode compare mode, every mutated step, per block: {(mutant, class): {block: rate}}."""
    from accel_regress.families.fused_decode import emu as emu_fd
    from accel_regress.families.fused_decode import golden as F
    mut = _fixture("fused_mutants")
    blocks = {"small": F.SMALL, "odd": F.SMALL_ODD, "odd-large": F.SMALL_ODD_LARGE, "llama-1b": F.LLAMA_3_2_1B}
    out = {}
    for cls in ("normal", "shifted"):
        for label, cfg in blocks.items():
            for s in range(seeds if label != "llama-1b" else 1):
                case = F.make_case(cfg, s, "steps", inputs=cls)
                ins = F.make_inputs(case)
                clean = emu_fd.run(case, ins)
                for name, fault in mut.MUTANTS.items():
                    got = fault(case, dict(clean))
                    hit = F.first_divergent(F.compare_steps(case, ins, got)) is not None
                    out.setdefault((name, cls), {}).setdefault(label, []).append(hit)
    return out


def print_curve(family: str, table: dict, axis: str) -> None:
    sizes = sorted({k for v in table.values() for k in v}, key=lambda k: (isinstance(k, str), k))
    head = f"| {family} mutant | class | " + " | ".join(f"{axis}={k}" for k in sizes) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for (name, cls), by in table.items():
        cells = [f"{sum(by[k])}/{len(by[k])}" if k in by else "" for k in sizes]
        print(f"| {name} | {cls} | " + " | ".join(cells) + " |")
    print()


def main_curve(args) -> int:
    t0 = time.time()
    fams = args.family or ["gemm_partition_n", "f32_reduction", "fused_decode"]
    if "gemm_partition_n" in fams:
        print_curve("gemm_partition_n (bf16 path, M=N=64)", curve_gemm((32, 128, 512, 2048, 8192), args.seeds), "K")
    if "f32_reduction" in fams:
        print_curve("f32_reduction (16 rows)", curve_reductions((33, 128, 1024, 4096, 16384), args.seeds), "n")
    if "fused_decode" in fams:
        print_curve("fused_decode (compare mode)", curve_fused(args.seeds), "block")
    print(f"detection rate = mutated runs the check fails / seeds; {time.time() - t0:.0f} s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50, help="clean seeds for the false-alarm count")
    ap.add_argument("--family", action="append", help="only these families")
    ap.add_argument("--curve", action="store_true",
                    help="detection rate of the project's mutants against size (issue 38); --seeds per size")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.curve:
        return main_curve(args)
    rows = []
    t0 = time.time()
    for fam in (Gemm(), Tiles(), Reductions(), Matmul()):
        if args.family and fam.name not in args.family:
            continue
        for case in fam.cases:
            row = measure(fam, case, args.seeds)
            rows.append((fam.name, row))
            print(f"# {fam.name} {row['case']}: done at {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    cols = ("1-elem", "gain", "rtz", "bf16-acc", "+1/4 ulp")
    head = f"| family | case | elements | check | " + " | ".join(cols) + f" | false alarms / {args.seeds} seeds |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, row in rows:
        for label in ("model", "per-element"):
            r = row[label]
            alarms = str(row["false alarms"]) if label == "model" else ""
            print(f"| {name} | {row['case']} | {row['elements']} | {label} | "
                  + " | ".join(_fmt_x(r[c]) for c in cols) + f" | {alarms} |")
    print(f"\n1-elem: relative error of one typical element (x |expected|); gain: g in (1 + g); "
          f"{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
