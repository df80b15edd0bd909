"""One linalg MLIR program per case, generated from its parameters, shared by every IREE backend.

Each operator family with IREE programs has a module ``hardware/iree_common/programs/<op>.py``
exposing ``program(case) -> Program``.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Optional

from golden.case import Case


@dataclass(frozen=True)
class Program:
    mlir: str                    # the module text
    entry: str                   # exported function name
    inputs: tuple[str, ...]      # input names, in argument order (keys of the case's inputs dict)
    outputs: tuple[str, ...]     # output names, in result order (keys of the outputs dict)


def program_module(op: str):
    name = f"hardware.iree_common.programs.{op}"
    if not op.isidentifier() or importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def unsupported_op(op: str) -> Optional[str]:
    if program_module(op) is None:
        return f"no linalg program for operator {op!r} (add hardware/iree_common/programs/{op}.py)"
    return None



def program_for(case: Case) -> Program:
    return program_module(case.op).program(case)
