"""``iree-cpu``: IREE from PyPI compiles each case's linalg program for this host and
``iree.runtime`` runs it on the ``local-task`` driver.

Generic over operators: any ``case.op`` with a registered IREE program (``families/<op>/iree_program.py`` for the built-ins) runs
here. Compiled modules are cached on disk (hardware/toolchains/iree/compiler.py). Programs whose
case carries a RISC-V flag variant other than the baseline are not duplicated here: the host
compile ignores RISC-V target flags, so such a case would rerun the baseline case's module.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import CompileError, Crash, NotApplicable
from accel_regress.toolchains.iree import compiler, host_target, riscv, run_module
from accel_regress.util import host_cpu
from accel_regress.toolchains.iree.program import (
    IREE_PROGRAMS,
    Program,
    plan_for,
    program_for,
    riscv_target,
    run_plan,
    unsupported_case,
)

HOST_FLAGS = ("--iree-hal-target-device=local",
              "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host")

def target_flags(cpu: str) -> tuple[str, ...]:
    return tuple(f"--iree-llvmcpu-target-cpu={cpu}" if f.startswith("--iree-llvmcpu-target-cpu=") else f
                 for f in HOST_FLAGS)


# RISC-V flag variants (case.params['variant']) and VLENs the host build does not distinguish.
HOST_VARIANTS = (None, riscv.BASELINE_VARIANT)
HOST_VLENS = (None, riscv.BASELINE_VLEN)


@lru_cache(maxsize=64)
def _load(vmfb: str):
    """A runtime context holding the module (one per compiled file, reused across runs)."""
    import iree.runtime as rt
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    with open(vmfb, "rb") as f:
        ctx.add_vm_module(rt.VmModule.copy_buffer(config.vm_instance, f.read()))
    return ctx


class IreeCpuBackend(Backend):
    name = "iree-cpu"
    kind = "compiler"
    description = "IREE (iree-base-compiler / iree-base-runtime) compiles the linalg program for the host CPU"
    default_timeout_s = 300.0
    program_kinds = (IREE_PROGRAMS,)

    def availability(self) -> Optional[str]:
        reason = compiler.availability()
        if reason:
            return reason
        try:
            import iree.runtime  # noqa: F401
        except Exception as exc:
            return f"iree.runtime does not import ({type(exc).__name__}: {exc}): {compiler.PIP_HINT}"
        return None

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(IREE_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        reason = unsupported_case(case)
        if reason:
            return reason
        variant, vlen = riscv_target(case)
        if variant not in HOST_VARIANTS:
            return NotApplicable(f"RISC-V flag variant {variant!r} has no meaning on the host; "
                                 f"iree-cpu runs the {riscv.BASELINE_VARIANT!r} case of the same kind and shape")
        if vlen not in HOST_VLENS:
            return NotApplicable(f"VLEN {vlen} is a simulator setting; iree-cpu runs the VLEN "
                                 f"{riscv.BASELINE_VLEN} case of the same kind and shape")
        return None

    # What --iree-llvmcpu-target-cpu names: "host" is what LLVM resolves on this machine.
    target_cpu = "host"

    def versions(self) -> dict[str, str]:
        out = {"iree-compiler": compiler.compiler_version(), "iree-runtime": run_module.runtime_version(),
               "llvm": compiler.llvm_version(), **host_cpu.host().facts()}
        tool = compiler.tool_path()
        target = host_target.resolved(tool, compiler.compiler_version(), self.target_cpu) if tool \
            else {"error": "no iree-compile"}
        # The code path a verdict belongs to: the CPU IREE compiled for and the vector ISA it may use.
        out["target-cpu"] = target.get("cpu") or f"unresolved ({target.get('error')})"
        out["target-features"] = " ".join(f for f in host_target.enabled_features(target.get("cpu_features", ""))
                                          if f.startswith(("avx", "amx", "sve", "sme", "neon", "fma")))
        out["device"] = f"{out['cpu']} ({out['target-cpu']})"
        return out

    def timeout(self, case: Case) -> float:
        return self.default_timeout_s

    def compile(self, case: Case, program: Optional[Program] = None) -> compiler.Compiled:
        program = program or program_for(case)
        return compiler.compile_cached(program.mlir, self._flags(program), name=f"{case.op}/{case.id}/{program.entry}")

    def ahead(self, cases):
        from accel_regress.toolchains.iree import ahead
        return ahead.case_jobs(cases, lambda p: (p.mlir, self._flags(p)))

    def _flags(self, program: Program) -> tuple[str, ...]:
        return target_flags(self.target_cpu) + tuple(getattr(program, "compile_flags", ()))

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        plan = plan_for(case)
        self._compile_together(case, plan)
        return run_plan(plan, inputs, lambda program, args: self._run_program(case, program, args))

    def _compile_together(self, case: Case, plan: tuple[Program, ...]) -> None:
        """A plan's programs (fused_decode's steps) in one iree-compile per set of flags; a batch
        that fails leaves each program to its own compile, which names the one at fault."""
        groups: dict[tuple, list[str]] = {}
        for program in plan:
            groups.setdefault(self._flags(program), []).append(program.mlir)
        for flags, texts in groups.items():
            try:
                compiler.compile_batch(texts, flags, name=f"{case.op}/{case.id}")
            except CompileError:
                pass

    def _run_program(self, case: Case, program: Program, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        compiled = self.compile(case, program)
        ctx = _load(str(compiled.vmfb))
        fn = ctx.modules.module[compiled.symbol(program.entry)]
        # np.require, not np.ascontiguousarray: that makes a 0-d array (a scalar operand) 1-d.
        args = [np.require(inputs[n], requirements="C") for n in program.inputs]
        try:
            results = fn(*args)
        except Exception as exc:
            raise Crash(f"iree.runtime raised {type(exc).__name__} calling {program.entry}: {exc}",
                        detail={"vmfb": str(compiled.vmfb)}) from None
        if not isinstance(results, (tuple, list)):
            results = (results,)
        if len(results) != len(program.outputs):
            raise Crash(f"{program.entry} returned {len(results)} results, the program declares "
                        f"{len(program.outputs)} ({', '.join(program.outputs)})")
        return {name: np.array(r.to_host() if hasattr(r, "to_host") else r)
                for name, r in zip(program.outputs, results)}
