"""The fused_decode family (seed 001): one decode step of a Llama-3.2-1B-shaped block as a runlist.

The pipeline is data: ``DECODE_BLOCK`` lists the steps, each an operator of families/fused_decode/llama_ops.py
with its named input buffers and its output buffer. A case runs either the runlist step by step
(``program="steps"``: the backend returns every step's output buffer, in bf16 as IRON's host
buffers hold them) or the block as one fused program (``program="fused"``: ``fused_out``).

Three ways to judge a run, as seed 001's FusedMLIROperator dispatch modes:
- compare mode (``compare_steps``): every step against its reference re-seeded from the device's
  own inputs to that step, so each census reflects that operator's error alone and the first
  divergent step stands out;
- end to end (``end_to_end``): the block's output against the float64 golden of the whole block;
- reference mode (``run_pipeline(..., bf16=True)``): the whole runlist on the CPU with bf16
  buffers between steps, no device.

End-to-end bound (measured and explained): a correct device differs from the float64 block by the
bf16 rounding of every intermediate buffer, propagated through the later steps. Reference mode is
one realization of exactly that process, so its error e_ref = out_bf16chain - out_f64 measures it
for this case; a correct device is another realization, with an error of the same size. The
allowance is Z_E2E * rms(e_ref) per element. Z_E2E = 8: over 1000 seeds of the small block the
largest emu error was 5.45 rms(e_ref) (median of the per-case maxima 2.81, 99th percentile 4.32);
tests/selftest/families/fused_decode/test_fused_decode_pipeline.py keeps 200 of those seeds under 0.75 of the allowance.

Compare mode judges each step twice from one error model (``step_model``): per element within
llama_ops.tolerance, and over the step's whole output with golden/tolerance.py's statistics
(bias, magnitude bias, spread, in bf16 output ulps): each step's f32 result is rounded once to
bf16, so its error is that rounding (mean 0, at most half an ulp) plus the f32 part, a sum of
``k`` roundings for the dot products; data movement is compared bit for bit.

Input classes (``CLASSES``, golden/inputs.py; the hidden state ``x`` is what changes):
- ``normal``: today's draws;
- ``shifted``: x with a common offset of SHIFT_RATIO x its spread (a residual stream with a large
  mean, as trained models' massive activations): reaches a sum of squares held in a narrow format
  (an f16 RMSNorm accumulator overflows; near-normal x never comes near its range);
- ``subnormal``: x in bf16's subnormal range (2**-130 x near-normal, below 2**-126): reaches
  flush-to-zero and denormals-are-zero (RMSNorm then scales x by 1/sqrt(eps) into the normal
  range, so a DAZ device returns 0 there; the projections' products sit near 2**-126).
``exact``, ``ties`` and ``specials`` do not apply: every path through the block meets rsqrt, exp or
the RoPE trigonometry, whose results are not exact (no bit-for-bit golden, no halfway cases), and
one inf or NaN in x reaches every output of the block through RMSNorm's sum.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

import numpy as np

from accel_regress.golden import inputs as gen
from accel_regress.families.fused_decode import llama_ops
from accel_regress.golden.case import Case, case_seed
from accel_regress.golden.compare import Census, Mismatch, census
from accel_regress.golden.dtypes import to_bf16
from accel_regress.golden.tolerance import ErrorModel, exact_model

OP = "fused_decode"
Z_E2E = 8.0


@dataclass(frozen=True)
class Step:
    name: str
    op: str
    ins: tuple[str, ...]
    out: str
    params: Mapping = field(default_factory=dict)


# One decode step of a Llama block (pre-norm attention with GQA and RoPE, SwiGLU MLP), in the
# order IRON's llama_3.2_1b decode runlist dispatches its operators.
DECODE_BLOCK: tuple[Step, ...] = (
    Step("attn_norm", "rmsnorm", ("x", "attn_norm_w"), "xn"),
    Step("q_proj", "gemv", ("wq", "xn"), "q"),
    Step("k_proj", "gemv", ("wk", "xn"), "k"),
    Step("v_proj", "gemv", ("wv", "xn"), "v"),
    Step("q_rope", "rope", ("q",), "q_r"),
    Step("k_rope", "rope", ("k",), "k_r"),
    Step("k_append", "kv_append", ("k_cache", "k_r"), "k_all"),
    Step("v_append", "kv_append", ("v_cache", "v"), "v_all"),
    Step("k_repeat", "repeat", ("k_all",), "k_rep"),
    Step("v_repeat", "repeat", ("v_all",), "v_rep"),
    Step("scores", "gemv_batched", ("k_rep", "q_r"), "s", {"scale": "attn_scale"}),
    Step("attn_softmax", "softmax", ("s",), "probs"),
    Step("v_transpose", "transpose", ("v_rep",), "v_t"),
    Step("attn_v", "gemv_batched", ("v_t", "probs"), "attn"),
    Step("o_proj", "gemm", ("attn", "wo"), "o", {"b_col_maj": True, "c_col_maj": False}),
    Step("attn_residual", "add", ("x", "o"), "h1"),
    Step("ffn_norm", "rmsnorm", ("h1", "ffn_norm_w"), "hn"),
    Step("gate_proj", "gemv", ("w_gate", "hn"), "g"),
    Step("up_proj", "gemv", ("w_up", "hn"), "u"),
    Step("gate_silu", "silu", ("g",), "sg"),
    Step("gate_mul", "mul", ("sg", "u"), "m"),
    Step("down_proj", "gemv", ("w_down", "m"), "d"),
    Step("ffn_residual", "add", ("h1", "d"), "out"),
)
OUTPUT = "out"
FUSED_OUTPUT = "fused_out"

# Masked attention (issue 29 item 10): the same block with an additive attention mask (0 or -inf
# per score, torch scaled_dot_product_attention's float attn_mask) added to the scores before the
# softmax. A padded decode batch gives each sequence's score rows its own number of valid KV
# positions; this block holds one sequence, so its head rows stand for such rows (``padding_mask``).
# A row with no valid position (a batch slot that holds no sequence) has the output torch defines:
# 0, not NaN (torch 2.13.0 torch/_decomp/decompositions.py:416-422, aten._safe_softmax, which the
# math path of scaled_dot_product_attention calls: rows whose every input is -inf give 0).
MASKED_BLOCK: tuple[Step, ...] = tuple(
    replace(s, op="masked_softmax", ins=("s", "attn_mask")) if s.name == "attn_softmax" else s for s in DECODE_BLOCK)
MASKS = ("none", "padding")


@dataclass(frozen=True)
class Config:
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    past: int                  # tokens already in the KV cache; this step decodes token `past`
    rope_theta: float = 500000.0
    mask: str = "none"         # MASKS: "padding" adds padding_mask's attention mask
    activations: str = "normal"  # ACTIVATIONS: "large" plants massive activations in x
    scores: str = "normal"       # SCORES: "negative" / "massive" plant all-negative attention rows

    @property
    def id(self) -> str:
        return (f"H{self.hidden}-NH{self.n_heads}-KV{self.n_kv_heads}-D{self.head_dim}"
                f"-I{self.intermediate}-T{self.past}" + ("" if self.mask == "none" else f"-M{self.mask}")
                + ("" if self.activations == "normal" else f"-A{self.activations}")
                + ("" if self.scores == "normal" else f"-S{self.scores}"))


# Llama 3.2 1B (hidden 2048, 32 heads, 8 kv heads, head dim 64, MLP 8192, rope theta 500000) and a
# small block of the same structure for the default run.
LLAMA_3_2_1B = Config(2048, 32, 8, 64, 8192, past=255)
SMALL = Config(64, 4, 2, 16, 128, past=15)
# The same structure at lengths that are not powers of two: 1/48 (RMSNorm's mean) and 12**-0.5
# (the attention scale) are not exact in bf16, so a reciprocal held in bf16 shows (issue 29 item 10).
SMALL_ODD = Config(48, 4, 2, 12, 96, past=15)
# The small block with a padding mask: full, partly masked and fully masked score rows.
SMALL_MASKED = replace(SMALL, mask="padding")
# Massive activations (Sun et al., "Massive Activations in Large Language Models", 2024: a few
# hidden-state channels 10**3-10**4 x the median): LARGE_CHANNELS channels of x at +-LARGE_VALUE.
# Their squares (2**20) overflow an f16 sum of squares and dominate RMSNorm's mean, so a narrow
# accumulator or a bf16 1/n shows where near-normal x never comes near the range (issue 38).
ACTIVATIONS = ("normal", "large")
LARGE_CHANNELS = 2
LARGE_VALUE = 1024.0
# The odd block (head size 12, not a power of two) with massive activations.
SMALL_ODD_LARGE = replace(SMALL_ODD, activations="large")

# Attention score rows that are negative everywhere (issue 49). Two real softmax bugs need them, and
# near-normal q and k (every row's max >= 0, the attention sink at +96) never reach either:
# - iree-org/iree#17670: the max reduction's accumulator filled with the negative float of smallest
#   magnitude (-1.4e-45) instead of -inf: a row whose every score is below ~-104 gets the max
#   -1.4e-45, every exp(s - max) underflows to 0, and the row is 0/0 = NaN (0 behind a
#   max(sum, 1) safe denominator, iree-org/iree#24447);
# - flashinfer-ai/flashinfer#4267: the online softmax's running max starts at -math::inf, a finite
#   5e4 (include/flashinfer/math.cuh:33): a row whose every logit is below -5e4 keeps m = -5e4 and
#   comes back as a zero vector. The report's logits (-2.45e5) came from massive activations on
#   the q/k path (|q| ~ 448, |k| ~ 1880).
# A channel of every query head reads the normed hidden state with gain a (its row of wq is
# a * xn / |xn|**2), the same channel of every key (the current token's through wk, the cache's
# directly) is -b * u, u uniform in SCORE_KEY_SPREAD per position, so every score is
# -scale * a * b * u plus the near-normal channels' O(1): "negative" rows lie in about
# [-220, -120], "massive" rows in about [-2.9e5, -1.6e5]. The channel is the last of the first
# half of each head, RoPE's slowest pair (angle pos * theta**(-(D-2)/D) ~ 2e-4 rad at pos 15),
# where trained models' massive q/k channels sit. u spreads each row over many bf16 ulps, so the
# scores' output roundings stay independent (a row of one constant would round the same way
# everywhere: a bias with no fault).
SCORES = ("normal", "negative", "massive")
SCORE_GAINS = {"negative": (16.0, 40.0), "massive": (448.0, 1880.0)}
SCORE_KEY_SPREAD = (0.75, 1.375)
SMALL_NEGATIVE = replace(SMALL, scores="negative")
SMALL_MASSIVE = replace(SMALL, scores="massive")

# The attention-sink score planted in head 0 (see make_inputs): above 88.72, where exp overflows
# f32 and bf16 alike, so a softmax that skips the max subtraction returns inf / inf.
SINK_SCORE = 96.0


PROGRAMS = ("steps", "fused")
CLASSES = ("normal", "shifted", "subnormal")      # the input classes that apply (module docstring)
SUBNORMAL_SCALE = 2.0 ** -130


def make_case(cfg: Config, base_seed: int = 0, program: str = "steps", inputs: str = gen.DEFAULT_CLASS) -> Case:
    """``program``: ``steps`` runs the runlist one step at a time and returns every buffer (compare
    mode); ``fused`` runs the block as one program and returns ``fused_out`` (end to end). Both
    draw the same inputs. ``inputs``: the input class (``CLASSES``); the normal class keeps its
    ids and seeds."""
    if program not in PROGRAMS:
        raise ValueError(f"program must be one of {PROGRAMS}, not {program!r}")
    if inputs not in CLASSES:
        raise ValueError(f"fused_decode input classes are {', '.join(CLASSES)}, not {inputs!r}")
    if cfg.mask not in MASKS:
        raise ValueError(f"fused_decode masks are {', '.join(MASKS)}, not {cfg.mask!r}")
    params = {"hidden": cfg.hidden, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads,
              "head_dim": cfg.head_dim, "intermediate": cfg.intermediate, "past": cfg.past,
              "pos": cfg.past, "rope_theta": cfg.rope_theta, "attn_scale": cfg.head_dim ** -0.5,
              "dtype": "bf16", "program": program, "inputs": inputs}
    if cfg.mask != "none":
        params["mask"] = cfg.mask
    if cfg.activations not in ACTIVATIONS:
        raise ValueError(f"fused_decode activations are {', '.join(ACTIVATIONS)}, not {cfg.activations!r}")
    if cfg.activations != "normal":
        params["activations"] = cfg.activations
    if cfg.scores not in SCORES:
        raise ValueError(f"fused_decode scores are {', '.join(SCORES)}, not {cfg.scores!r}")
    if cfg.scores != "normal":
        params["scores"] = cfg.scores
    block = gen.seed_id(cfg.id, inputs)
    return Case(OP, f"{block}-{program}", params, case_seed(OP, block, base_seed))


def as_program(case: Case, program: str) -> Case:
    """The same block and inputs, run as ``program`` (steps or fused)."""
    base = case.id.rsplit("-", 1)[0]
    return Case(case.op, f"{base}-{program}", {**case.params, "program": program}, case.seed)


def masked(case: Case) -> bool:
    return case.params.get("mask", "none") != "none"


def block(case: Case) -> tuple[Step, ...]:
    """The case's runlist: DECODE_BLOCK, or MASKED_BLOCK when its attention is masked."""
    return MASKED_BLOCK if masked(case) else DECODE_BLOCK


