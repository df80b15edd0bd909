"""The fused_decode family on IRON's operator sequence (seed 001: FusedMLIROperator, amd/IRON PR #117).

Checked against amd/IRON@5f21cd41 ``iron/common/fusion.py`` and its successor @979f9b4e
``iron/common/sequence.py`` (read through the search index; no mirror of amd/IRON could be
fetched, so citations name the symbol, not the line). @979f9b4e keeps the constructor, runlist,
buffers and callables below; the modes became SequenceDispatch policies named by
``_DISPATCH_ALIASES`` (an unknown name is a TypeError) and the NPU1 refusal reads "dispatch='fused'
requires NPU2; NPU1 has no full-ELF dispatch". @5f21cd41:
- ``OperatorSequence(name, runlist, input_args, output_args, buffer_sizes=None, dispatch="auto",
  context=...)``, the class seed 001 calls FusedMLIROperator; ``DISPATCH_MODES = ("auto", "fused",
  "separate", "reference", "compare")``. A runlist entry is ``(operator, *buffer_names)`` with the
  output last (``SequenceCompareCallable.__call__``: ``*in_names, out_name = buf_names``); a buffer
  is sized from the operator's ``get_arg_spec()`` (``_calculate_buffer_layout``); one name used
  by several steps is one buffer (the hand-off between operators).
- ``set_up_artifacts``: "fused" is one full-ELF dispatch and needs NPU2 (on NPU1 it raises
  "dispatch='fused' requires NPU2 (Strix); Phoenix/NPU1 does not support full-ELF dispatch");
  "separate" and "compare" compile one xclbin per operator and dispatch the runlist one
  ``NPUKernel`` at a time (``SequenceXclbinCallable``), after which every non-input buffer is
  synced back (``.to("cpu")``).
- ``get_callable()`` then ``run.get_buffer(name)`` (an XRTTensor: ``torch_view()``,
  ``.to("npu")`` / ``.to("cpu")``); ``run()`` syncs the input buffers to the device itself.

Mapping of families/fused_decode/golden.py's DECODE_BLOCK (``plan``): a ``steps`` case runs the runlist in
"separate" mode, one xclbin per operator as compare mode does, and reads every step's output
buffer back from the device; compare mode itself is golden's (fused_decode.compare_steps),
re-seeded from those buffers, so IRON's own compare callable (with its fixed rel/abs tolerances)
is not used. A ``fused`` case runs "fused" mode and returns ``fused_out``. Where IRON has no
operator (the KV-cache append) the buffers go through the host between two sequences.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass, field
from typing import Mapping, Optional

import numpy as np

from accel_regress.families.fused_decode import golden as F
from accel_regress.families.fused_decode import llama_ops
from accel_regress.golden.case import Case
from accel_regress.golden.dtypes import to_bf16
from accel_regress.core.errors import Unsupported

IRON_SOURCE = ("amd/IRON@5f21cd41 iron/common/fusion.py (OperatorSequence.DISPATCH_MODES) and "
               "@979f9b4e iron/common/sequence.py (_DISPATCH_ALIASES)")
# Where the class has lived: iron/common/sequence.py (amd/IRON@979f9b4e, dispatch given by name or as
# a SequenceDispatch) and iron/common/fusion.py (@5f21cd41, DISPATCH_MODES); seed 001's class name,
# FusedMLIROperator, is the one fusion.py had before the rename.
SEQUENCE_MODULES = ("iron.common.sequence", "iron.common.fusion")
SEQUENCE_CLASSES = ("OperatorSequence", "FusedMLIROperator")
NEEDED_MODES = {"steps": "separate", "fused": "fused"}

ROPE_ANGLES = "rope_angles"          # host-computed [cos, sin, ...] table IRON's RoPE reads
SCORE_SCALE = "score_scale"          # the attention scale as a vector for ElementwiseMul


@dataclass(frozen=True)
class IronStep:
    """One runlist entry: ``iron.operators.<cls>(**kwargs)`` on buffers ``bufs`` (output last)."""
    step: str                        # the DECODE_BLOCK step whose output this entry produces
    cls: str
    kwargs: Mapping
    bufs: tuple[str, ...]

    @property
    def out(self) -> str:
        return self.bufs[-1]


@dataclass
class Segment:
    """A run of IRON steps between host copies."""
    steps: list[IronStep] = field(default_factory=list)
    host: list[F.Step] = field(default_factory=list)   # host copies that follow this segment


def _dims(case: Case) -> tuple[int, ...]:
    p = case.params
    return tuple(int(p[k]) for k in ("hidden", "n_heads", "n_kv_heads", "head_dim", "intermediate", "past"))


def shapes(case: Case) -> dict[str, tuple[int, ...]]:
    """The shape golden gives each step's output buffer (llama_ops' references)."""
    H, NH, KV, D, I, T = _dims(case)
    return {"xn": (1, H), "q": (NH * D,), "k": (KV * D,), "v": (KV * D,), "q_r": (NH, D), "k_r": (KV, D),
            "k_all": (KV, T + 1, D), "v_all": (KV, T + 1, D), "k_rep": (NH, T + 1, D), "v_rep": (NH, T + 1, D),
            "s": (NH, T + 1), "probs": (NH, T + 1), "v_t": (NH, D, T + 1), "attn": (NH, D), "o": (1, H),
            "h1": (1, H), "hn": (1, H), "g": (I,), "u": (I,), "sg": (I,), "m": (I,), "d": (H,), "out": (1, H)}


def _iron_steps(case: Case, step: F.Step) -> list[IronStep]:
    """The IRON operators of one DECODE_BLOCK step, with the constructor arguments of the
    declarative operators (amd/IRON iron/operators, lazily exported by iron/operators/__init__.py
    @073bacfb): GEMV(M, K, num_batches) gemv/op.py@00802545; Repeat(rows, cols, repeat, seq)
    repeat.py@00802545; RoPE(rows, cols, angle_rows, method_type) rope/op.py@1a475cbe;
    Softmax(rows, cols) softmax/op.py (index 68449211693); GEMM(M, K, N) gemm/op.py (index
    68374728588); ElementwiseAdd(size, ...) as amd/IRON's own compare-mode test builds it (index
    66081296312). Tile sizes and column counts are left to the operators' own ``auto`` choice.
    Not pinned to one commit: RMSNorm(size, weighted), SiLU(size), ElementwiseMul(size),
    Transpose(M, N, num_batches); supports() checks each signature before anything is built."""
    H, NH, KV, D, I, T = _dims(case)
    p = F.step_params(case, step)
    ins, out, op = step.ins, step.out, step.op
    size = int(np.prod(shapes(case)[out]))
    if op == "rmsnorm":
        return [IronStep(step.name, "RMSNorm", {"size": H, "weighted": True}, (*ins, out))]
    if op == "gemv":
        rows = {"q": NH * D, "k": KV * D, "v": KV * D, "g": I, "u": I, "d": H}[out]
        cols = I if out == "d" else H
        return [IronStep(step.name, "GEMV", {"M": rows, "K": cols}, (*ins, out))]
    if op == "rope":
        rows = size // D
        # IRON's RoPE takes its angles as a buffer (one row per position, reused by every head:
        # angle_rows=1), method_type 0 = two halves, the golden's rotate-half.
        return [IronStep(step.name, "RoPE", {"rows": rows, "cols": D, "angle_rows": 1, "method_type": 0},
                         (ins[0], ROPE_ANGLES, out))]
    if op == "repeat":
        return [IronStep(step.name, "Repeat", {"rows": KV, "seq": T + 1, "cols": D, "repeat": NH // KV},
                         (*ins, out))]
    if op == "gemv_batched":
        m = size // NH
        k = T + 1 if out == "attn" else D
        gemv = IronStep(step.name, "GEMV", {"M": m, "K": k, "num_batches": NH}, (*ins, out))
        if "scale" not in p or float(p["scale"]) == 1.0:
            return [gemv]
        # IRON's GEMV has no scale: the product goes to a buffer of its own and an ElementwiseMul
        # by the scale applies it (exact for a power-of-two scale such as head_dim**-0.5 at 16, 64).
        raw = f"{out}_unscaled"
        return [IronStep(step.name, "GEMV", {"M": m, "K": k, "num_batches": NH}, (*ins, raw)),
                IronStep(step.name, "ElementwiseMul", {"size": size}, (raw, SCORE_SCALE, out))]
    if op == "softmax":
        return [IronStep(step.name, "Softmax", {"rows": NH, "cols": T + 1}, (*ins, out))]
    if op == "transpose":
        return [IronStep(step.name, "Transpose", {"M": T + 1, "N": D, "num_batches": NH}, (*ins, out))]
    if op == "gemm":
        # attn is one row of NH*D; wo is stored (N, K): b_col_maj, C row-major.
        return [IronStep(step.name, "GEMM", {"M": 1, "K": NH * D, "N": H, "b_col_maj": bool(p.get("b_col_maj")),
                                             "c_col_maj": bool(p.get("c_col_maj"))}, (*ins, out))]
    cls = {"add": "ElementwiseAdd", "mul": "ElementwiseMul", "silu": "SiLU"}.get(op)
    if cls is None:
        raise Unsupported(f"no IRON operator is mapped for step {step.name} ({op})")
    return [IronStep(step.name, cls, {"size": size}, (*ins, out))]


# Steps IRON does not run as an operator. The KV cache: current IRON keeps it as a resident
# max-context buffer read under a per-call bound (repeat.py@00802545: "the middle axis of a stack,
# a KV cache's context (keys[:, :c])"); how its llama decode writes the new row into it was not
# found in the readable revisions, so here the append is a host copy between two sequences.
HOST_OPS = ("kv_append",)


def plan(case: Case) -> list[Segment]:
    segments = [Segment()]
    for step in F.block(case):
        if step.op in HOST_OPS:
            segments[-1].host.append(step)
            continue
        if segments[-1].host:
            segments.append(Segment())
        segments[-1].steps.extend(_iron_steps(case, step))
    return segments


# --- what this IRON has --------------------------------------------------------------------------

def sequence_class():
    """((IRON's operator-sequence class, its dispatch mode names, its module), None), or (None, the
    reason)."""
    reasons = []
    for module_name in SEQUENCE_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            reasons.append(f"{module_name} does not import ({type(exc).__name__}: {exc})")
            continue
        except Exception as exc:
            reasons.append(f"{module_name} does not import ({type(exc).__name__}: {exc})")
            continue
        cls = next((getattr(module, n) for n in SEQUENCE_CLASSES if hasattr(module, n)), None)
        if cls is None:
            reasons.append(f"{module_name} has no {' or '.join(SEQUENCE_CLASSES)}")
            continue
        modes = getattr(cls, "DISPATCH_MODES", None) or tuple(getattr(module, "_DISPATCH_ALIASES", ()))
        if not modes:
            reasons.append(f"this IRON's {module_name}.{cls.__name__} has no dispatch modes (neither DISPATCH_MODES "
                           f"nor _DISPATCH_ALIASES: the separate-xclbin, reference and compare modes came with "
                           f"amd/IRON PR #117)")
            continue
        return (cls, tuple(modes), module_name), None
    if not reasons:
        reasons.append(f"IRON has neither {' nor '.join(SEQUENCE_MODULES)}")
    return None, "; ".join(reasons) + f"; checked against {IRON_SOURCE}"


def describe() -> str:
    """For versions(): which operator sequence this IRON has (fused_decode's expectations may
    differ between them)."""
    found, why = sequence_class()
    if found is None:
        return f"none ({why})"
    cls, modes, module_name = found
    return f"{module_name}.{cls.__name__}, dispatch modes {', '.join(modes)}"


def _operator(name: str):
    ops = importlib.import_module("iron.operators")
    return getattr(ops, name)


# IRON's Softmax takes no mask buffer (amd/IRON@91b6eec8 iron/operators/softmax/op.py
# get_arg_spec: one "in", one "out"); its only masking is one valid length per dispatch, the same
# for every row: each core masks [vector_size, tile) of every row it processes with mask_bf16
# before softmax_bf16, vector_size being a single runtime parameter (amd/IRON@2073dc48
# iron/operators/softmax/design.py:76-84, core_body; mask_bf16 fills the tail with -inf). Rows
# with different valid lengths, leading (left) padding and a row with no valid position cannot be
# expressed, and this adapter builds Softmax(rows, cols) without a mask length.
MASK_REASON = ("IRON's Softmax has no mask input: it masks one trailing length per dispatch, the same for every "
               "row (amd/IRON@2073dc48 iron/operators/softmax/design.py:76-84, mask_bf16), so per-row padding "
               "and a fully masked row cannot be run; the masked block runs on emu, iree-cpu and qemu-rvv")


def mask_excludes(case: Case) -> Optional[str]:
    return MASK_REASON if case.op == F.OP and F.masked(case) else None


def supports(case: Case) -> Optional[str]:
    found, why = sequence_class()
    if found is None:
        return why
    cls, modes, _ = found
    mode = NEEDED_MODES.get(case.params.get("program"))
    if mode is None:
        return f"unknown fused_decode program {case.params.get('program')!r}"
    if mode not in modes:
        return f"this IRON's {cls.__name__} has no dispatch {mode!r} (it has {', '.join(modes)})"
    try:
        steps = [s for seg in plan(case) for s in seg.steps]
    except Unsupported as exc:
        return str(exc)
    for s in steps:
        try:
            op_cls = _operator(s.cls)
        except Exception as exc:
            return f"iron.operators has no {s.cls} (step {s.step}): {type(exc).__name__}: {exc}"
        try:
            inspect.signature(op_cls).bind_partial(**s.kwargs)
        except TypeError as exc:
            return f"IRON's {s.cls} does not take {sorted(s.kwargs)} (step {s.step}): {exc}"
        except ValueError:
            pass                     # no introspectable signature: the constructor decides
    return None


# --- running ---------------------------------------------------------------------------------------

def host_constants(case: Case) -> dict[str, np.ndarray]:
    """Buffers the device needs that the golden step does not name: RoPE's angle table for this
    position (interleaved cos, sin in bf16, the layout of IRON's rope/op.py angle_table; the angles
    are the golden's, pos * theta**(-2i/D) in f32, without Llama 3's frequency scaling) and the
    attention scale."""
    p = case.params
    H, NH, KV, D, I, T = _dims(case)
    ang = llama_ops.rope_angles(p, np.float32)
    table = np.empty((1, D), np.float32)
    table[0, 0::2], table[0, 1::2] = np.cos(ang), np.sin(ang)
    return {ROPE_ANGLES: to_bf16(table), SCORE_SCALE: to_bf16(np.full(NH * (T + 1), p["attn_scale"], np.float32))}


def _to_torch(a: np.ndarray):
    import torch
    return torch.from_numpy(np.ascontiguousarray(a, np.float32).reshape(-1)).to(torch.bfloat16)


def _write(run, name: str, value: np.ndarray, stage) -> None:
    buf = stage(f"get_buffer({name!r})", lambda: run.get_buffer(name))
    flat = buf.torch_view()
    data = _to_torch(value)
    if flat.numel() < data.numel():
        raise Unsupported(f"IRON sized buffer {name!r} {flat.numel()} elements, the case has {data.numel()}")
    flat[: data.numel()].copy_(data)
    # The caller syncs what it wrote: the fused callable pushes only buffers marked so (amd/IRON
    # @5f21cd41 fusion.py SequenceFullELFCallable.__call__; @979f9b4e's test helper _set_input).
    stage(f"{name}.to('npu')", lambda: buf.to("npu"))


def _read(run, name: str, shape: tuple[int, ...], stage) -> np.ndarray:
    import torch
    buf = stage(f"get_buffer({name!r})", lambda: run.get_buffer(name))
    stage(f"{name}.to('cpu')", lambda: buf.to("cpu"))
    n = int(np.prod(shape))
    # The buffer is bf16 (IRON's host tensors); through f32 to numpy, and back to bf16 exactly.
    return to_bf16(buf.torch_view()[:n].to(torch.float32).numpy().reshape(shape))


def _segment_io(segments: list[Segment], n: int) -> tuple[list[str], list[str]]:
    """Segment n's input buffers (written from the host) and the buffers it produces that are
    read after it: by a host copy, a later segment, or as the block's output."""
    seg = segments[n]
    produced = [s.out for s in seg.steps]
    inputs = []
    for s in seg.steps:
        inputs += [b for b in s.bufs[:-1] if b not in produced and b not in inputs]
    later = {b for h in seg.host for b in h.ins}
    later |= {b for other in segments[n + 1:] for s in other.steps for b in s.bufs[:-1]}
    return inputs, [b for b in produced if b in later or b == F.OUTPUT]


def run(case: Case, inputs: Mapping[str, np.ndarray], *, context, stage) -> dict[str, np.ndarray]:
    """``context``: IRON's AIEContext for the operators (build dir set); ``stage(what, fn,
    compile_stage=False)`` turns IRON's failures into verdicts."""
    found, why = sequence_class()
    if found is None:
        raise Unsupported(why)
    Sequence = found[0]
    program = case.params["program"]
    dispatch = NEEDED_MODES[program]
    out_shapes = shapes(case)
    bufs: dict[str, np.ndarray] = {**{k: np.asarray(v, np.float32) for k, v in inputs.items()},
                                   **host_constants(case)}
    built: dict[tuple, object] = {}
    got: dict[str, np.ndarray] = {}
    segments = plan(case)
    for n, seg in enumerate(segments):
        seg_inputs, needed = _segment_io(segments, n)
        runlist = []
        for s in seg.steps:
            key = (s.cls, tuple(sorted(s.kwargs.items())))
            if key not in built:     # one operator per configuration, shared by its steps as in IRON's runlists
                try:
                    built[key] = _operator(s.cls)(**s.kwargs, context=context)
                except (ValueError, TypeError) as exc:
                    raise Unsupported(f"IRON's {s.cls}({s.kwargs}) refuses this shape (step {s.step}): {exc}") from None
            runlist.append((built[key], *s.bufs))
        # steps: every step's output is read back (separate mode syncs them all); fused: only what
        # the host or a later segment reads, as a fused program keeps the rest in scratch.
        read = [s.out for s in seg.steps if s.out in out_shapes] if program == "steps" else needed
        name = f"{case.id}-seg{n}"
        seq = Sequence(name, runlist, seg_inputs, read if program == "steps" else needed,
                       dispatch=dispatch, context=context)
        try:
            stage(f"{name} compile()", seq.compile, compile_stage=True)
        except Exception as exc:
            if "requires NPU2" in str(exc):
                raise Unsupported(f"IRON: {exc}") from None
            raise
        call = stage(f"{name} get_callable()", seq.get_callable)
        for b in seg_inputs:
            _write(call, b, bufs[b], stage)
        stage(f"{name} run (dispatch={dispatch!r})", call)
        for b in read:
            bufs[b] = got[b] = _read(call, b, out_shapes[b], stage)
        for h in seg.host:
            # The host copy of HOST_OPS, from the buffers just read back.
            y = llama_ops.reference(h.op, F.step_params(case, h), [bufs[b] for b in h.ins])
            bufs[h.out] = got[h.out] = to_bf16(np.asarray(y, np.float32))
    if program == "fused":
        return {F.FUSED_OUTPUT: got[F.OUTPUT]}
    return got
