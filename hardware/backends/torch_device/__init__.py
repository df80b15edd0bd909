"""``torch-<device>``: each family's device arithmetic as a torch program, run on a torch device.

A family registers ``families/<op>/torch_program.py`` (for the built-ins) in the entry-point group
``accel_regress.torch_programs``: ``run(case, inputs, device) -> outputs`` with torch tensors on
``device`` (inputs as the golden module makes them: float32, int or bfloat16), computing in the
dtypes the family's device uses; optionally ``unsupported(case)`` and ``timeout(case)``.

One backend per torch device type: ``torch-cpu`` (runs everywhere, in the default run),
``torch-cuda``, ``torch-xpu``, ``torch-mps``, ``torch-npu`` (Ascend, through torch_npu) and
``torch-privateuse1`` (whatever out-of-tree device a package registers with torch). A device type
that is not here is unavailable with what is missing, found without importing torch where a file
tells (no driver, no package), so the pytest process pays no torch import for a device it cannot use.
The numeric settings (TF32, reduced-precision reductions, oneDNN on the CPU) are what the torch found
gives by default, recorded in ``versions()`` and settable for a session (numerics.py).
"""
from __future__ import annotations

import glob
import importlib.metadata as md
import importlib.util
import os
import platform
from typing import Any, Mapping, Optional, Protocol

import numpy as np

from accel_regress.core import devices, registry
from accel_regress.core.backend import Backend
from accel_regress.core.contracts import Arrays, ProgramKind
from accel_regress.core.errors import Crash, HarnessError
from accel_regress.golden.case import Case
from accel_regress.util import host_cpu


class TorchProgram(Protocol):
    """``accel_regress.torch_programs``: the family's device arithmetic as torch ops on ``device``."""

    def run(self, case: Case, inputs: Mapping[str, Any], device: Any) -> Mapping[str, Any]: ...


class TorchProgramOptional(Protocol):
    def unsupported(self, case: Case) -> Optional[str]: ...

    def timeout(self, case: Case) -> float: ...


TORCH_PROGRAMS = ProgramKind("torch_program", "accel_regress.torch_programs", TorchProgram, TorchProgramOptional)


def _torch_version() -> Optional[str]:
    try:
        return md.version("torch")
    except md.PackageNotFoundError:
        return None


