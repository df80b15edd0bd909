"""Run a manifest entry through raw pyxrt, the way mlir-aie's and IRON's host code do.

Sequence (pyxrt names; XRT src/python/pybind11/src/pyxrt.cpp):
  device (one per process, hardware/backends/npu/device.py) -> xclbin(path) -> device.register_xclbin ->
  hw_context(device, uuid) [one per xclbin, cached] -> kernel(hw_context, name) ->
  instruction bo: bo(device, nbytes, bo.cacheable, kernel.group_id(1)), write, sync TO_DEVICE ->
  data bos: bo(device, nbytes, bo.host_only, kernel.group_id(3 + position)), write, sync TO_DEVICE ->
  one entry:   run = kernel(3, insts_bo, n_insts, *bos); run.wait(bound_ms) -> ert_cmd_state
  several:     runlist(hw_context); run(kernel) + set_arg(0..) per entry; runlist.add; execute;
               runlist.wait(), as IRON's run_runlist does: seed 000's bug lives in runlists, so
               the entries are never split into separate calls
  -> sync FROM_DEVICE for every output buffer -> bo.read(nbytes, 0).
A kernel call's wait is bounded. A runlist's cannot be: pyxrt binds runlist.wait(timeout) with a
std::chrono::milliseconds argument and a std::cv_status result but includes no pybind11/chrono.h
(Xilinx/XRT src/python/pybind11/src/pyxrt.cpp:742-748 at 963c58ee), so every call with a timeout
raises TypeError. A runlist that never completes, like any wait that never returns (pyxrt's
wait holds the GIL), is the isolation layer's to kill at the case bound; one the driver ends
raises XRT's "runlist failed execution (ERT_CMD_STATE_X)" (xrt_kernel.cpp:3906).
"""
from __future__ import annotations

import gc
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from accel_regress.core.errors import Crash
from accel_regress.backends.npu import device, manifest, states

OPCODE = 3              # the NPU call convention: opcode, instruction bo, instruction count, args

# Hardware contexts are a system-wide resource: the amdxdna driver has hwctx_limit slots per
# device and CREATE_HWCTX fails once they are taken. mlir-aie's CachedXRTRuntime
# (python/utils/hostruntime/xrtruntime/hostruntime.py, NPU_CONTEXT_CACHE_SIZE) keeps as many as the
# driver has, npu1 (Phoenix) 6 and npu4/5/6 16, overridable by $XRT_CONTEXT_CACHE_SIZE (a
# per-process share when several processes create contexts): the same here. An unknown kind gets
# the smaller number.
CONTEXT_SLOTS = {"npu1": 6, "npu4": 16, "npu5": 16, "npu6": 16}
CACHE_SIZE_ENV = "XRT_CONTEXT_CACHE_SIZE"

# (device index, xclbin path, mtime) -> (xclbin, hw_context, {kernel name: kernel})
_contexts: "OrderedDict[tuple, tuple[Any, Any, dict]]" = OrderedDict()


def forget() -> None:
    """Drop every hardware context and kernel (before the device handle is released)."""
    _contexts.clear()
    gc.collect()


def cache_size(kind: Optional[str]) -> int:
    env = os.environ.get(CACHE_SIZE_ENV, "").strip()
    if env:
        try:
            if int(env) > 0:
                return int(env)
        except ValueError:
            pass
        raise Crash(f"${CACHE_SIZE_ENV}={env!r}: expected a positive number of hardware contexts", stage="build")
    return CONTEXT_SLOTS.get(kind or "", min(CONTEXT_SLOTS.values()))


def _evict(drain: bool = False) -> None:
    """Release the oldest context (all of them with ``drain``). gc runs so that pyxrt's handle,
    and with it the driver's slot, is really gone before the next CREATE_HWCTX."""
    _contexts.popitem(last=False)
    while drain and _contexts:
        _contexts.popitem(last=False)
    gc.collect()


def _context(dev, index: int, path: Path, kind: Optional[str]):
    xrt = device.pyxrt()
    key = (index, str(path.resolve()), path.stat().st_mtime_ns)
    if key in _contexts:
        _contexts.move_to_end(key)
        return _contexts[key]
    if len(_contexts) >= cache_size(kind):
        # Phoenix: after a single-entry eviction the next submit on a fresh context fails with
        # EXEC_CMD ENOENT; only a full drain avoids it (mlir-aie CachedXRTRuntime.load).
        _evict(drain=kind == "npu1")
    xclbin = xrt.xclbin(str(path))
    dev.register_xclbin(xclbin)
    # Other processes may hold the remaining slots: evict one of ours and retry, as long as we
    # hold any (mlir-aie: max_retries = len(cache)).
    retries = len(_contexts)
    while True:
        try:
            ctx = xrt.hw_context(dev, xclbin.get_uuid())
            break
        except RuntimeError:
            if not _contexts or retries == 0:
                raise
            retries -= 1
            _evict()
    _contexts[key] = (xclbin, ctx, {})
    return _contexts[key]


def _kernel(entry: manifest.Entry, xclbin, ctx, kernels: dict):
    xrt = device.pyxrt()
    declared = {k.get_name(): k for k in xclbin.get_kernels()}
    name = entry.kernel or next(iter(declared), None)
    if name is None:
        raise Crash(f"{entry.xclbin} declares no kernels", stage="build")
    if name not in declared:
        raise entry.bad(f"kernel {name!r} is not in {entry.xclbin.name} (it has {', '.join(declared)})")
    # XRT segfaults when given more buffer arguments than the xclbin declares (mlir-aie checks
    # get_num_args() - 3 before every call for the same reason): refuse here instead.
    widest = max(len(args) for args in entry.runlist)
    room = declared[name].get_num_args() - 3
    if widest > room:
        raise entry.bad(f"runlist passes {widest} buffers but kernel {name} declares {room}")
    if name not in kernels:
        kernels[name] = xrt.kernel(ctx, name)
    return name, kernels[name]


