"""Every float64 reference that torch can compute agrees with torch's own float64 operator
(issue 29 item 9), over several seeds and every input class each family has (NaN, inf and
signed zeros among the specials), with the largest difference printed (``-rP`` shows it).

Agreement: NaN at the same places, the same infinities, the same sign of zero where IEEE 754
defines it (elementwise results; a zero sum's sign depends on the accumulator's first value and
is not compared), and every finite difference within what two float64 evaluations in different
orders may differ by: (n + 16) * 2**-52 * m, n the length of the sum behind the element and m its
magnitude (sum |terms| for sums and dot products, the row's largest |value| for normalizations,
plus |gamma| max|x| / sqrt(var + eps) for LayerNorm's cancellation in x - mean, |value| elementwise), plus the smallest float64 subnormal. Outputs the family declares rounded
once to a narrower format (f32 for the matmul family and the f32 sums, bf16/f16/f32 for the tile)
are compared after torch's own conversion to that format: bit for bit there, one ulp where the
float64 value may sit within 1e-12 of a rounding boundary (the normal class only).

Where torch has no such operator, what stands in (each tested elsewhere):
- bfp16 block quantization (gemm_partition_n with emulate_bfp16): torch has no block floating
  point; golden/dtypes.py quantize_bfp16 (tests/selftest/families/gemm_partition_n/test_gemm_golden_bits.py). The GEMM after it
  is compared here with torch.matmul on the quantized operands.
- PTO's fillpad / set_validshape (rowexpandmul_fillpad): no torch operator; torch.where over the
  valid-shape mask stands in for it here, torch.mul for the row-broadcast multiply.
- RoPE (fused_decode q_rope, k_rope): torch has no rotary-embedding operator; here it is computed
  as Meta's Llama reference does it (meta-llama/llama@57b0eb62 llama/model.py:47,
  precompute_freqs_cis: torch.polar(ones, angles), then a complex multiply), with the pairs
  (i, i+D/2) of IRON's method_type 0 instead of Meta's adjacent ones, independent of our
  rotate-half formula.
- the decode block's attention (scores, softmax, attention times V with GQA) is compared with
  torch.nn.functional.scaled_dot_product_attention(enable_gqa=True) as one operator.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from accel_regress.families.f32_reduction import golden as R
from accel_regress.families.fused_decode import golden as FD
from accel_regress.families.fused_decode import llama_ops as L
from accel_regress.families.gemm_partition_n import golden as gemm
from accel_regress.families.matmul import golden as mm
from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress.golden import inputs as G

SEEDS = range(4)
U64 = 2.0 ** -52
WORST: dict = {}          # (family, op) -> (largest difference, in units of the allowance)


def _report(family: str) -> None:
    """Print the largest difference per operator of ``family`` (pytest -rP shows it)."""
    for (fam, op), (diff, ratio) in sorted(WORST.items()):
        if fam == family:
            print(f"{fam} {op}: largest |ours - torch| {diff:.3g}, {ratio:.3g} of the allowance")


def _t(x) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(np.asarray(x, np.float64)))


def _n(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy().astype(np.float64)


def agree(where: str, ours, theirs, *, n: int = 1, mag=None, zero_sign: bool = False) -> None:
    """Assert the agreement of the module docstring; keep the largest difference for the table."""
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} vs torch {theirs.shape}"
    nan_o, nan_t = np.isnan(ours), np.isnan(theirs)
    assert (nan_o == nan_t).all(), f"{where}: NaN at {np.argwhere(nan_o != nan_t)[:5].tolist()} differs from torch"
    inf = np.isinf(ours) | np.isinf(theirs)
    assert (ours[inf] == theirs[inf]).all(), f"{where}: infinities differ from torch at {np.argwhere(inf & (ours != theirs))[:5].tolist()}"
    fin = np.isfinite(ours) & np.isfinite(theirs)
    if zero_sign:
        z = fin & (ours == 0) & (theirs == 0)
        assert (np.signbit(ours[z]) == np.signbit(theirs[z])).all(), f"{where}: sign of zero differs from torch"
    m = np.abs(theirs) if mag is None else np.broadcast_to(np.asarray(mag, np.float64), ours.shape)
    allowed = (n + 16) * U64 * m[fin] + 2.0 ** -1074
    diff = np.abs(ours[fin] - theirs[fin])
    ratio = float((diff / allowed).max(initial=0.0))
    key = tuple(where.split(":")[:2])
    prev = WORST.get(key, (0.0, 0.0))
    WORST[key] = (max(prev[0], float(diff.max(initial=0.0))), max(prev[1], ratio))
    assert ratio <= 1.0, f"{where}: largest difference {diff.max():.3g} is {ratio:.3g}x what float64 order allows"


def agree_rounded(where: str, ours, theirs64: torch.Tensor, dtype: torch.dtype, *, exact: bool) -> None:
    """``ours`` (rounded once to ``dtype`` by our code) against torch's float64 result converted to
    ``dtype`` by torch: bit for bit when the float64 value is exact, else within one ulp."""
    t = theirs64.to(dtype).to(torch.float64).numpy()
    o = np.asarray(ours, np.float64)
    nan_o, nan_t = np.isnan(o), np.isnan(t)
    assert (nan_o == nan_t).all(), f"{where}: NaN placement differs from torch"
    same = (o == t) | (nan_o & nan_t)
    fin = np.isfinite(o) & np.isfinite(t)
    z = fin & (o == 0) & (t == 0)
    if exact:
        assert same.all() and (np.signbit(o[z]) == np.signbit(t[z])).all(), \
            f"{where}: {np.count_nonzero(~same)} elements differ from torch's {dtype} conversion"
        ulps = 0.0
    else:
        assert (same | fin).all(), f"{where}: infinities differ from torch"
        step = np.abs(np.nextafter(t.astype(np.float32), np.float32(np.inf)).astype(np.float64) - t) if dtype == torch.float32 else None
        d = np.abs(o - t)[fin]
        ulps = float((d / np.maximum(step[fin], 2.0 ** -149)).max(initial=0.0)) if step is not None else float(d.max(initial=0))
        assert ulps <= 1.0, f"{where}: {ulps:.3g} f32 ulp from torch"
    key = tuple(where.split(":")[:2])
    prev = WORST.get(key, (0.0, 0.0))
    both = np.isfinite(o) & np.isfinite(t)
    WORST[key] = (max(prev[0], float(np.abs(o[both] - t[both]).max(initial=0.0))), max(prev[1], ulps))


# --- f32_reduction: every kind of every class ------------------------------------------------------

def _torch_reduction(kind: str, d: dict) -> dict:
    x = d.get("x")
    if kind == "row_sum":
        return {"sum": x.sum(1)}
    if kind == "mean_var":
        return {"mean": x.mean(1), "var": x.var(1, correction=0)}
    if kind == "layernorm":
        return {"y": TF.layer_norm(x, (x.shape[1],), d["gamma"].reshape(-1), d["beta"].reshape(-1), eps=R.EPS)}
    if kind == "rmsnorm":
        return {"y": TF.rms_norm(x, (x.shape[1],), d["gamma"].reshape(-1), eps=R.EPS)}
    if kind == "softmax":
        return {"y": torch.softmax(x, dim=1)}
    if kind == "log_softmax":
        return {"y": torch.log_softmax(x, dim=1)}
    if kind in ("matmul", "bmm"):
        return {"c": torch.matmul(d["a"], d["b"])}
    if kind == "rsqrt":
        return {"y": torch.rsqrt(x)}
    if kind == "sqrt":
        return {"y": torch.sqrt(x)}
    if kind == "erf":
        return {"y": torch.erf(x)}
    if kind == "divide":
        return {"y": torch.div(d["a"], d["b"])}
    raise KeyError(kind)


def _reduction_magnitude(kind: str, name: str, d: dict, t: np.ndarray) -> tuple[int, np.ndarray]:
    x = d.get("x")
    if kind == "row_sum":
        return x.shape[1], np.abs(x).sum(1)
    if kind == "mean_var":
        return x.shape[1], (np.abs(x).mean(1) if name == "mean" else (x * x).mean(1))
    if kind == "layernorm":
        # y = gamma (x - mean) / sqrt(var + eps) + beta: the float64 rounding of x - mean is relative
        # to |x|, not to the row's spread, so a near-constant row (var ~ eps, mean ~ 1000) carries
        # it into y amplified by |gamma| max|x| / sqrt(var + eps).
        cond = np.abs(d["gamma"]).reshape(1, -1) * np.abs(x).max(axis=1, keepdims=True) \
            / np.sqrt(x.var(axis=1, keepdims=True) + R.EPS)
        return x.shape[1], np.abs(t).max(axis=1, keepdims=True) + np.abs(t) + cond
    if kind in ("rmsnorm", "softmax"):
        return x.shape[1], np.abs(t).max(axis=1, keepdims=True) + np.abs(t)
    if kind == "log_softmax":     # x - max rounds at the scale of the row's inputs, not of y
        return x.shape[1], np.abs(x).max(axis=1, keepdims=True) + np.abs(t)
    if kind in ("matmul", "bmm"):
        with np.errstate(invalid="ignore"):       # inf x 0 among the specials: NaN, compared as such
            return d["a"].shape[-1], np.matmul(np.abs(d["a"]), np.abs(d["b"]))
    return 1, np.abs(t)


REDUCTION_CASES = [(cls, k) for cls, kinds in R.CLASS_KINDS.items() for k in kinds
                   if k not in ("cvt", "i8_matmul")]


@pytest.mark.parametrize("cls, kind", REDUCTION_CASES, ids=[f"{k}-{c}" for c, k in REDUCTION_CASES])
def test_f32_reduction_references_agree_with_torch(cls, kind):
    for seed in SEEDS:
        for shape in {R.SEED_SHAPES[kind]} | ({(R.TAIL_ROWS, 33)} if kind in ("row_sum", "softmax", "log_softmax") else set()):
            case = R.make_case(kind, shape, base_seed=seed, inputs=cls)
            inputs = R.make_inputs(case)
            d = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
            with np.errstate(all="ignore"):
                ours = R._reference(case, inputs)
            theirs = _torch_reduction(kind, {k: _t(v) for k, v in d.items()})
            for name, t in theirs.items():
                t = _n(t)
                n, mag = _reduction_magnitude(kind, name, d, t)
                agree(f"f32_reduction:{kind}:{cls}:seed {seed}:{name}", ours[name], t, n=n, mag=mag,
                      zero_sign=kind in R.ELEMENTWISE)
    _report("f32_reduction")


def test_integer_references_agree_with_torch():
    for seed in SEEDS:
        case = R.make_case("i8_matmul", R.SEED_SHAPES["i8_matmul"], base_seed=seed)
        inputs = R.make_inputs(case)
        ours = R._reference(case, inputs)["c"]
        theirs = torch.matmul(torch.from_numpy(inputs["a"].astype(np.int64)), torch.from_numpy(inputs["b"].astype(np.int64)))
        assert (ours == theirs.numpy()).all()
        case = R.make_case("cvt", R.SEED_SHAPES["cvt"], base_seed=seed)
        inputs = R.make_inputs(case)
        ours = R._reference(case, inputs)["to_int"]
        assert (ours == torch.trunc(_t(inputs["x"])).to(torch.int64).numpy()).all()
    print("f32_reduction i8_matmul, cvt: equal to torch's int64 matmul and trunc")


# --- matmul (seed 003): f32 output rounded once ----------------------------------------------------

@pytest.mark.parametrize("cls", G.CLASSES)
def test_matmul_reference_agrees_with_torch(cls):
    for seed in SEEDS:
        for shape in ((17, 17, 17), (127, 129, 131), (1, 257, 63)):
            case = mm.make_case(mm.MatmulConfig(*shape, inputs=cls), seed)
            inputs = mm.make_inputs(case)
            ours = mm.product(inputs, cls)
            theirs = torch.matmul(_t(inputs["lhs"]), _t(inputs["rhs"]))
            agree_rounded(f"matmul:matmul:{cls}:seed {seed}:{shape}", ours, theirs, torch.float32,
                          exact=cls in G.BIT_EXACT_CLASSES)
    _report("matmul")


# --- gemm_partition_n (seeds 000/001): the GEMM after the device's bfp16 quantization -------------

@pytest.mark.parametrize("cls", G.CLASSES)
def test_gemm_reference_agrees_with_torch(cls):
    base = gemm.CI_CONFIGS[1]
    for seed in SEEDS:
        cfg = base.with_inputs(cls, emulate_bfp16=False if cls not in gemm.BFP16_CLASSES else None)
        case = gemm.make_case(cfg, seed)
        inputs = gemm.make_inputs(case)
        ref, _ = gemm.expected(inputs, cfg)
        if cfg.inputs in G.BIT_EXACT_CLASSES:
            theirs = torch.matmul(_t(inputs["A"]), _t(inputs["B"])).to(torch.float32)
            agree_rounded(f"gemm_partition_n:matmul:{cls}:seed {seed}", ref, theirs, torch.bfloat16, exact=True)
            continue
        if gemm._quantizes(cfg, gemm.BLOCK_ROUNDING):
            qa, qb = gemm.quantized_operands(inputs, gemm.BLOCK_ROUNDING)
            a, b = qa.values, qb.values
        else:
            a, b = inputs["A"], inputs["B"]
        theirs = torch.matmul(_t(a), _t(b))
        # the reference is held in f32 (gemm.matmul): compared after torch's own f32 conversion
        agree_rounded(f"gemm_partition_n:matmul:{cls}:seed {seed}", ref, theirs, torch.float32, exact=False)
    _report("gemm_partition_n")


# --- rowexpandmul_fillpad (seed 002): torch.mul + torch.where over the valid shape ------------------

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@pytest.mark.parametrize("cls", G.CLASSES)
def test_tile_reference_agrees_with_torch(cls):
    for seed in SEEDS:
        for dtype, pad in (("f32", "zero"), ("f16", "max"), ("bf16", "min")):
            cfg = tiles.TileConfig(8, 64, 3, 48, dtype, pad, "fused", True).with_inputs(cls)
            case = tiles.make_case(cfg, seed)
            inputs = tiles.make_inputs(case)
            ours = tiles.tile_reference(inputs, cfg)
            prod = torch.mul(_t(inputs["gated"]), _t(inputs["scale"]))
            mask = torch.from_numpy(tiles.valid_mask(cfg))
            theirs = torch.where(mask, prod, torch.tensor(tiles.pad_value(cfg.pad, cfg.dtype), dtype=torch.float64))
            where = f"rowexpandmul_fillpad:mul+fillpad:{cls}:seed {seed}:{dtype}"
            if tiles.bit_exact(cfg):
                agree_rounded(where, ours, theirs, TORCH_DTYPES[dtype], exact=True)
            else:
                agree(where, ours, _n(theirs), zero_sign=True)
    _report("rowexpandmul_fillpad")


# --- fused_decode (seed 001): every operator of the block, on the block's own buffers -------------

def _torch_op(step, p, ins):
    x = [_t(v) for v in ins]
    op = step.op
    if op == "rmsnorm":
        return TF.rms_norm(x[0].reshape(-1, x[0].shape[-1]), (x[0].shape[-1],), x[1], eps=L.EPS).reshape(x[0].shape)
    if op == "gemv":
        return torch.mv(x[0], x[1].reshape(-1))
    if op == "gemv_batched":
        return torch.bmm(x[0], x[1].unsqueeze(-1)).squeeze(-1) * p.get("scale", 1.0)
    if op == "gemm":
        b = x[1].T if p.get("b_col_maj") else x[1]
        c = torch.matmul(x[0].reshape(-1, b.shape[0]), b)
        return c.T if p.get("c_col_maj") else c
    if op == "rope":
        d = int(p["head_dim"])
        h = x[0].reshape(-1, d)
        ang = _t(L.rope_angles(p))
        z = torch.complex(h[:, :d // 2], h[:, d // 2:]) * torch.polar(torch.ones_like(ang), ang)
        return torch.cat([z.real, z.imag], dim=1)
    if op == "softmax":
        return torch.softmax(x[0], dim=-1)
    if op == "masked_softmax":
        # the softmax scaled_dot_product_attention's math path applies: 0 for a row of -inf
        return torch.ops.aten._safe_softmax(x[0] + x[1], -1)
    if op == "silu":
        return TF.silu(x[0])
    if op == "mul":
        return torch.mul(x[0], x[1].reshape(x[0].shape))
    if op == "add":
        return torch.add(x[0], x[1].reshape(x[0].shape))
    if op == "transpose":
        return x[0].transpose(-1, -2)
    if op == "repeat":
        return torch.repeat_interleave(x[0], int(p["n_heads"]) // int(p["n_kv_heads"]), dim=0)
    if op == "kv_append":
        return torch.cat([x[0], x[1].reshape(x[0].shape[0], 1, x[0].shape[2])], dim=1)
    raise KeyError(op)


def _op_magnitude(step, ins, t):
    a = [np.abs(np.asarray(v, np.float64)) for v in ins]
    if step.op == "gemv":
        return a[0].shape[1], a[0] @ a[1].reshape(-1)
    if step.op == "gemv_batched":
        return a[0].shape[2], np.einsum("bmk,bk->bm", a[0], a[1])
    if step.op == "gemm":
        return a[1].shape[1], np.abs(L.gemm({"b_col_maj": True}, a[0], a[1]))
    if step.op in ("rmsnorm", "softmax", "masked_softmax"):
        return t.shape[-1], np.abs(t).max(axis=-1, keepdims=True) + np.abs(t)
    if step.op == "rope":
        h = a[0].reshape(t.shape)
        half = h.shape[1] // 2
        s = h[:, :half] + h[:, half:]
        return 4, np.concatenate([s, s], axis=1)
    return 1, np.abs(t)


@pytest.mark.parametrize("cls", FD.CLASSES)
def test_decode_block_operators_agree_with_torch(cls):
    for seed in SEEDS:
        case = FD.make_case(FD.SMALL, seed, inputs=cls)
        bufs = FD.run_pipeline(case, FD.make_inputs(case))
        for step in FD.DECODE_BLOCK:
            p = FD.step_params(case, step)
            ins = [bufs[n] for n in step.ins]
            theirs = _n(_torch_op(step, p, ins))
            n, mag = _op_magnitude(step, ins, theirs)
            agree(f"fused_decode:{step.op}:{cls}:seed {seed}:{step.name}", bufs[step.out], theirs, n=n, mag=mag,
                  zero_sign=step.op in ("mul", "add", "transpose", "repeat", "kv_append"))
        # The attention as one operator: scores, softmax and attention times V over the GQA heads.
        heads, kv, d = (int(case.params[k]) for k in ("n_heads", "n_kv_heads", "head_dim"))
        q = _t(bufs["q_r"]).reshape(1, heads, 1, d)
        k, v = (_t(bufs[n]).unsqueeze(0) for n in ("k_all", "v_all"))
        sdpa = TF.scaled_dot_product_attention(q, k, v, scale=float(case.params["attn_scale"]), enable_gqa=True)
        theirs = _n(sdpa.reshape(heads, d))
        agree(f"fused_decode:attention (sdpa):{cls}:seed {seed}", bufs["attn"], theirs, n=k.shape[2] + d,
              mag=np.abs(np.asarray(bufs["v_all"])).max())
    _report("fused_decode")


def test_masked_attention_agrees_with_torch():
    """The masked block (padding mask: full, partly masked and fully masked score rows): its masked
    softmax step against aten._safe_softmax, and its attention as one torch
    scaled_dot_product_attention with the same additive mask (float64 on the CPU: the math path),
    GQA included; a fully masked row is 0 in both, never NaN."""
    for seed in SEEDS:
        case = FD.make_case(FD.SMALL_MASKED, seed)
        inputs = FD.make_inputs(case)
        bufs = FD.run_pipeline(case, inputs)
        step = next(s for s in FD.MASKED_BLOCK if s.name == "attn_softmax")
        ins = [bufs[n] for n in step.ins]
        theirs = _n(_torch_op(step, FD.step_params(case, step), ins))
        n, mag = _op_magnitude(step, ins, theirs)
        agree(f"fused_decode:masked_softmax:seed {seed}", bufs["probs"], theirs, n=n, mag=mag)
        heads, d = int(case.params["n_heads"]), int(case.params["head_dim"])
        mask = _t(inputs["attn_mask"])
        q = _t(bufs["q_r"]).reshape(1, heads, 1, d)
        k, v = (_t(bufs[n]).unsqueeze(0) for n in ("k_all", "v_all"))
        sdpa = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask.reshape(1, heads, 1, -1),
                                               scale=float(case.params["attn_scale"]), enable_gqa=True)
        theirs = _n(sdpa.reshape(heads, d))
        agree(f"fused_decode:masked attention (sdpa):seed {seed}", bufs["attn"], theirs, n=k.shape[2] + d,
              mag=np.abs(np.asarray(bufs["v_all"])).max())
        empty = np.isneginf(np.asarray(inputs["attn_mask"], np.float64)).all(axis=1)
        partial = np.isneginf(np.asarray(inputs["attn_mask"], np.float64)).any(axis=1) & ~empty
        assert empty.any() and partial.any()
        assert (theirs[empty] == 0).all() and (bufs["attn"][empty] == 0).all()
    # the comparison catches a mask applied after the softmax, and the NaN of a plain softmax
    s_, m_ = (np.asarray(bufs["s"]), np.asarray(inputs["attn_mask"], np.float64))
    after = L.softmax({}, s_) * (m_ == 0)
    with np.errstate(invalid="ignore"):
        plain = L.softmax({}, s_ + m_)
    theirs = _n(torch.ops.aten._safe_softmax(_t(s_) + _t(m_), -1))
    for wrong in (after, plain):
        with pytest.raises(AssertionError):
            agree("check:masked_softmax", wrong, theirs, n=s_.shape[1], mag=1.0)
    WORST.pop(("check", "masked_softmax"), None)
    _report("fused_decode")


def test_agreement_catches_a_wrong_reference():
    """The comparison fails on the references' plausible mistakes: the unbiased variance in
    LayerNorm, a lost sign of zero, a NaN taken as 0, GQA heads repeated in the wrong order."""
    case = R.make_case("layernorm", R.SEED_SHAPES["layernorm"])
    inputs = R.make_inputs(case)
    x, g, b = (np.asarray(inputs[k], np.float64) for k in ("x", "gamma", "beta"))
    m = x.mean(1, keepdims=True)
    unbiased = (x - m) / np.sqrt(x.var(1, ddof=1, keepdims=True) + R.EPS) * g + b
    theirs = _n(_torch_reduction("layernorm", {k: _t(v) for k, v in inputs.items()})["y"])
    n, mag = x.shape[1], np.abs(theirs).max(1, keepdims=True)
    with pytest.raises(AssertionError, match="what float64 order allows"):
        agree("check:layernorm", unbiased, theirs, n=n, mag=mag)
    with pytest.raises(AssertionError, match="sign of zero"):
        agree("check:erf", np.array([0.0, 1.0]), _n(torch.erf(_t([-0.0, 10.0]))), zero_sign=True)
    with pytest.raises(AssertionError, match="NaN"):
        agree("check:divide", np.array([0.0]), _n(torch.div(_t([0.0]), _t([0.0]))))
    case = FD.make_case(FD.SMALL)
    bufs = FD.run_pipeline(case, FD.make_inputs(case))
    heads, d = int(case.params["n_heads"]), int(case.params["head_dim"])
    q = _t(bufs["q_r"]).reshape(1, heads, 1, d)
    k, v = (_t(bufs[n]).repeat(heads // int(case.params["n_kv_heads"]), 1, 1).unsqueeze(0) for n in ("k_all", "v_all"))
    tiled = _n(TF.scaled_dot_product_attention(q, k, v, scale=float(case.params["attn_scale"])).reshape(heads, d))
    with pytest.raises(AssertionError):
        agree("check:attention", bufs["attn"], tiled, n=k.shape[2] + d, mag=np.abs(bufs["v_all"]).max())
    for key in [k for k in WORST if k[0] == "check"]:
        del WORST[key]