# Valid KV positions per score row, cycled over the heads: all of them (head 0 keeps its attention
# sink), all but 5, 3, none.
PADDING_VALID = (None, -5, 3, 0)


def padding_mask(n_heads: int, positions: int) -> np.ndarray:
    """The additive mask (n_heads, positions): row h keeps its last PADDING_VALID[h % 4] positions
    (left padding, as batched generation pads decoder-only prompts: the current token, the last
    position, stays valid while any does) and is -inf before them."""
    mask = np.zeros((n_heads, positions))
    for h in range(n_heads):
        keep = PADDING_VALID[h % len(PADDING_VALID)]
        keep = positions if keep is None else (positions + keep if keep < 0 else keep)
        mask[h, :positions - keep] = -np.inf
    return mask


def step_params(case: Case, step: Step) -> dict:
    """The case's parameters with the step's own; a string value names a case parameter."""
    p = dict(case.params)
    p.update({k: case.params[v] if isinstance(v, str) else v for k, v in step.params.items()})
    return p


def input_shapes(case: Case) -> dict[str, tuple]:
    p = case.params
    H, NH, KV, D, I, T = (p[k] for k in ("hidden", "n_heads", "n_kv_heads", "head_dim", "intermediate", "past"))
    return {"x": (1, H), "attn_norm_w": (H,), "wq": (NH * D, H), "wk": (KV * D, H), "wv": (KV * D, H),
            "wo": (H, NH * D), "ffn_norm_w": (H,), "w_gate": (I, H), "w_up": (I, H), "w_down": (H, I),
            "k_cache": (KV, T, D), "v_cache": (KV, T, D), **({"attn_mask": (NH, T + 1)} if masked(case) else {})}


