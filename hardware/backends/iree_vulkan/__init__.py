"""``iree-vulkan``: IREE's GPU code generation (``vulkan-spirv``: workgroups, subgroup reductions,
shared memory, bf16 kept as i16) run on the Vulkan device present: lavapipe (Mesa's Vulkan 1.3
driver on the CPU, Debian ``mesa-vulkan-drivers``) where there is no GPU, the GPU's driver where
there is one.

Every family's registered IREE program is compiled for a target written from the device's own
features and limits (target.py), wrapped in a module that names it; results come back through
``iree-run-module --output=@file.npy`` (toolchains/iree/run_module.py), a copy, because the
Python binding's ``to_host()`` fails on lavapipe. A program whose element types the device cannot
hold is NOT_APPLICABLE with what the device lacks.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from accel_regress.backends.iree_vulkan import device as vk, shader_cache
from accel_regress.backends.iree_vulkan.target import cannot_hold, with_target
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import NotApplicable
from accel_regress.golden.case import Case
from accel_regress.toolchains.iree import compiler, run_module
from accel_regress.toolchains.iree.program import IREE_PROGRAMS, Program, baseline_only, plan_for, run_plan, unsupported_case

FLAGS = ("--iree-hal-target-device=vulkan",)


class IreeVulkanBackend(Backend):
    name = "iree-vulkan"
    kind = "compiler"
    description = "IREE compiles the linalg program for vulkan-spirv (a target from the device's features) and runs it on the Vulkan device"
    default_timeout_s = 300.0
    memory_bound = "device"      # a GPU's Vulkan driver maps device memory into the worker
    program_kinds = (IREE_PROGRAMS,)
    # The Vulkan devices expectations/iree-vulkan.toml names (``devices = [...]``), read from the
    # recorded ``vulkan-device``: a GPU driver's numerics are its own (the H200's driver flushes f32
    # subnormals, lavapipe keeps them). Only devices a run has been seen on; the name stays as reported.
    device_generations = (("nvidia h200", "NVIDIA H200"),)

    def availability(self) -> Optional[str]:
        reason = compiler.availability()
        if reason:
            return reason
        if run_module.tool_path() is None:
            return f"iree-run-module not found (iree-base-runtime): {compiler.PIP_HINT}"
        return vk.availability()

    def gpu_present(self) -> bool:
        """Whether the Vulkan device is a GPU (lavapipe is a CPU device): ``make gpu`` asks."""
        return vk.availability() is None and vk.probe().device_type != "VK_PHYSICAL_DEVICE_TYPE_CPU"

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(IREE_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        reason = unsupported_case(case) or baseline_only(case, self.name)
        if reason:
            return reason
        if vk.availability() is None:
            for program in plan_for(case):
                lacking = cannot_hold(program.mlir, vk.probe())
                if lacking:
                    return NotApplicable(lacking)
        return None

    def versions(self) -> dict[str, str]:
        out = {"iree-compiler": compiler.compiler_version(), "iree-runtime": run_module.runtime_version()}
        try:
            dev = vk.probe()
        except vk.NoDevice as exc:
            return {**out, "vulkan-device": f"none ({exc})"}
        return {**out, "vulkan-device": dev.name, "vulkan-driver": dev.driver,
                "vulkan-api": ".".join(map(str, dev.api_version)), "vulkan-device-type": dev.device_type}

    def _source(self, program: Program) -> tuple[str, tuple[str, ...]]:
        return with_target(program.mlir, vk.probe()), FLAGS + tuple(getattr(program, "compile_flags", ()))

    def compile(self, case: Case, program: Program) -> compiler.Compiled:
        return compiler.compile_cached(*self._source(program), name=f"{case.op}/{case.id}/{program.entry}")

    def ahead(self, cases):
        """Each program compiled ahead in a module of its own: every run is an ``iree-run-module``
        process that creates all of its module's executables (the device compiles their SPIR-V)
        when it loads, so a batch's module would make each run pay for every program in it."""
        from accel_regress.toolchains.iree import ahead
        return ahead.case_jobs(cases, self._source, batch=1, first_batch=1)

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        def one(program: Program, args: dict) -> dict:
            compiled = self.compile(case, program)
            return run_module.run(compiled.vmfb, "vulkan", compiled.symbol(program.entry), [args[n] for n in program.inputs],
                                  program.outputs, run_module.result_types(program.mlir, program.entry),
                                  self.timeout(case), f"{case.id} {program.entry}", env=shader_cache.child_env())
        return run_plan(plan_for(case), inputs, one)