def read_insts(path: Path) -> np.ndarray:
    """The instruction stream as uint32 words: IRON's .bin (raw little-endian words) or the older
    mlir-aie insts.txt (one hex word per line)."""
    if path.suffix == ".txt":
        words = [int(line, 16) for line in path.read_text().split() if line.strip()]
        return np.asarray(words, dtype=np.uint32)
    data = path.read_bytes()
    if len(data) % 4:
        raise Crash(f"{path}: {len(data)} bytes is not a whole number of 32-bit instructions", stage="build")
    return np.frombuffer(data, dtype="<u4").astype(np.uint32)


def _sync(bo, direction: str) -> None:
    xrt = device.pyxrt()
    bo.sync(getattr(xrt.xclBOSyncDirection, direction))


def _check(state, what: str, bound_ms: int, started: float) -> None:
    verdict = states.verdict_for(state, what=what, bound_ms=bound_ms, elapsed_ms=_ms_since(started),
                                 driver_timeout_s=device.driver_timeout_s())
    if verdict is not None:
        raise verdict


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000.0


def _run_runlist(xrt, ctx, kernel, insts_bo, n_insts, entry, bos) -> None:
    rl = xrt.runlist(ctx)
    for args in entry.runlist:
        run = xrt.run(kernel)
        run.set_arg(0, OPCODE)
        run.set_arg(1, insts_bo)
        run.set_arg(2, n_insts)
        for j, name in enumerate(args):
            run.set_arg(3 + j, bos[name])
        rl.add(run)
    what = f"runlist of {len(entry.runlist)} entries"
    started = time.monotonic()
    rl.execute()
    try:
        rl.wait()
    except RuntimeError as exc:       # XRT throws runlist::command_error naming the failing state
        verdict = states.from_exception(exc, what=what, elapsed_ms=_ms_since(started),
                                        driver_timeout_s=device.driver_timeout_s())
        if verdict is None:
            raise Crash(f"{what} failed: {exc}", stage="run", detail={"exception": str(exc)}) from None
        raise verdict from None


def _run_once(kernel, insts_bo, n_insts, args, bos, bound_ms) -> None:
    started = time.monotonic()
    run = kernel(OPCODE, insts_bo, n_insts, *[bos[a] for a in args])
    _check(run.wait(bound_ms), "kernel run", bound_ms, started)


def run(entry: manifest.Entry, inputs: Mapping[str, np.ndarray], bound_ms: int,
        kind: Optional[str] = None) -> tuple[dict, dict]:
    """Outputs of ``entry`` on ``inputs``, and a few facts about how it ran."""
    xrt = device.pyxrt()
    for path in (entry.xclbin, entry.insts):
        if not path.is_file():
            raise entry.bad(f"{path} does not exist")
    index = device.device_index()
    dev = device.acquire(index)
    xclbin, ctx, kernels = _context(dev, index, entry.xclbin, kind)
    name, kernel = _kernel(entry, xclbin, ctx, kernels)

    insts = read_insts(entry.insts)
    n_insts = int(insts.size if entry.insts_count == "words" else insts.nbytes)
    insts_bo = xrt.bo(dev, insts.nbytes, xrt.bo.cacheable, kernel.group_id(1))
    insts_bo.write(insts.view(np.uint8), 0)
    _sync(insts_bo, "XCL_BO_SYNC_BO_TO_DEVICE")

    # Each buffer's memory group is the one its kernel argument asks for (mlir-aie's xrt.py:
    # group_id(3), (4), (5)...), taken from the first run that passes it.
    position: dict[str, int] = {}
    for args in entry.runlist:
        for j, a in enumerate(args):
            position.setdefault(a, 3 + j)
    bos, sizes = {}, {}
    for bname, j in position.items():
        buf = entry.buffers[bname]
        host = manifest.fill(entry, buf, inputs)
        bo = xrt.bo(dev, buf.nbytes, xrt.bo.host_only, kernel.group_id(j))
        bo.write(host.view(np.uint8).reshape(-1), 0)
        _sync(bo, "XCL_BO_SYNC_BO_TO_DEVICE")
        bos[bname], sizes[bname] = bo, buf.nbytes

    if len(entry.runlist) == 1:
        _run_once(kernel, insts_bo, n_insts, entry.runlist[0], bos, bound_ms)
        submitted = "kernel call"
    else:
        _run_runlist(xrt, ctx, kernel, insts_bo, n_insts, entry, bos)
        submitted = "runlist"

    contents = {}
    for bname in manifest.output_buffers(entry):
        if bname not in bos:
            raise entry.bad(f"outputs read buffer {bname}, which no run passes to the kernel")
        _sync(bos[bname], "XCL_BO_SYNC_BO_FROM_DEVICE")
        raw = np.asarray(bos[bname].read(sizes[bname], 0))
        buf = entry.buffers[bname]
        contents[bname] = raw.view(np.uint8).view(buf.dtype).reshape(buf.shape)
    facts = {"npu_mode": "artifacts", "npu_kernel": name, "npu_submission": submitted,
             "npu_instructions": str(insts.size)}
    return manifest.outputs(entry, contents), facts
