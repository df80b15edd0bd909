"""The ONNX node corpus as a family: one case per corpus case (corpus.py), judged by error models.

A case's parameters are the corpus entry's: ``name``, ``op_type``, ``opset``, ``expanded`` (the
op's function body as nodes), the dtypes and shapes of its inputs and outputs, the corpus's own
rtol / atol, ``error_model`` (error_models.py's class) with ``judged_by`` (its allowance in words),
``reference`` (where the reference comes from) and ``reference_check`` (the corpus's outputs
against onnx.reference.ReferenceEvaluator at their own dtypes). ``corpus_key`` names the corpus
folder under the cache root, so the same name in another onnx, numpy or seed is another case.

Inputs and outputs are named as the model's graph names them; a sequence's items are
``<name>[<j>]``; an absent optional is left out. Strings travel as numpy's ``U`` dtype.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.golden.dtypes import ulp
from accel_regress.golden.tolerance import F32_UNIT_ROUNDOFF, ErrorModel, exact_model, gamma
from accel_regress.families.onnx_node import corpus as C
from accel_regress.families.onnx_node import error_models as M

OP = "onnx_node"
FLOAT64_CLASSES = ("ulp", "accumulation", "transform", "attention", "normalization")


def case_id(name: str) -> str:
    return f"onnx-{name}"


def make_case(entry: dict, corpus_key: str, base_seed: int = 0) -> Case:
    in_dtypes, in_shapes = C.describe_values(entry["inputs"])
    out_dtypes, out_shapes = C.describe_values(entry["outputs"])
    params = {"name": entry["name"], "op_type": entry["op_type"], "domain": entry["domain"],
              "opset": entry["opset"], "expanded": entry["expanded"], "attrs": entry.get("attrs", {}),
              "in_dtypes": in_dtypes, "in_shapes": in_shapes, "out_dtypes": out_dtypes, "out_shapes": out_shapes,
              "rtol": entry["rtol"], "atol": entry["atol"], "corpus_key": corpus_key,
              "random_draw": bool(entry.get("random_draw"))}
    cls, judged_by = M.classify(params, "float64" in entry, entry.get("float64_why", ""))
    check = entry["reference_check"]
    params.update({
        "error_model": cls, "judged_by": judged_by,
        "reference": ("float64: the model retyped to double, run by onnx.reference.ReferenceEvaluator"
                      if cls in FLOAT64_CLASSES else "the corpus's stored outputs"),
        "reference_check": check["status"] + (f" (max abs {check['max_abs']:.3g})" if "max_abs" in check else ""),
    })
    return Case.make(OP, case_id(entry["name"]), params, base_seed)


def cases(base_seed: int = 0, modules=None) -> list[Case]:
    """Every case of the installed onnx's corpus at this seed (generated once: corpus.ensure)."""
    corpus = C.ensure(base_seed, modules)
    return [make_case(e, corpus.folder.name, base_seed) for e in corpus.index["cases"]]


# The default run's case of an operator type: the op's own node before its expanded function body,
# a modelled class before the corpus's own tolerance, the oldest opset (the one most runtimes load),
# then the name: chosen from the corpus alone (never from a backend's verdicts), so every backend
# and every run gets the same case.
_CLASS_RANK = {"ulp": 0, "accumulation": 0, "exact-value": 1, "exact": 2}


def _sample_rank(c: Case) -> tuple:
    p = c.params
    return (bool(p["expanded"]), _CLASS_RANK.get(p["error_model"], 3), p["opset"], p["name"])


def representatives(all_cases: list[Case]) -> list[Case]:
    """One case per operator type (the default run's sample; ``-m corpus`` runs all of them)."""
    best: dict[str, Case] = {}
    for c in all_cases:
        held = best.get(c.params["op_type"])
        if held is None or _sample_rank(c) < _sample_rank(held):
            best[c.params["op_type"]] = c
    return sorted(best.values(), key=lambda c: c.params["name"])


def corpus_of(key: str) -> C.Corpus:
    return _corpus_at(C.folder_of(key))


@lru_cache(maxsize=8)
def _corpus_at(folder) -> C.Corpus:
    return C.Corpus(folder)


def entry(case: Case) -> dict:
    return corpus_of(case.params["corpus_key"]).cases[case.params["name"]]


def _flat(names, values) -> dict[str, np.ndarray]:
    out = {}
    for name, v in zip(names, values):
        if isinstance(v, list):
            out.update({f"{name}[{j}]": x for j, x in enumerate(v)})
        elif v is not None:
            out[name] = v
    return out


def make_inputs(case: Case) -> dict[str, np.ndarray]:
    e = entry(case)
    return _flat(e["input_names"], corpus_of(case.params["corpus_key"]).values(e["name"], "inputs"))


def output_names(case: Case) -> list[str]:
    e = entry(case)
    names = []
    for name, v in zip(e["output_names"], e["outputs"]):
        if v["kind"] == "sequence":
            names += [f"{name}[{j}]" for j in range(len(v["items"]))]
        elif v["kind"] == "tensor":
            names.append(name)
    return names


