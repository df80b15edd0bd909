"""Run a case through IRON's own operator, exactly as seed 000 and the Llama application do.

gemm_partition_n: ``AIEGEMM(M, K, N, tile_*, num_aie_columns, prio_accuracy=False,
emulate_bf16_mmul_with_bfp16, b_col_maj, c_col_maj, use_static_weight=True, partition_N,
context=AIEContext())``, ``op.weight = ...``, ``ctx.compile_all()``, ``ctx.prepare_runtime()``,
``op.forward(A)``, then ``op.write_buffer("A", ...)``, ``op.run_runlist()`` and every
``op.read_buffer(<C of partition i>, ...)`` read directly. That is the AIEGEMM of IRON before its
operators were rewritten declaratively (current amd/IRON has ``class GEMM(Operator)`` without
partition_N); an IRON without it is reported as unsupported, with the reason.

Two revisions of that AIEGEMM are known. Seed 000's (e.g. tonyjie/IRON@46df5832
iron/operators/gemm/op.py, set_up_runtime) names the buffers ``B_i`` / ``C_i`` for every
partition_N and its artifacts ``gemm_{M}x{K}x{N}_{tm}x{tk}x{tn}_{b}_{c}``; the later one
(_partitioned_b_buffer_name / _partitioned_c_buffer_name, _get_artifact_name_base) names them
``B`` / ``C`` when partition_N == 1 and its artifacts
``gemm_{M}x{K}x{N}_{cols}_{tm}x{tk}x{tn}_{b}_{c}_{dtin}_{dtout}_sc0_acc0_embf16{e}_round1_ctiles1[_partN{P}]``.
Buffer names are asked of the operator's own naming method when it has one.

IRON's own waits are unbounded (``run_runlist``: ``xrt_runlist.execute(); xrt_runlist.wait()``),
so in this mode only the isolation layer's process bound catches a hang; failed commands surface
as XRT's or IRON's exceptions naming the ert_cmd_state, which become HANG / CRASH here.
"""
from __future__ import annotations

import gc
import importlib
import importlib.util
import inspect
import os
import sys
import time
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core.errors import CompileError, Crash, VerdictError
from accel_regress.backends.npu import device, fused, states

BUILD_ENV = "ACCEL_NPU_BUILD_DIR"


def importable() -> bool:
    try:
        return importlib.util.find_spec("iron") is not None
    except (ImportError, ValueError):
        return False


def version() -> str:
    try:
        from importlib.metadata import version as dist_version
        return dist_version("iron")
    except Exception:
        module = importlib.import_module("iron")
        return str(getattr(module, "__version__", "unknown")) + f" ({Path(module.__file__).parent})"


def _aiegemm():
    """IRON's AIEGEMM class, or the reason this IRON cannot build a partition_N GEMM."""
    try:
        op = importlib.import_module("iron.operators.gemm.op")
    except Exception as exc:
        return None, f"iron.operators.gemm.op does not import: {type(exc).__name__}: {exc}"
    cls = getattr(op, "AIEGEMM", None)
    if cls is None:
        return None, ("this IRON has no AIEGEMM (current IRON's declarative GEMM has no partition_N); "
                      "install the IRON revision with AIEGEMM(partition_N=...) or use prebuilt artifacts")
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    if params and "partition_N" not in params:
        return None, "this IRON's AIEGEMM takes no partition_N"
    return cls, None


def revision() -> str:
    """Which AIEGEMM this IRON has, for versions(): the naming era decides which buffers exist."""
    cls, why = _aiegemm()
    if cls is None:
        return f"no partition_N AIEGEMM ({why})"
    if callable(getattr(cls, "_partitioned_c_buffer_name", None)):
        return "later partition_N AIEGEMM (B/C at partition_N == 1, artifacts ..._ctiles1[_partN<P>])"
    return "seed 000's partition_N AIEGEMM (B_i/C_i, artifacts gemm_<M>x<K>x<N>_<tiles>_<b>_<c>)"


def supports(case: Case) -> Optional[str]:
    if case.op not in ADAPTERS:
        return f"no IRON adapter for operator {case.op!r} (IRON mode knows: {', '.join(ADAPTERS)})"
    return READY[case.op](case)


def _build_dir(case: Case) -> Path:
    root = Path(os.environ.get(BUILD_ENV, "build/npu-iron"))
    return (root / case.op).resolve()


def c_buffer(op, i: int) -> str:
    """The name op gave partition i's C: its own naming method, else seed 000's ``C_i``."""
    name_of = getattr(op, "_partitioned_c_buffer_name", None)
    return name_of(i) if callable(name_of) else f"C_{i}"


def _stage(what: str, fn, *, compile_stage: bool = False):
    """Call IRON; turn its failures into verdicts that name what failed. IRON's waits have no bound
    of ours, so a command that IRON reports timed out was ended by the driver's watchdog."""
    started = time.monotonic()
    try:
        return fn()
    except VerdictError:
        raise
    except Exception as exc:
        verdict = states.from_exception(exc, what=f"IRON {what}", elapsed_ms=(time.monotonic() - started) * 1000,
                                        driver_timeout_s=device.driver_timeout_s())
        if verdict is not None:
            raise verdict from None
        detail = {"exception": f"{type(exc).__name__}: {exc}"}
        if compile_stage:
            raise CompileError(f"IRON {what} failed: {type(exc).__name__}: {exc}",
                               detail=dict(detail, diagnostic=str(exc))) from None
        raise Crash(f"IRON {what} failed: {type(exc).__name__}: {exc}", stage="run", detail=detail) from None