def buffer_shapes(case: Case) -> dict[str, tuple]:
    """Every buffer's shape: the inputs', then each step's output from its reference on zeros."""
    shapes = input_shapes(case)
    for step in block(case):
        zeros = [np.zeros(shapes[n]) for n in step.ins]
        shapes[step.out] = llama_ops.reference(step.op, step_params(case, step), zeros).shape
    return shapes


def output_contract(case: Case) -> dict:
    """What every backend returns (checked by accel_regress.core.runner before any comparison): every step's
    buffer in bf16, as IRON's host buffers hold them, or the fused block's output."""
    shapes = buffer_shapes(case)
    if case.params["program"] == "fused":
        return {FUSED_OUTPUT: ("bfloat16", shapes[OUTPUT])}
    return {s.out: ("bfloat16", shapes[s.out]) for s in block(case)}


def _weights(g, rows, cols) -> np.ndarray:
    """Weights scaled by 1/sqrt(fan-in), as trained Llama weights roughly are: outputs stay O(1)."""
    return gen.near_normal(g, (rows, cols), scale=cols ** -0.5)


def make_inputs(case: Case, token: int = 0) -> dict[str, np.ndarray]:
    """bf16 inputs of one decode step. ``token=-1`` draws the previous token's hidden state (the
    weights and cache are the same), for faults that model a stale buffer."""
    p = case.params
    H, NH, KV, D, I, T = (p[k] for k in ("hidden", "n_heads", "n_kv_heads", "head_dim", "intermediate", "past"))
    g = gen.rng(case.seed)
    ins = {
        "x": gen.near_normal(g, (1, H)),
        "attn_norm_w": gen.uniform(g, (H,), 0.5, 1.5),
        "wq": _weights(g, NH * D, H), "wk": _weights(g, KV * D, H), "wv": _weights(g, KV * D, H),
        "wo": _weights(g, H, NH * D),            # column-major B of the o_proj GEMM: (N, K)
        "ffn_norm_w": gen.uniform(g, (H,), 0.5, 1.5),
        "w_gate": _weights(g, I, H), "w_up": _weights(g, I, H), "w_down": _weights(g, H, I),
        "k_cache": gen.near_normal(g, (KV, T, D)), "v_cache": gen.near_normal(g, (KV, T, D)),
    }
    if token == -1:
        ins["x"] = gen.near_normal(gen.rng(case.seed ^ 0x7F4A7C15), (1, H))
    if masked(case):
        ins["attn_mask"] = padding_mask(NH, T + 1)
    cls = gen.class_of(p)
    if cls == "shifted":
        ins["x"] = gen.shifted_rows(g, (1, H))
    elif cls == "subnormal":
        ins["x"] = ins["x"] * SUBNORMAL_SCALE
    if p.get("activations", "normal") == "large":
        where = g.choice(H, size=LARGE_CHANNELS, replace=False)
        ins["x"] = ins["x"].copy()
        ins["x"][0, where] = gen.signs(g, LARGE_CHANNELS) * LARGE_VALUE
    out = {k: to_bf16(v) for k, v in ins.items()}
    if p.get("scores", "normal") != "normal":
        _plant_negative_scores(case, out, g)
    elif cls != "subnormal":    # head 0's query is ~2**-122 there: the sink's key would overflow bf16
        _plant_attention_sink(case, out)
    return out


