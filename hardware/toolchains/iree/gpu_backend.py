"""What IREE's CUDA and HIP backends share: compile everywhere (the targets need no GPU), run
where the GPU and its driver are, through ``iree-run-module`` (toolchains/iree/run_module.py).

A backend names its HAL driver and how to choose the compile target from the device; the target
is chosen by compiling a one-line probe program for each candidate in order, so a target this
compiler cannot build ("missing GPU target", an abort) falls through to the next. Without the
device, a case compiles every program of its plan (a compile failure is COMPILE_ERROR with the
compiler's words) and then SKIPs with what is missing.
"""
from __future__ import annotations

import shutil
import subprocess
from functools import lru_cache
from typing import Mapping, Optional, Sequence

import numpy as np

from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import CompileError, Hang, Unsupported
from accel_regress.golden.case import Case
from accel_regress.toolchains.iree import compiler, run_module
from accel_regress.toolchains.iree.program import IREE_PROGRAMS, Program, baseline_only, plan_for, run_plan, unsupported_case

PROBE = "func.func @probe(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = arith.addf %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"


def query(argv: Sequence[str], timeout_s: float = 30.0) -> Optional[str]:
    """stdout of a device tool (nvidia-smi, rocm_agent_enumerator), or None when it is absent or fails."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


@lru_cache(maxsize=4)
def driver_problem(driver: str) -> Optional[str]:
    """None when the runtime's HAL driver enumerates a device; else the driver's own words."""
    tool = run_module.tool_path()
    if tool is None:
        return f"iree-run-module not found (iree-base-runtime): {compiler.PIP_HINT}"
    try:
        proc = run_module.run_text([tool, f"--dump_devices={driver}"])
    except (OSError, subprocess.SubprocessError) as exc:
        return f"iree-run-module --dump_devices={driver} failed: {exc}"
    if proc.returncode == 0 and f"--device={driver}://" in proc.stdout:
        return None
    words = [ln.strip() for ln in proc.stderr.splitlines() if "UNAVAILABLE" in ln or "NOT_FOUND" in ln]
    return words[0] if words else f"the {driver} HAL driver enumerates no device"


@lru_cache(maxsize=16)
def first_target(flag_for: tuple, device: str) -> tuple[str, tuple[str, ...]]:
    """The first candidate target that compiles the probe: (target, notes on the ones that did not)."""
    notes: list[str] = []
    for target, flags in flag_for:
        try:
            compiler.compile_cached(PROBE, (f"--iree-hal-target-device={device}", *flags), name=f"probe {target}",
                                    timeout_s=120)
            return target, tuple(notes)
        except (CompileError, Hang) as exc:
            notes.append(f"{target}: {exc.message.split(': ', 2)[-1][:200]}")
    raise CompileError(f"no {device} target compiles here: {'; '.join(notes)}", stage="compile")


class IreeGpuBackend(Backend):
    kind = "compiler"
    default_timeout_s = 300.0
    memory_bound = "device"       # the driver reserves the device's virtual address range at start-up
    program_kinds = (IREE_PROGRAMS,)
    driver = ""                   # the HAL driver of iree-base-runtime
    target_flag = ""              # --iree-cuda-target / --iree-rocm-target

    def candidates(self) -> list[str]:
        """Targets to try, the device's own first."""
        raise NotImplementedError

    def device_versions(self) -> dict[str, str]:
        return {}

    def availability(self) -> Optional[str]:
        return compiler.availability()

    def compile_only(self) -> Optional[str]:
        return driver_problem(self.driver)

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(IREE_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        return unsupported_case(case) or baseline_only(case, self.name)

    def target(self) -> tuple[str, tuple[str, ...]]:
        return first_target(tuple((t, (f"{self.target_flag}={t}",)) for t in self.candidates()), self.driver)

    def versions(self) -> dict[str, str]:
        out = {"iree-compiler": compiler.compiler_version(), "iree-runtime": run_module.runtime_version()}
        try:
            target, skipped = self.target()
            out["target"] = target      # plain: a results matrix names its column after it (results/keys.py)
            if skipped:
                out["target-not-built"] = "; ".join(skipped)
        except CompileError as exc:
            out["target"] = f"none: {exc.message}"
        return {**out, **self.device_versions()}

    def _flags(self, program: Program) -> tuple[str, ...]:
        target, _ = self.target()
        return (f"--iree-hal-target-device={self.driver}", f"{self.target_flag}={target}",
                *getattr(program, "compile_flags", ()))

    def compile(self, case: Case, program: Program) -> compiler.Compiled:
        return compiler.compile_cached(program.mlir, self._flags(program), name=f"{case.op}/{case.id}/{program.entry}")

    def ahead(self, cases):
        from accel_regress.toolchains.iree import ahead
        try:
            self.target()
        except CompileError:
            return []       # every case says so when it runs
        return ahead.case_jobs(cases, lambda p: (p.mlir, self._flags(p)))

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = self.compile_only()
        if missing:
            for program in plan_for(case):
                self.compile(case, program)
            raise Unsupported(f"compiled for {self.target()[0]}; not run: {missing}")

        def one(program: Program, args: dict) -> dict:
            compiled = self.compile(case, program)
            return run_module.run(compiled.vmfb, self.driver, compiled.symbol(program.entry), [args[n] for n in program.inputs],
                                  program.outputs, run_module.result_types(program.mlir, program.entry),
                                  self.timeout(case), f"{case.id} {program.entry}")
        return run_plan(plan_for(case), inputs, one)
