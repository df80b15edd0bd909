"""One linalg MLIR program per case, generated from its parameters, shared by every IREE backend.

Each operator family with IREE programs registers a module exposing ``program(case) -> Program``
in the ``accel_regress.iree_programs`` entry-point group under the family's id (hardware/registry.py);
the built-in ones live in ``hardware/iree_common/programs/``.
"""
from __future__ import annotations

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
    from hardware import registry
    return registry.module_for("iree_program", op)


def unsupported_op(op: str) -> Optional[str]:
    if program_module(op) is None:
        from hardware import registry
        return (f"no linalg program for operator {op!r} (register one in the entry-point group "
                f"{registry.GROUPS['iree_program']})")
    return None


def program_for(case: Case) -> Program:
    return program_module(case.op).program(case)