def _plant_negative_scores(case: Case, ins: dict, g) -> None:
    """SCORES: every score row below its class's level (the comment above SCORES)."""
    p = case.params
    NH, KV, D, T = (int(p[k]) for k in ("n_heads", "n_kv_heads", "head_dim", "past"))
    a, b = SCORE_GAINS[p["scores"]]
    c = D // 2 - 1
    xn = run_pipeline(case, ins, until="attn_norm")["xn"].reshape(-1)
    for w, heads, gain in (("wq", NH, a), ("wk", KV, -b)):
        ins[w] = ins[w].copy()
        ins[w][np.arange(heads) * D + c] = to_bf16(gain * xn / float(xn @ xn))
    ins["k_cache"] = ins["k_cache"].copy()
    ins["k_cache"][:, :, c] = to_bf16(-b * gen.uniform(g, (KV, T), *SCORE_KEY_SPREAD))


def _plant_attention_sink(case: Case, ins: dict) -> None:
    """Cache position 0 of kv head 0 points along head 0's rotated query with score SINK_SCORE, an
    attention sink as trained models have them: a correct softmax puts almost all of head 0's
    weight there; one that skips the max subtraction overflows."""
    bufs = run_pipeline(case, ins, until="q_rope")
    q0 = bufs["q_r"][0]
    scale = float(case.params["attn_scale"])
    ins["k_cache"][0, 0] = to_bf16(q0 * (SINK_SCORE / (scale * float(q0 @ q0))))


