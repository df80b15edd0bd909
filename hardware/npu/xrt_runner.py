"""Run a manifest entry through raw pyxrt, the way mlir-aie's and IRON's host code do.

Sequence (pyxrt names; XRT src/python/pybind11/src/pyxrt.cpp):
  device (one per process, hardware/npu/device.py) -> xclbin(path) -> device.register_xclbin ->
  hw_context(device, uuid) [one per xclbin, cached] -> kernel(hw_context, name) ->
  instruction bo: bo(device, nbytes, bo.cacheable, kernel.group_id(1)), write, sync TO_DEVICE ->
  data bos: bo(device, nbytes, bo.host_only, kernel.group_id(3 + position)), write, sync TO_DEVICE ->
  one entry:   run = kernel(3, insts_bo, n_insts, *bos); run.wait(bound_ms) -> ert_cmd_state
  several:     runlist(hw_context); run(kernel) + set_arg(0..) per entry; runlist.add; execute;
               runlist.wait(bound_ms)   (only when this pyxrt's bounded runlist wait is callable:
               otherwise each entry runs as its own kernel call with run.wait(bound_ms))
  -> sync FROM_DEVICE for every output buffer -> bo.read(nbytes, 0).
No wait here is unbounded; a wait that never returns at all (pyxrt's wait holds the GIL) is the
isolation layer's to kill.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from hardware.errors import Crash, Hang
from hardware.npu import device, manifest, states

OPCODE = 3              # the NPU call convention: opcode, instruction bo, instruction count, args
MAX_CONTEXTS = 4        # hardware contexts are a scarce, system-wide resource on the NPU

# (device index, xclbin path, mtime) -> (xclbin, hw_context, {kernel name: kernel})
_contexts: "OrderedDict[tuple, tuple[Any, Any, dict]]" = OrderedDict()
# pyxrt module -> whether runlist.wait(timeout_ms) is callable (probed once per process)
_bounded_runlist_wait: dict[int, bool] = {}


def forget() -> None:
    """Drop every hardware context and kernel (before the device handle is released)."""
    _contexts.clear()


def _context(dev, index: int, path: Path):
    xrt = device.pyxrt()
    key = (index, str(path.resolve()), path.stat().st_mtime_ns)
    if key in _contexts:
        _contexts.move_to_end(key)
        return _contexts[key]
    while len(_contexts) >= MAX_CONTEXTS:
        _contexts.popitem(last=False)
    xclbin = xrt.xclbin(str(path))
    dev.register_xclbin(xclbin)
    ctx = xrt.hw_context(dev, xclbin.get_uuid())
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


def _runlist_wait_is_bounded(xrt, runlist) -> bool:
    """Whether ``runlist.wait(timeout_ms)`` can be called and returns, probed on the idle runlist.

    XRT's stub (pyxrt.pyi) declares wait(timeout: int) -> ert_cmd_state, but the C++ binding takes
    std::chrono::milliseconds and returns std::cv_status, and pyxrt.cpp includes no
    pybind11/chrono.h, so a given build may reject the call or fail to convert the result."""
    key = id(xrt)
    if key not in _bounded_runlist_wait:
        try:
            runlist.wait(1)
            _bounded_runlist_wait[key] = True
        except TypeError:
            _bounded_runlist_wait[key] = False
    return _bounded_runlist_wait[key]


def _check(state, what: str, bound_ms: int) -> None:
    verdict = states.verdict_for(state, what=what, bound_ms=bound_ms)
    if verdict is not None:
        raise verdict


def _run_runlist(xrt, ctx, kernel, insts_bo, n_insts, entry, bos, bound_ms) -> str:
    rl = xrt.runlist(ctx)
    if not _runlist_wait_is_bounded(xrt, rl):
        _run_each(kernel, insts_bo, n_insts, entry, bos, bound_ms)
        return "runs (this pyxrt's runlist.wait(timeout) is not callable)"
    for args in entry.runlist:
        run = xrt.run(kernel)
        run.set_arg(0, OPCODE)
        run.set_arg(1, insts_bo)
        run.set_arg(2, n_insts)
        for j, name in enumerate(args):
            run.set_arg(3 + j, bos[name])
        rl.add(run)
    total_ms = bound_ms * len(entry.runlist)
    what = f"runlist of {len(entry.runlist)} entries"
    rl.execute()
    try:
        result = rl.wait(total_ms)
    except RuntimeError as exc:       # XRT throws runlist::command_error naming the failing state
        verdict = states.from_exception(exc, what=what)
        if verdict is None:
            raise Crash(f"{what} failed: {exc}", stage="run", detail={"exception": str(exc)}) from None
        raise verdict from None
    if result is not None:
        text = str(result).lower()
        if "ert_cmd_state" in text or isinstance(result, int):
            _check(result, what, total_ms)
        elif text.endswith("timeout") and "no_timeout" not in text:   # std::cv_status::timeout
            raise Hang(f"{what} did not complete within {total_ms} ms", stage="run",
                       detail={"wait_bound_ms": total_ms, "needs_reset": True})
    return "runlist"


def _run_each(kernel, insts_bo, n_insts, entry, bos, bound_ms) -> None:
    n = len(entry.runlist)
    for i, args in enumerate(entry.runlist):
        run = kernel(OPCODE, insts_bo, n_insts, *[bos[a] for a in args])
        _check(run.wait(bound_ms), f"kernel run {i + 1} of {n}" if n > 1 else "kernel run", bound_ms)


def run(entry: manifest.Entry, inputs: Mapping[str, np.ndarray], bound_ms: int) -> tuple[dict, dict]:
    """Outputs of ``entry`` on ``inputs``, and a few facts about how it ran."""
    xrt = device.pyxrt()
    for path in (entry.xclbin, entry.insts):
        if not path.is_file():
            raise entry.bad(f"{path} does not exist")
    index = device.device_index()
    dev = device.acquire(index)
    xclbin, ctx, kernels = _context(dev, index, entry.xclbin)
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
        _run_each(kernel, insts_bo, n_insts, entry, bos, bound_ms)
        submitted = "kernel call"
    else:
        submitted = _run_runlist(xrt, ctx, kernel, insts_bo, n_insts, entry, bos, bound_ms)

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
