"""``emu``: numerical models of the devices, runnable anywhere.

One module per operator family, named after ``case.op`` (``hardware/emu/<op>.py``), each with
``run(case, inputs) -> outputs`` and a ``FAULTS`` dict of the family's documented bugs.
"""
from __future__ import annotations

import importlib
import importlib.util
import platform
from typing import Mapping, Optional

import numpy as np

from golden.case import Case
from hardware.backend import Backend


def _model(op: str):
    name = f"hardware.emu.{op}"
    if not op.isidentifier() or importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


class EmuBackend(Backend):
    name = "emu"
    kind = "emulator"
    description = "numerical models of each device (numpy/torch); every documented bug is an injectable fault"
    default_timeout_s = 60.0

    def supports_op(self, op: str) -> Optional[str]:
        if _model(op) is None:
            return f"emu has no model of operator {op!r} (add hardware/emu/{op}.py)"
        return None

    def versions(self) -> dict[str, str]:
        import ml_dtypes
        import torch
        return {"numpy": np.__version__, "torch": str(torch.__version__), "ml_dtypes": ml_dtypes.__version__,
                "python": platform.python_version()}

    def timeout(self, case: Case) -> float:
        model = _model(case.op)
        bound = getattr(model, "timeout", None)
        return bound(case) if bound else self.default_timeout_s

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return _model(case.op).run(case, inputs)