def previous_token_inputs(case: Case) -> dict[str, np.ndarray]:
    """Inputs of the token before this one: another hidden state, one position earlier, the cache
    without its last entry."""
    prev = make_inputs(case, token=-1)
    for k in ("k_cache", "v_cache"):
        prev[k] = prev[k][:, :-1]
    if "attn_mask" in prev:
        prev["attn_mask"] = prev["attn_mask"][:, 1:]
    return prev


def previous_token_case(case: Case) -> Case:
    params = dict(case.params, pos=case.params["pos"] - 1, past=case.params["past"] - 1)
    return Case(case.op, case.id, params, case.seed)


def run_pipeline(case: Case, inputs: Mapping[str, np.ndarray], *, bf16: bool = False,
                 until: Optional[str] = None, steps=None) -> dict[str, np.ndarray]:
    """Every buffer of the pipeline, float64 (``bf16``: each step's output rounded to bf16, as
    IRON's reference mode keeps host buffers), stopping after step ``until``."""
    bufs = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
    for step in block(case) if steps is None else steps:
        y = llama_ops.reference(step.op, step_params(case, step), [bufs[n] for n in step.ins])
        bufs[step.out] = np.asarray(to_bf16(y), np.float64) if bf16 else y
        if step.name == until:
            break
    return bufs


