"""``emu``: numerical models of the devices, runnable anywhere.

One model module per operator family, registered in the ``accel_regress.emu_models`` entry-point
group under the family's id (``case.op``); see hardware/core/registry.py. A model has
``run(case, inputs) -> outputs``, a ``FAULTS`` dict of the family's documented bugs (built-in
``--inject-fault`` names) and optionally ``timeout(case)``. The built-in models are each family's
``families/<id>/emu.py``, registered in this repository's pyproject.toml like any other.
"""
from __future__ import annotations

import platform
from importlib import metadata
from typing import Mapping, Optional, Protocol

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.contracts import Arrays, Fault, ProgramKind


class EmuModel(Protocol):
    """``accel_regress.emu_models``: the device's arithmetic, in the device's order and formats."""

    def run(self, case: Case, inputs: Arrays) -> Arrays: ...


class EmuModelOptional(Protocol):
    FAULTS: Mapping[str, Fault]               # the family's documented bugs, by --inject-fault name

    def timeout(self, case: Case) -> float: ...

    def supports_inputs(self, case: Case) -> Optional[str]: ...   # an input class its formats cannot hold


EMU_MODELS = ProgramKind("emu_model", "accel_regress.emu_models", EmuModel, EmuModelOptional)


class EmuBackend(Backend):
    name = "emu"
    kind = "emulator"
    description = "numerical models of each device (numpy/torch); every documented bug is an injectable fault"
    default_timeout_s = 60.0
    program_kinds = (EMU_MODELS,)

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(EMU_MODELS, op)

    def supports_inputs(self, case: Case) -> Optional[str]:
        """A model that holds the data path's number formats (a bfp16 GEMM holds no inf, NaN or
        subnormal) says which input classes it cannot carry, with its own ``supports_inputs``."""
        ask = getattr(registry.module_for(EMU_MODELS, case.op), "supports_inputs", None)
        return ask(case) if ask is not None else super().supports_inputs(case)

    def preload_modules(self) -> list[str]:
        return super().preload_modules() + [r.value.split(":")[0] for r in
                                            registry.registrations(EMU_MODELS).values()]

    def versions(self) -> dict[str, str]:
        # From the installed metadata: importing torch costs this (pytest) process ~2 s, and only
        # the isolated worker, which runs the models, needs it.
        return {"numpy": np.__version__, "torch": metadata.version("torch"),
                "ml_dtypes": metadata.version("ml_dtypes"), "python": platform.python_version()}

    def timeout(self, case: Case) -> float:
        model = registry.module_for(EMU_MODELS, case.op)
        bound = getattr(model, "timeout", None)
        return bound(case) if bound else self.default_timeout_s

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return registry.module_for(EMU_MODELS, case.op).run(case, inputs)
