"""The ONNX node corpus's error models against blunt comparators, and their false alarms (issue 45).

    python benchmarks/bench_onnx_corpus.py comparators [--module M ...]
    python benchmarks/bench_onnx_corpus.py false-alarms [--seeds 50] [--module M ...]

``comparators``: for every case with a float output, an injected error (one element with
0 < |y| < 1e-4 doubled; and, apart, the smallest nonzero |y| doubled) on a perfect result (the
reference rounded to the output's dtype), and how many cases each comparator accepts:
iree-run-module --expected_output (|expected - actual| <= 1e-4 for f32 and f64, 1e-3 for f16:
iree-org/iree runtime/src/iree/tooling/comparison.cc:23-28, the f32_threshold flags, and
runtime/src/iree/hal/buffer_view_matchers.c, iree_hal_compare_strided_elements_approximate_absolute_f32,
at 04a27cc9), onnx's own rtol / atol per case
(|actual - desired| <= atol + rtol |desired|, desired the backend's output:
onnx/backend/test/runner/__init__.py, assert_similar_outputs) and this suite's error model (the
corpus test's assert_close, statistics included).

``false-alarms``: the corpus regenerated at golden seeds 1..N (the generators' inputs redrawn) for
the generator modules of the modelled random-input classes (``MODULES``; the full corpus takes 80 s
a seed), each case run on onnxruntime's CPUExecutionProvider in this process and judged as the
corpus test judges it; prints the cases that did not pass, per seed. Each seed's corpus goes to a
scratch cache root. Slow by design: a benchmark, never a default test.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

import numpy as np

# The generator modules whose cases draw random inputs and have a model other than the corpus's
# own tolerance (ulp, accumulation, transform, attention, normalization), plus exact ones with
# random data.
MODULES = ("exp", "log", "sqrt", "tanh", "sigmoid", "erf", "sin", "cos", "add", "sub", "mul", "div", "pow",
           "matmul", "gemm", "reducesum", "reducemean", "reducel1", "reducesumsquare", "dft", "stft",
           "attention", "layernormalization", "rmsnormalization", "transpose", "relu", "max", "min")
IREE_THRESHOLD = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-3}


def _judge(case, got: dict, ref: dict, tol: dict) -> str:
    """'' when the corpus test would pass ``got``, else its first line of mismatch."""
    from accel_regress.golden import assert_close
    from accel_regress.families.onnx_node import golden as G
    for name in G.output_names(case):
        if ref[name].dtype.kind in "US":
            continue
        try:
            assert_close(G.widened(got[name]), ref[name], tol=tol[name], name=name, zero_sign=G.zero_sign(case))
        except AssertionError as exc:
            return str(exc).splitlines()[0][:160]
    return ""


def _perfect(case, ref: dict) -> dict:
    contract = __import__("accel_regress.families.onnx_node.golden", fromlist=["x"]).output_contract(case)
    out = {}
    for name, v in ref.items():
        dtype = contract.get(name, (None,))[0]
        with np.errstate(all="ignore"):
            out[name] = v.astype(dtype) if dtype and v.dtype.kind == "f" else v
    return out


def _doubled(got: dict, pick) -> tuple:
    """(the results with one chosen float element doubled, that element's |y|) or (None, None)."""
    for name, y in got.items():
        if y.dtype.kind != "f":
            continue
        a = np.abs(y.astype(np.float64))
        where = np.flatnonzero(pick(a))
        if where.size:
            z = y.copy().reshape(-1)
            z[where[0]] *= 2
            return {**got, name: z.reshape(y.shape)}, (name, float(a.reshape(-1)[where[0]]), str(y.dtype))
    return None, None


def comparators(modules) -> int:
    from accel_regress.families.onnx_node import golden as G
    cases = G.cases(0, modules)
    rows = collections.Counter()
    missed = []
    picks = {"small (0<|y|<1e-4) doubled": lambda a: (a > 0) & (a < 1e-4) & np.isfinite(a),
             "smallest nonzero |y| doubled": lambda a: ((a > 0) & np.isfinite(a) & (a == a[(a > 0) & np.isfinite(a)].min()))
             if ((a > 0) & np.isfinite(a)).any() else np.zeros(a.shape, bool)}
    for case in cases:
        if case.params["error_model"] == "random":
            continue
        try:
            inputs = G.make_inputs(case)
            ref = G.reference(case, inputs)
            tol = G.tolerances(case, inputs, ref)
        except Exception:
            continue
        perfect = _perfect(case, ref)
        if _judge(case, perfect, ref, tol):
            continue       # the reference itself, rounded, is not accepted: not a case for this table
        for fault, pick in picks.items():
            bad, what = _doubled(perfect, pick)
            if bad is None:
                continue
            _, size, dtype = what
            rows[(fault, "cases")] += 1
            rows[(fault, "iree-run-module")] += size <= IREE_THRESHOLD.get(dtype, 0.0)
            p = case.params
            rows[(fault, "onnx rtol/atol")] += size <= p["atol"] + p["rtol"] * 2 * size
            ours = not _judge(case, bad, ref, tol)
            rows[(fault, "error model")] += ours
            if ours:
                missed.append(f"  {case.id} ({fault}; {p['error_model']}: |y| = {size:.3g})")
    print(f"{len(cases)} corpus cases (onnx {cases[0].params['corpus_key'].split('-')[1] if cases else '?'}); "
          "an injected error accepted by each comparator:")
    print(f"{'fault':<32} {'cases':>6} {'iree-run-module':>16} {'onnx rtol/atol':>15} {'error model':>12}")
    for fault in picks:
        r = [rows[(fault, k)] for k in ("cases", "iree-run-module", "onnx rtol/atol", "error model")]
        print(f"{fault:<32} {r[0]:>6} {r[1]:>16} {r[2]:>15} {r[3]:>12}")
    if missed:
        print("accepted by the error model (the fault is within what the model allows there):")
        print("\n".join(missed[:40]) + (f"\n  ... {len(missed) - 40} more" if len(missed) > 40 else ""))
    return 0


def false_alarms(seeds: int, first: int, modules) -> int:
    from accel_regress.backends.onnxruntime import OnnxRuntimeBackend
    from accel_regress.core.errors import CompileError, Crash, Unsupported
    from accel_regress.families.onnx_node import golden as G
    backend = OnnxRuntimeBackend()
    reason = backend.availability()
    if reason:
        print(f"onnxruntime unavailable: {reason}")
        return 2
    from pathlib import Path
    from accel_regress.results import expectations as X
    known = X.load_dir(Path(__file__).resolve().parents[1] / "expectations").for_backend("onnxruntime")
    judged = alarms = declared = 0
    t0 = time.monotonic()
    for seed in range(first, first + seeds):
        with tempfile.TemporaryDirectory(prefix="accel-onnx-seed-") as root:
            os.environ["ACCEL_CACHE_DIR"] = root
            G._corpus_at.cache_clear()
            for case in G.cases(seed, modules):
                if case.params["error_model"] in ("random", "corpus"):
                    continue
                inputs = G.make_inputs(case)
                try:
                    got = backend.run(case, inputs)
                except (CompileError, Crash, Unsupported):
                    continue             # not a verdict of the model
                ref = G.reference(case, inputs)
                why = _judge(case, got, ref, G.tolerances(case, inputs, ref))
                judged += 1
                test = f"tests/test_onnx_corpus.py::test_onnx_node[{case.id}]"
                if why and any(e.matches(test) and e.verdict == "FAIL" for e in known):
                    declared += 1          # a known bug (expectations/onnxruntime.toml), counted apart
                elif why:
                    alarms += 1
                    print(f"seed {seed}: {case.id} ({case.params['error_model']}): {why}")
    print(f"{judged} judgements over seeds {first}..{first + seeds - 1} ({', '.join(modules)}): "
          f"{alarms} did not pass ({declared} more are declared bugs); {time.monotonic() - t0:.0f} s")
    return 0 if alarms == 0 else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("comparators", "false-alarms"))
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=1, help="seed 0 is the corpus as onnx generates it")
    ap.add_argument("--module", action="append", default=None,
                    help="a generator module of onnx.backend.test.case.node (repeatable; comparators: all by default)")
    args = ap.parse_args(argv)
    if args.what == "comparators":
        return comparators(args.module)
    return false_alarms(args.seeds, args.first_seed, args.module or list(MODULES))


if __name__ == "__main__":
    sys.exit(main())