def reference(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every buffer of the reference pipeline (run_pipeline): what tolerances() models, per step or
    the block's output (the family's entry point of accel_regress.core.contracts.GoldenModule)."""
    return run_pipeline(case, inputs)


# The length of the sum each step's f32 part is (1: one operation's rounding or a library
# function; the model's sigma is then the whole f32 allowance, an upper bound).
_SUM_LENGTH = {"gemv": lambda ins: ins[0].shape[1], "gemv_batched": lambda ins: ins[0].shape[2],
               "gemm": lambda ins: ins[1].shape[1]}


def step_model(step: Step, p: Mapping, ins, ref: np.ndarray) -> ErrorModel:
    """The error model of one step of a correct bf16 device (module docstring)."""
    if llama_ops.OPS[step.op].f32_error is None:
        return exact_model(ref.shape, "data movement: compared bit for bit")
    tol = llama_ops.tolerance(step.op, p, ins, ref)
    k = _SUM_LENGTH[step.op]([np.asarray(x) for x in ins]) if step.op in _SUM_LENGTH else 1
    return ErrorModel(tol, "rounding", dtype="bf16", k=float(k))


@dataclass
class StepResult:
    step: Step
    census: Census
    ref_max: float              # max |reference|: max_rel is max_abs relative to it, as seed 001 logs

    def row(self) -> dict:
        c = self.census
        nums = {"max_abs": c.max_abs, "mean_abs": c.mean_abs, "max_rel": c.max_abs / max(self.ref_max, 1e-30)}
        return {"step": self.step.name, "op": self.step.op, "over": c.over_tolerance, "elements": c.elements,
                "ok": c.ok, "failed_statistics": self.failed_statistics(),
                **{k: v if np.isfinite(v) else str(v) for k, v in nums.items()}}

    def failed_statistics(self) -> list[str]:
        st = self.census.stats or {}
        return [k for k in ("bias", "magnitude_bias", "spread") if k in st and not st[k]["ok"]]


def compare_steps(case: Case, inputs: Mapping[str, np.ndarray], got: Mapping[str, np.ndarray],
                  steps=None) -> list[StepResult]:
    """Compare mode: each step's device output against its reference computed from the device's
    own inputs to that step (a missing device buffer falls back to the case input)."""
    out = []
    for step in block(case) if steps is None else steps:
        p = step_params(case, step)
        ins = [got[n] if n in got else inputs[n] for n in step.ins]
        ref = llama_ops.reference(step.op, p, ins)
        tol = step_model(step, p, ins, ref)
        dev = got.get(step.out)
        c = census(np.asarray(dev, np.float64) if dev is not None else np.zeros((0,)), ref, tol=tol,
                   name=f"{step.name} ({step.op}) -> {step.out}")
        if dev is None:
            c.shape_error = f"the backend returned no buffer {step.out!r}"
        out.append(StepResult(step, c, float(np.max(np.abs(ref))) if ref.size else 0.0))
    return out


def first_divergent(results: list[StepResult]) -> Optional[StepResult]:
    return next((r for r in results if not r.census.ok), None)


def step_table(results: list[StepResult]) -> str:
    """The per-step table seed 001's compare mode logs: max_abs / mean_abs / max_rel per step."""
    lines = [f"{'step':<14} {'op':<13} {'max_abs':>10} {'mean_abs':>10} {'max_rel':>10} {'over tol':>12}"]
    first = first_divergent(results)
    for r in results:
        c, ok = r.census, r.census.ok
        mark = "  <- first divergent step" if r is first else ("" if ok else "  (diverges)")
        if r.failed_statistics():
            mark += f" [statistics: {', '.join(r.failed_statistics())}]"
        lines.append(f"{r.step.name:<14} {r.step.op:<13} {c.max_abs:>10.3g} {c.mean_abs:>10.3g} "
                     f"{c.max_abs / max(r.ref_max, 1e-30):>10.3g} {c.over_tolerance:>5}/{c.elements:<6}{mark}")
    return "\n".join(lines)


