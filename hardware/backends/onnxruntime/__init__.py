"""``onnxruntime`` and ``onnxruntime-<ep>``: a case's ONNX model (accel_regress.onnx_programs) run by
onnxruntime on one execution provider.

One backend per execution provider, as torch has one per device type: an EP is its own set of
kernels (MLAS on the CPU, cuDNN/cuBLAS, MIGraphX/ROCm, OpenVINO, Vitis AI's NPU compiler, CANN,
QNN), so its verdicts, known bugs and versions are its own, ``--hw`` names it and a machine's
default selection runs every EP it has. ``onnxruntime`` is the CPUExecutionProvider (the one every
wheel has); the others are available where ``onnxruntime.get_available_providers()`` lists theirs
(the onnxruntime-gpu, -openvino, -qnn ... wheels), else unavailable with the reason.

A session that cannot be created (no kernel of the node at its opset and types on the EP, a model
the EP rejects) is COMPILE_ERROR with onnxruntime's words; an exception from ``run`` is CRASH. A
model newer than the installed onnxruntime reads (an IR version past its maximum, an opset it
calls under development: its own words, core/graph/model.cc and model_load_utils.h) is no verdict
on its kernels: SKIP with those words, as a dtype its Python API cannot carry is.
Every graph node must be placed on the named EP: onnxruntime falls back to the CPU EP for a node an
EP does not take, which would judge the CPU's kernel under the EP's name, so a fallback is refused
(``session.disable_cpu_ep_fallback``) for every EP but the CPU's own.
"""
from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
from typing import Mapping, Optional

import numpy as np

from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import CompileError, Crash, Unsupported
from accel_regress.golden.case import Case
from accel_regress.toolchains.onnx.program import ONNX_PROGRAMS, model_for, unsupported_case

PIP_HINT = "pip install 'accel-regress[corpus]' (onnxruntime from PyPI; an EP's own wheel for the others)"


def _version() -> Optional[str]:
    for dist in ("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino", "onnxruntime-qnn",
                 "onnxruntime-directml", "onnxruntime-vitisai", "onnxruntime-cann"):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            continue
    return None


def _described(provider: str) -> str:
    return f"each case's ONNX model run by onnxruntime on {provider}"


class OnnxRuntimeBackend(Backend):
    kind = "runtime"
    provider = "CPUExecutionProvider"
    description = _described(provider)
    default_timeout_s = 120.0
    program_kinds = (ONNX_PROGRAMS,)

    def availability(self) -> Optional[str]:
        if importlib.util.find_spec("onnxruntime") is None:
            return f"onnxruntime is not installed ({PIP_HINT})"
        try:
            import onnxruntime as ort
            have = ort.get_available_providers()
        except Exception as exc:
            return f"onnxruntime does not import ({type(exc).__name__}: {exc})"
        if self.provider not in ort.get_all_providers():
            return (f"onnxruntime {ort.__version__} knows no {self.provider} (get_all_providers()); "
                    "a build of another version may have it")
        if self.provider not in have:
            return (f"onnxruntime {ort.__version__} has no {self.provider} (get_available_providers(): "
                    f"{', '.join(have)}); install the onnxruntime build that has it")
        return None

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(ONNX_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        return unsupported_case(case)

    def versions(self) -> dict[str, str]:
        import onnxruntime as ort
        return {"onnxruntime": ort.__version__, "execution-provider": self.provider,
                "onnxruntime-dist": _version() or "?", "numpy": np.__version__, "device": self.provider}

    def _session(self, model: bytes):
        import onnxruntime as ort
        opts = ort.SessionOptions()
        opts.log_severity_level = 3           # errors only: a warning per case would drown the log
        if self.provider != "CPUExecutionProvider":
            opts.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        return ort.InferenceSession(model, opts, providers=[self.provider])

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        program = model_for(case)
        try:
            session = self._session(program.model)
        except Exception as exc:
            newer = _NEWER_THAN_READ.findall(str(exc))
            if newer:
                import onnxruntime as ort
                raise Unsupported(f"onnxruntime {ort.__version__} does not read this model: {'; '.join(newer)}") from None
            raise CompileError(f"onnxruntime could not create a session on {self.provider}: {exc}",
                               detail={"diagnostic": str(exc)}) from None
        carried = self._carried(program, inputs, session)
        if carried:
            raise Unsupported(carried)
        feeds = {k: (v.astype(object) if isinstance(v, np.ndarray) and v.dtype.kind in "US" else
                     [x.astype(object) if x.dtype.kind in "US" else x for x in v] if isinstance(v, list) else v)
                 for k, v in program.feeds(inputs).items()}
        try:
            results = session.run(None, feeds)
        except Exception as exc:
            raise Crash(f"onnxruntime raised {type(exc).__name__} running {case.id} on {self.provider}: {exc}") from None
        out = program.named(results)
        return {k: (v.astype(str) if v.dtype == object else v) for k, v in out.items()}


    @staticmethod
    def _carried(program, inputs, session) -> Optional[str]:
        """Why onnxruntime's Python API cannot carry the case's values (None: it can): it takes and
        returns numpy's own dtypes, not ml_dtypes' bfloat16, float8 and int4 arrays."""
        odd = sorted({str(v.dtype) for v in inputs.values() if type(v.dtype).__module__.startswith("ml_dtypes")})
        odd += sorted({o.type for o in session.get_outputs() if any(t in o.type for t in _NOT_NUMPY)})
        if odd:
            return (f"onnxruntime's Python API carries no {', '.join(odd)} values (numpy dtypes only; "
                    "an OrtValue path for them is not built yet)")
        return None


# onnxruntime's words for a model past what it reads (1.31.1: core/graph/model.cc:256,
# core/graph/model_load_utils.h:46).
_NEWER_THAN_READ = re.compile(r"Unsupported model IR version: \d+, max supported IR version: \d+"
                              r"|Opset \d+ is under development|Current official support for domain [\w.]+ is till opset \d+")

# onnxruntime's tensor type names (NodeArg.type) that no numpy dtype holds.
_NOT_NUMPY = ("bfloat16", "float8", "float4", "int4", "uint4", "int2", "uint2")


class OnnxRuntimeCudaBackend(OnnxRuntimeBackend):
    provider = "CUDAExecutionProvider"
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeRocmBackend(OnnxRuntimeBackend):
    provider = "ROCMExecutionProvider"
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeMigraphxBackend(OnnxRuntimeBackend):
    provider = "MIGraphXExecutionProvider"      # AMD GPUs since the ROCm EP left onnxruntime
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeOpenVinoBackend(OnnxRuntimeBackend):
    provider = "OpenVINOExecutionProvider"
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeVitisAiBackend(OnnxRuntimeBackend):
    provider = "VitisAIExecutionProvider"       # AMD Ryzen AI NPUs
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeCannBackend(OnnxRuntimeBackend):
    provider = "CANNExecutionProvider"          # Ascend
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)


class OnnxRuntimeQnnBackend(OnnxRuntimeBackend):
    provider = "QNNExecutionProvider"           # Qualcomm NPUs
    description = _described(provider)
    memory_bound = "device"      # its driver reserves large virtual ranges (core/isolation/bounds.py)
