"""One linalg MLIR program per case, generated from its parameters, shared by every IREE backend.

Each operator family with IREE programs registers a module exposing ``program(case) -> Program``
in the ``accel_regress.iree_programs`` entry-point group under the family's id (hardware/core/registry.py);
the built-in ones are ``families/<op>/iree_program.py``. A module may also expose
``plan(case) -> tuple[Program, ...]``: a runlist of programs run one after another, each reading
case inputs or earlier programs' outputs by name (fused_decode's steps), whose outputs together are
the case's outputs; and ``unsupported(case)``, why its program cannot express a case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Protocol

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.contracts import ProgramKind
from accel_regress.core.errors import NotApplicable, Unsupported
from accel_regress.toolchains.iree import riscv


@dataclass(frozen=True)
class Program:
    mlir: str                    # the module text
    entry: str                   # exported function name
    inputs: tuple[str, ...]      # input names, in argument order (keys of the case's inputs dict)
    outputs: tuple[str, ...]     # output names, in result order (keys of the outputs dict)
    # Arguments that are case parameters, not case inputs (a valid shape, a pad value): passed at
    # run time, so cases that differ only in them share one compiled module.
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)


class IreeProgram(Protocol):
    """``accel_regress.iree_programs``: the linalg program IREE backends compile (a Program)."""

    def program(self, case: Case) -> Any: ...


class IreeProgramOptional(Protocol):
    RISCV_VARIANTS: bool                      # False: params["variant"] is not a RISC-V flag variant

    def plan(self, case: Case) -> Any: ...    # programs run one after another (a runlist)

    def unsupported(self, case: Case) -> Optional[str]: ...


# What every IREE backend reads (its ``program_kinds``).
IREE_PROGRAMS = ProgramKind("iree_program", "accel_regress.iree_programs", IreeProgram, IreeProgramOptional)


def riscv_target(case: Case) -> tuple[Optional[str], Optional[int]]:
    """The RISC-V flag variant and VLEN the case asks for (``params['variant']`` / ``['vlen']``),
    or (None, None) when its family's ``variant`` parameter means something else (a program
    module with ``RISCV_VARIANTS = False``, e.g. seed 002's kernel variants)."""
    if not getattr(registry.module_for(IREE_PROGRAMS, case.op), "RISCV_VARIANTS", True):
        return None, None
    p = case.params if hasattr(case.params, "get") else {}
    return p.get("variant"), p.get("vlen")


def unsupported_case(case: Case) -> Optional[str]:
    """Why the family's program cannot express this case (the module's ``unsupported(case)``)."""
    reason = registry.missing_program(IREE_PROGRAMS, case.op)
    if reason:
        return reason
    check = getattr(registry.module_for(IREE_PROGRAMS, case.op), "unsupported", None)
    return check(case) if check is not None else None


def program_for(case: Case) -> Program:
    return registry.module_for(IREE_PROGRAMS, case.op).program(case)


def plan_for(case: Case) -> tuple[Program, ...]:
    module = registry.module_for(IREE_PROGRAMS, case.op)
    plan = getattr(module, "plan", None)
    return tuple(plan(case)) if plan is not None else (module.program(case),)


def run_plan(plan: tuple[Program, ...], inputs: Mapping[str, np.ndarray],
             run_program: Callable[[Program, dict], dict]) -> dict[str, np.ndarray]:
    """Run each program on the buffers it names (case inputs, then earlier outputs); every
    program's outputs are returned."""
    buffers = dict(inputs)
    outputs: dict[str, np.ndarray] = {}
    for program in plan:
        buffers.update(program.constants)
        missing = [n for n in program.inputs if n not in buffers]
        if missing:
            raise Unsupported(f"{program.entry} reads {', '.join(missing)}, which neither the case's inputs "
                              "nor an earlier program provide")
        result = run_program(program, {n: buffers[n] for n in program.inputs})
        buffers.update(result)
        outputs.update(result)
    return outputs


def baseline_only(case: Case, name: str) -> Optional[str]:
    """RISC-V flag variants and VLENs mean nothing to a GPU target: run the baseline case only."""
    variant, vlen = riscv_target(case)
    if variant not in (None, riscv.BASELINE_VARIANT):
        return NotApplicable(f"RISC-V flag variant {variant!r} has no meaning on {name}; it runs the "
                             f"{riscv.BASELINE_VARIANT!r} case of the same kind and shape")
    if vlen not in (None, riscv.BASELINE_VLEN):
        return NotApplicable(f"VLEN {vlen} is a simulator setting; {name} runs the VLEN "
                             f"{riscv.BASELINE_VLEN} case of the same kind and shape")
    return None
