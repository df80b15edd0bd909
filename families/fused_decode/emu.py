"""A numerical model of IRON's fused Llama decode runlist (seed 001), and the ways a step goes wrong.

Each step is the operator of families/fused_decode/llama_ops.py evaluated in f32 arithmetic (numpy keeps f32
operands in f32: BLAS f32 dot products, pairwise f32 sums, f32 exp / cos / sin / pow, the RoPE
angles formed in f32) on the bf16 buffers, and its output rounded to bf16, as IRON's operators
read and write bf16 host buffers. A ``fused`` case runs the same chain and returns only
``fused_out``: emu has no separate fused program.

Faults, one per documented way a fused step goes wrong; each replaces one operator and lets the
rest of the runlist run on its output, as a device would:
- ``fused-stale-output``: the v_proj buffer still holds the previous token's value (the step was
  not re-dispatched, or its output was not synced back before the next step read it);
- ``fused-rope-theta``: RoPE with the angle base 10000 (Llama 2) instead of Llama 3's 500000;
- ``fused-rmsnorm-no-weight``: RMSNorm that drops its weight vector;
- ``fused-softmax-no-max``: softmax without the max subtraction: exp of the attention-sink score
  overflows bf16 and the head's row becomes inf / inf.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from accel_regress.families.fused_decode import golden as F
from accel_regress.families.fused_decode import llama_ops
from accel_regress.golden.case import Case
from accel_regress.golden.dtypes import to_bf16

F32 = np.float32


def _device_step(case: Case, step: F.Step, bufs: Mapping[str, np.ndarray], op: Callable = None) -> np.ndarray:
    p = F.step_params(case, step)
    ins = [np.asarray(bufs[n], F32) for n in step.ins]
    with np.errstate(over="ignore", invalid="ignore"):
        y = (op or llama_ops.OPS[step.op].reference)(p, *ins)
    return to_bf16(np.asarray(y, F32))


def _run(case: Case, bufs: dict, steps, replace: Mapping[str, Callable] = {}) -> dict:
    out = {}
    for step in steps:
        bufs[step.out] = out[step.out] = _device_step(case, step, bufs, replace.get(step.name))
    return out


def _finish(case: Case, out: dict) -> dict:
    if case.params["program"] == "fused":
        return {F.FUSED_OUTPUT: out[F.OUTPUT]}
    return out


def run(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return _finish(case, _run(case, dict(inputs), F.block(case)))


def timeout(case: Case) -> float:
    return 60.0 if case.params["hidden"] <= 256 else 600.0


def _step_fault(step_names: tuple[str, ...], make_op: Callable[[Case], Callable]):
    """A fault that recomputes the runlist from the first of ``step_names`` with the faulty
    operator there, on the backend's own buffers before it (a fused run keeps no buffers: the
    whole block is recomputed)."""
    def fault(case: Case, outputs: dict) -> dict:
        if case.op != F.OP:
            return outputs
        steps = F.block(case)
        first = 0
        if case.params["program"] == "steps":
            first = next(i for i, s in enumerate(steps) if s.name in step_names)
        bufs = {**F.make_inputs(case), **outputs}
        op = make_op(case)
        outputs.update(_finish(case, _run(case, bufs, steps[first:], {n: op for n in step_names})))
        return outputs
    return fault


def _stale_v_proj(case: Case) -> Callable:
    prev_case = F.previous_token_case(case)
    prev = F.run_pipeline(prev_case, F.previous_token_inputs(case), bf16=True, until="v_proj")
    return lambda p, w, x: prev["v"].astype(F32)


def _rope_theta_10000(case: Case) -> Callable:
    return lambda p, x: llama_ops.rope({**p, "rope_theta": 10000.0}, x)


def _rmsnorm_no_weight(case: Case) -> Callable:
    return lambda p, x, w: llama_ops.rmsnorm(p, x, np.ones_like(w))


def _softmax_no_max(case: Case) -> Callable:
    def softmax(p, x, mask=0):
        e = to_bf16(np.exp(x + mask)).astype(F32)     # bf16 buffer between the exp and the sum
        return e / e.sum(axis=-1, keepdims=True)
    return softmax


FAULTS = {
    "fused-stale-output": _step_fault(("v_proj",), _stale_v_proj),
    "fused-rope-theta": _step_fault(("q_rope", "k_rope"), _rope_theta_10000),
    "fused-rmsnorm-no-weight": _step_fault(("attn_norm", "ffn_norm"), _rmsnorm_no_weight),
    "fused-softmax-no-max": _step_fault(("attn_softmax",), _softmax_no_max),
}