class TorchBackend(Backend):
    """The torch device ``device_type``; subclasses name it and say, cheaply, what is missing."""
    kind = "framework"
    device_type = "cpu"
    default_timeout_s = 120.0
    program_kinds = (TORCH_PROGRAMS,)
    memory_bound = "device"         # a GPU driver reserves large virtual ranges (core/isolation/bounds.py)

    @property
    def description(self) -> str:
        return f"each family's torch program on the torch device {self.device_type!r}"

    # -- availability ------------------------------------------------------------------------------
    def missing_without_torch(self) -> Optional[str]:
        """What is missing, from files and package metadata alone (no torch import), or None."""
        return None

    def availability(self) -> Optional[str]:
        if _torch_version() is None:
            return "torch is not installed (pip install torch)"
        missing = self.missing_without_torch()
        if missing:
            return missing
        try:
            torch = self._torch()
            module = getattr(torch, self._type_name(torch), None)
            if module is None or not module.is_available():
                return (f"torch {torch.__version__} sees no {self.device_type} device "
                        f"(torch.{self._type_name(torch)}.is_available() is False)")
        except Exception as exc:
            return f"torch cannot open the {self.device_type} device: {type(exc).__name__}: {exc}"
        return None

    def _torch(self):
        import torch
        return torch

    def _type_name(self, torch) -> str:
        return self.device_type

    def device(self):
        """The device this process holds of its pool (--devices, core/devices.py), else the first."""
        torch = self._torch()
        if self.device_type == "cpu":
            return torch.device("cpu")
        held = devices.assigned(self.device_resource)
        return torch.device(self._type_name(torch), int(held) if held else 0)

    # -- what runs -------------------------------------------------------------------------------
    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(TORCH_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        from accel_regress.backends.torch_device import numerics
        reason = self.supports_op(case.op)
        if reason:
            return reason
        try:
            numerics.requested()
        except ValueError as exc:
            return f"the numerics settings asked for cannot be applied: {exc}"
        check = getattr(registry.module_for(TORCH_PROGRAMS, case.op), "unsupported", None)
        return check(case) if check is not None else None

    def timeout(self, case: Case) -> float:
        bound = getattr(registry.module_for(TORCH_PROGRAMS, case.op), "timeout", None)
        return bound(case) if bound is not None else self.default_timeout_s

    def preload_modules(self) -> list[str]:
        return super().preload_modules() + ["torch"] + [r.module for r in registry.registrations(TORCH_PROGRAMS).values()]

    def versions(self) -> dict[str, str]:
        from accel_regress.backends.torch_device import numerics
        torch = self._torch()
        out = {"torch": torch.__version__, "torch_git": str(getattr(torch.version, "git_version", "?")),
               "python": platform.python_version(), "numpy": np.__version__,
               "device_type": self._type_name(torch)}
        out.update({f"numerics.{k}": v for k, v in numerics.current(torch).items()})
        out.update(self.device_facts(torch))
        return out

    def device_facts(self, torch) -> dict[str, str]:
        return {"device": platform.processor() or platform.machine(), "threads": str(torch.get_num_threads())}

    def run(self, case: Case, inputs: Arrays) -> dict[str, np.ndarray]:
        from accel_regress.backends.torch_device import numerics, tensors
        torch = self._torch()
        device = self.device()
        settings = numerics.requested()
        program = registry.module_for(TORCH_PROGRAMS, case.op)
        with numerics.applied(torch, settings), torch.no_grad():
            try:
                got = program.run(case, {k: tensors.to_torch(torch, v, device) for k, v in inputs.items()}, device)
            except _PROGRAMMING_ERRORS as exc:
                raise _family_error(case.op, program, exc) from None
            self.synchronize(torch)
        return {k: tensors.to_numpy(torch, v) for k, v in got.items()}

    def synchronize(self, torch) -> None:
        module = getattr(torch, self._type_name(torch), None)
        sync = getattr(module, "synchronize", None)
        if sync is not None and self.device_type != "cpu":
            try:
                sync()
            except RuntimeError as exc:     # an asynchronous device error surfaces here
                raise Crash(f"{self.device_type} device error: {exc}") from None


# What a mistake in Python code raises: a device's or driver's failure reaches torch's callers as a
# RuntimeError (torch.AcceleratorError and torch.OutOfMemoryError are ones), never as these.
_PROGRAMMING_ERRORS = (TypeError, NameError, AttributeError, KeyError, IndexError, ImportError)


def _family_error(op: str, program, exc: BaseException) -> HarnessError:
    """The family's own program raised (its bug, not the device's CRASH), said with its file and
    line: the deepest frame of the traceback in the program's own file, else where it was raised."""
    import traceback
    frames = traceback.extract_tb(exc.__traceback__)
    own = getattr(program, "__file__", None)
    at = next((f for f in reversed(frames) if own and f.filename == own), frames[-1] if frames else None)
    where = f" at {at.filename}:{at.lineno} in {at.name}" if at else ""
    return HarnessError(f"the {op} family's torch program raised {type(exc).__name__}: {exc}{where}: the family's "
                        "code, not the device", stage="family",
                        detail={"traceback": "".join(traceback.format_exception(exc, limit=-8))})


class TorchCpuBackend(TorchBackend):
    device_type = "cpu"
    memory_bound = "address-space"

    def availability(self) -> Optional[str]:
        return None if _torch_version() is not None else "torch is not installed (pip install torch)"

    def device_facts(self, torch) -> dict[str, str]:
        # Whether a large bf16 GEMM goes to oneDNN here (mkldnn on, and a CPU with AVX512BW/VL/DQ:
        # pytorch/pytorch aten/src/ATen/native/mkldnn/Matmul.cpp use_mkldnn_bf16_matmul), which
        # decides expectations/torch-cpu.toml's subnormal entry: "1" yes, "0" no.
        from accel_regress.backends.torch_device import numerics, onednn
        cpu = host_cpu.host()
        path = onednn.kernel_path(torch.__version__, numerics.requested(), self.process_env().get(onednn.ISA_ENV))
        if path.get("onednn-isa", "unknown").startswith("unknown"):
            # No probe answer: this process's own answer, true where oneDNN is not capped apart.
            enabled = numerics.requested().get("mkldnn.enabled", torch.backends.mkldnn.enabled)
            to_onednn = bool(torch.backends.mkldnn.is_available() and enabled
                             and torch.ops.mkldnn._is_mkldnn_bf16_supported())
        else:       # the probe ran the GEMM under the worker's cap: whether oneDNN took it there
            to_onednn = not path["onednn-bf16-matmul"].startswith(onednn.NOT_ONEDNN)
        # The device is the kernel path, not only the CPU: the same runner gives other verdicts
        # with oneDNN capped below AMX, and the history and gate must keep the two apart.
        device = f"{cpu.model} (oneDNN {path.get('onednn-isa', '?')}; bf16 matmul: {path.get('onednn-bf16-matmul', '?')})"
        return {**super().device_facts(torch), **cpu.facts(), **path, "device": device,
                "onednn-bf16-gemm": "1" if to_onednn else "0"}


class TorchCudaBackend(TorchBackend):
    device_type = "cuda"
    device_resource = "torch-cuda"

    def missing_without_torch(self) -> Optional[str]:
        if not (os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version")
                or os.path.exists("/dev/kfd")):       # ROCm torch answers as cuda too
            return "no NVIDIA or AMD GPU driver here (/dev/nvidiactl, /proc/driver/nvidia, /dev/kfd absent)"
        version = _torch_version() or ""
        if version.endswith("+cpu"):
            return f"torch {version} is a CPU-only build (install a CUDA or ROCm build of torch)"
        return None

    def device_facts(self, torch) -> dict[str, str]:
        i = self.device().index or 0
        major, minor = torch.cuda.get_device_capability(i)
        return {"device": torch.cuda.get_device_name(i), "capability": f"{major}.{minor}",
                "cuda_runtime": str(torch.version.cuda), "hip_runtime": str(getattr(torch.version, "hip", None)),
                "cudnn": str(torch.backends.cudnn.version())}


class TorchXpuBackend(TorchBackend):
    device_type = "xpu"
    device_resource = "torch-xpu"

    def missing_without_torch(self) -> Optional[str]:
        if not glob.glob("/dev/dri/renderD*"):
            return "no GPU render node here (/dev/dri/renderD* absent): no Intel GPU driver for torch.xpu"
        return None

    def device_facts(self, torch) -> dict[str, str]:
        return {"device": torch.xpu.get_device_name(self.device().index or 0)}


class TorchMpsBackend(TorchBackend):
    device_type = "mps"
    device_resource = "torch-mps"

    def missing_without_torch(self) -> Optional[str]:
        if platform.system() != "Darwin":
            return f"torch's mps device is Apple's Metal: macOS only (this is {platform.system()})"
        return None

    def device(self):
        return self._torch().device("mps")


class TorchNpuBackend(TorchBackend):
    """Ascend NPUs through torch_npu, which registers itself as torch's privateuse1 device "npu"."""
    device_type = "npu"
    device_resource = "torch-npu"

    def missing_without_torch(self) -> Optional[str]:
        if importlib.util.find_spec("torch_npu") is None:
            return "torch_npu is not installed (Ascend's torch adapter, with the CANN toolkit)"
        if not glob.glob("/dev/davinci[0-9]*"):
            return "no Ascend NPU here (/dev/davinci* absent)"
        return None

    def _torch(self):
        import torch
        import torch_npu  # noqa: F401  registers the npu device with torch
        return torch


class TorchPrivateUse1Backend(TorchBackend):
    """Torch's out-of-tree device slot: the device a package registers (its name as it renamed it)."""
    device_type = "privateuse1"
    device_resource = "torch-privateuse1"

    def missing_without_torch(self) -> Optional[str]:
        # torch imports the packages registered in the entry-point group torch.backends at start-up
        # (torch 2.13.0 torch/__init__.py:3017-3077, _import_device_backends): with none, nothing
        # fills the privateuse1 slot.
        if not md.entry_points(group="torch.backends"):
            return "no out-of-tree torch device is installed (no package in the entry-point group torch.backends)"
        return None

    def _type_name(self, torch) -> str:
        return torch._C._get_privateuse1_backend_name()