def end_to_end_expected(case: Case, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The float64 block output and its per-element allowance (module docstring)."""
    exact = run_pipeline(case, inputs)[OUTPUT]
    return exact, _end_to_end_model(case, inputs, exact).tol


def _end_to_end_model(case: Case, inputs: Mapping[str, np.ndarray], exact: np.ndarray) -> ErrorModel:
    chain = run_pipeline(case, inputs, bf16=True)[OUTPUT]
    rms = float(np.sqrt(np.mean((chain - exact) ** 2)))
    return ErrorModel(np.full(exact.shape, Z_E2E * rms), None,
                      why_not=f"an empirical bound, {Z_E2E:g} x the rms error of the bf16 chain: no promised mean or spread")


def tolerances(case: Case, inputs: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray]) -> dict[str, ErrorModel]:
    """The error model of every output the case's program returns, from ``ref`` = run_pipeline's
    buffers: each step's output given the reference's own inputs to that step (``steps``), or the
    block output (``fused``, as end_to_end_expected). The family's entry point of
    accel_regress.core.contracts.GoldenModule."""
    if case.params["program"] == "fused":
        return {FUSED_OUTPUT: _end_to_end_model(case, inputs, np.asarray(ref[OUTPUT], np.float64))}
    out = {}
    for step in block(case):
        ins = [ref[n] for n in step.ins]
        out[step.out] = step_model(step, step_params(case, step), ins, ref[step.out])
    return out


class PipelineMismatch(Mismatch):
    """Compare mode found a divergent step: the census is that step's; ``detail`` carries the
    per-step table for the report."""

    def __init__(self, results: list[StepResult], arrays: Optional[dict] = None):
        first = first_divergent(results)
        super().__init__(first.census, arrays)
        self.args = (f"first divergent step: {first.step.name} ({first.step.op} -> {first.step.out})\n\n"
                     f"{step_table(results)}\n\n{first.census.describe()}",)
        self.detail = {"steps": [r.row() for r in results], "first_divergent_step": first.step.name}

    def __str__(self) -> str:
        return self.args[0]