def _gemm(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    import torch
    from ml_dtypes import bfloat16
    common = importlib.import_module("iron.common")
    utils = importlib.import_module("iron.common.utils")
    AIEGEMM, reason = _aiegemm()
    if AIEGEMM is None:
        raise Crash(reason, stage="build")
    p = case.params
    M, K, N, P = p["M"], p["K"], p["N"], p["partition_N"]

    ctx = common.AIEContext()
    ctx.build_dir = _build_dir(case)
    op = _stage("AIEGEMM(...)", lambda: AIEGEMM(
        M=M, K=K, N=N, tile_m=p["tile_m"], tile_k=p["tile_k"], tile_n=p["tile_n"],
        num_aie_columns=p["num_aie_columns"], prio_accuracy=False,
        emulate_bf16_mmul_with_bfp16=p.get("emulate_bfp16", True), b_col_maj=p["b_col_maj"],
        c_col_maj=p["c_col_maj"], use_static_weight=True, partition_N=P, context=ctx))
    # set_up_runtime() stores static_weights = weight.T in B's own layout, (N, K) when b_col_maj:
    # so weight is B itself (K, N) for a column-major B (the Llama model's `op.weight = out_head.T`)
    # and B transposed for a row-major one.
    b = torch.from_numpy(np.ascontiguousarray(inputs["B"])).to(torch.bfloat16)
    op.weight = b if p["b_col_maj"] else b.T.contiguous()
    _stage("compile_all()", ctx.compile_all, compile_stage=True)
    _stage("prepare_runtime()", ctx.prepare_runtime)

    a = torch.from_numpy(np.ascontiguousarray(inputs["A"])).to(torch.bfloat16)
    result = _stage("forward()", lambda: op.forward(a[None]))
    forward = result.to(torch.float32).numpy() if hasattr(result, "numpy") else np.asarray(result, np.float32)
    if p["c_col_maj"] and forward.ndim >= 2:
        # forward() builds a C-layout result for column-major C; report it as logical (.., M, N).
        forward = np.swapaxes(forward, -1, -2)

    # Seed 000's direct path: the whole padded A into its buffer, the runlist, every C_i as is.
    a_pad = np.zeros((op.M, op.K), dtype=bfloat16)
    a_pad[:M, :K] = utils.torch_to_numpy(a)
    _stage("write_buffer('A')", lambda: op.write_buffer("A", a_pad))
    _stage("run_runlist()", op.run_runlist)
    out = {"forward": np.ascontiguousarray(forward, dtype=np.float32)}
    for i in range(P):
        shape = (op.N, op.M) if p["c_col_maj"] else (op.M, op.N)
        name = c_buffer(op, i)
        c = _stage(f"read_buffer({name!r})", lambda name=name, shape=shape: op.read_buffer(name, shape))
        c = np.asarray(c).astype(np.float32)
        out[f"C_{i}"] = np.ascontiguousarray(c.T if p["c_col_maj"] else c)
    return out


def _fused_decode(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    ctx = importlib.import_module("iron.common").AIEContext()
    ctx.build_dir = _build_dir(case)
    return fused.run(case, inputs, context=ctx, stage=_stage)


# This backend's own drivers, by the IRON operator each one drives: how to run the case, and why
# this IRON cannot (None: it can).
ADAPTERS = {"gemm_partition_n": _gemm, fused.F.OP: _fused_decode}
READY = {"gemm_partition_n": lambda case: _aiegemm()[1], fused.F.OP: fused.supports}


def run(case: Case, inputs: Mapping[str, np.ndarray]) -> tuple[dict, dict]:
    return ADAPTERS[case.op](case, inputs), {"npu_mode": "iron"}


# Where IRON's device manager has lived (aie_device_manager.py, later device_manager.py).
DEVICE_MANAGERS = ("iron.common.aie_device_manager", "iron.common.device_manager")


def reset() -> None:
    """After a HANG, make the next case open the NPU afresh.

    IRON's AIEDeviceManager is a singleton whose reset() is a no-op in the revision of seed 000
    (amd/IRON@0b351428 iron/common/aie_device_manager.py: reset(): pass) and whose device comes
    from mlir-aie, which keeps one pyxrt.device per index for the life of the process
    (python/utils/hostruntime/xrtruntime/device.py: _DEVICES, acquire_device) and one default
    CachedXRTRuntime holding hardware contexts (python/utils/__init__.py: _DefaultNPURuntime).
    Dropping the singleton alone leaves the next case on the hung handle: release all three.
    Only modules already imported are touched."""
    for module_name in DEVICE_MANAGERS:
        mgr = getattr(sys.modules.get(module_name), "AIEDeviceManager", None)
        if mgr is None:
            continue
        instance = getattr(mgr, "_instance", None)
        for step in ("cleanup", "reset"):
            if instance is not None and callable(getattr(instance, step, None)):
                try:
                    getattr(instance, step)()
                except Exception:
                    pass
        mgr._instance = None
        if hasattr(mgr, "_initialized"):
            mgr._initialized = False
    utils = sys.modules.get("aie.utils")
    runtime = getattr(utils, "_DefaultNPURuntime", None) if utils is not None else None
    if runtime is not None:
        try:
            runtime.cleanup()            # contexts and instruction bos, in dependency order
        except Exception:
            pass
        utils._DefaultNPURuntime = None
    handles = getattr(sys.modules.get("aie.utils.hostruntime.xrtruntime.device"), "_DEVICES", None)
    if isinstance(handles, dict):
        handles.clear()
    gc.collect()