def widened(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "b":
        return a.astype(np.uint8)
    if a.dtype.kind == "f" or type(a.dtype).__module__.startswith("ml_dtypes") and a.dtype.kind == "V":
        return a.astype(np.float64)        # every float format here embeds in float64 exactly
    return a


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """float64 for the ``ulp`` and ``accumulation`` classes (a float64 value past float32's range
    becomes the inf a correct float32 device returns); else the corpus's outputs, floats widened
    to float64 and booleans as 0/1."""
    e = entry(case)
    corpus = corpus_of(case.params["corpus_key"])
    if case.params["error_model"] in FLOAT64_CLASSES:
        ref = {n: corpus.tensor(e["name"], t) for n, t in zip(e["output_names"], e["float64"])}
        with np.errstate(over="ignore"):
            return {n: np.where(np.isfinite(v.astype(np.float32)), v, v.astype(np.float32)).astype(np.float64)
                    for n, v in ref.items()}
    out = _flat(e["output_names"], corpus.values(e["name"], "outputs"))
    return {n: (v if v.dtype.kind in "US" else widened(v)) for n, v in out.items()}


def zero_sign(case: Case) -> bool:
    return case.params["error_model"] == "exact"


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    p = case.params
    cls, why = p["error_model"], p["judged_by"]
    if cls in ("exact", "exact-value"):
        return {n: exact_model(np.shape(v), why) for n, v in ref.items()}
    if cls == "ulp":
        k = M.ULP[p["op_type"]]
        return {n: ErrorModel(k * ulp(v, "f32"), None, why_not=f"{why}: an ulp bound promises no mean or spread")
                for n, v in ref.items()}
    if cls == "accumulation":
        e = entry(case)
        corpus = corpus_of(p["corpus_key"])
        mags = [corpus.tensor(e["name"], t) for t in e["magnitude64"]]
        n = M.reduction_terms(p["op_type"], p["in_shapes"], p["out_shapes"], p["attrs"])
        k = M.roundings(p["op_type"], n or 1)
        return {name: ErrorModel(gamma(k) * np.abs(mag), "accumulation", k=max(k, 1))
                for name, mag in zip(e["output_names"], mags)}
    if cls == "attention":
        e = entry(case)
        corpus = corpus_of(p["corpus_key"])
        mags = [corpus.tensor(e["name"], t) for t in e["magnitude64"]]
        dtype = next(d for d in p["in_dtypes"] if d in M.UNIT_ROUNDOFF)
        import onnx
        node_outputs = list(onnx.load_from_string(corpus.model_bytes(e["name"])).graph.node[0].output)
        allow = M.attention_allowances(p["attrs"], p["in_shapes"][0], [ref[n] for n in e["output_names"]], mags,
                                       [node_outputs.index(n) for n in e["output_names"]], M.UNIT_ROUNDOFF[dtype])
        return {n: ErrorModel(a, None, why_not=f"{why}: a bound of the worst case, no distribution promised")
                for n, a in zip(e["output_names"], allow)}
    if cls == "normalization":
        e = entry(case)
        allow = M.normalization_allowances(p["op_type"], p["attrs"], [inputs[n] for n in e["input_names"]],
                                           [ref[n] for n in e["output_names"]])
        return {n: ErrorModel(a, None, why_not=f"{why}: a bound of the worst case, no distribution promised")
                for n, a in zip(e["output_names"], allow)}
    if cls == "transform":
        e = entry(case)
        mags = [corpus_of(p["corpus_key"]).tensor(e["name"], t) for t in e["magnitude64"]]
        n = int(e["terms"])
        factor, twiddle = M.transform_bound(n, F32_UNIT_ROUNDOFF)
        return {name: ErrorModel(factor * np.abs(mag), "accumulation", k=max(n - 1, 1), lib=twiddle * np.abs(mag))
                for name, mag in zip(e["output_names"], mags)}
    rtol, atol = p["rtol"], p["atol"]
    return {n: ErrorModel(atol + rtol * np.abs(np.where(np.isfinite(v), v, 0.0)) if v.dtype.kind not in "US"
                          else np.zeros(v.shape), None,
                          why_not=f"{why}: compared as the corpus compares, rtol {rtol:g} / atol {atol:g}")
            for n, v in ref.items()}


def output_contract(case: Case) -> dict:
    """Each tensor output's dtype and shape as the corpus stores it."""
    e = entry(case)
    out = {}
    for name, v in zip(e["output_names"], e["outputs"]):
        items = [(name, v)] if v["kind"] == "tensor" else (
            [(f"{name}[{j}]", t) for j, t in enumerate(v["items"])] if v["kind"] == "sequence" else [])
        for n, t in items:
            if t["dtype"] in ("str", "bytes"):      # the width of U varies: compared in the test
                continue
            try:
                np.dtype(t["dtype"])
            except TypeError:       # ml_dtypes' types, which numpy has no name for
                continue
            out[n] = (t["dtype"], tuple(t["shape"]))
    return out
