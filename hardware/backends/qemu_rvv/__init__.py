"""``qemu-rvv``: IREE compiles the case's program for riscv64 (a flag variant of seed 004) as a
static library, our C harness (harness/) calls every workgroup of every dispatch, clang-16 links
it statically and qemu-riscv64-static runs it at the case's VLEN.

The variant and VLEN come from ``case.params['variant']`` / ``['vlen']`` (defaults: ``v`` at
VLEN 256); a VLEN below what the variant's features assume (``+zvl512b``) is refused as
unsupported, never run. The ``novec`` build runs on a CPU without the V extension, so a stray
vector instruction would be SIGILL rather than pass unnoticed.

Outcomes: outputs parsed from the harness's ``[out]`` lines; HANG when qemu outlives the bound
(the last ``[dn]`` without ``[dc]`` names the dispatch); CRASH on a signal or an ``[err]``
line, with qemu's own words; COMPILE_ERROR from iree-compile or the harness build. Every
result carries the codegen scan of its dispatches (hardware/backends/qemu_rvv/scan.py) in
``last_report`` and in the verdict's detail.
"""
from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import Crash, Hang, NotApplicable, Unsupported
from accel_regress.util import children
from accel_regress.toolchains.iree import compiler, riscv
from accel_regress.toolchains.iree.program import (
    IREE_PROGRAMS,
    plan_for,
    riscv_target,
    run_plan,
    unsupported_case,
)
from accel_regress.backends.qemu_rvv import build, protocol

QEMU = "qemu-riscv64-static"
# qemu 7.2's translator aborts on vfcvt.rtz.* (probes/vfcvt_rtz.c); the words it dies with:
QEMU_RTZ_ASSERT = "decode_save_opc: Assertion"


def qemu_cpu(variant: str, vlen: int) -> str:
    v = riscv.variant(variant)
    if not v.vector:
        return "rv64,v=false"
    return f"rv64,v=true,vlen={vlen},elen=64,vext_spec=v1.0"


def _tail(text: str, n: int = 20) -> str:
    lines = [ln if not ln.startswith("[out]") else ln[:100] + "..." for ln in text.splitlines()]
    return "\n".join(lines[-n:])


class QemuRvvBackend(Backend):
    name = "qemu-rvv"
    kind = "simulator"
    description = "IREE riscv64 static library + our C harness under qemu-riscv64 (RVV, VLEN 128/256/512)"
    default_timeout_s = 120.0
    program_kinds = (IREE_PROGRAMS,)
    package_files = ("accel_regress.backends.qemu_rvv:harness/harness.c", "accel_regress.backends.qemu_rvv:harness/abi.h")

    def __init__(self):
        self.last_report: dict = {}
        self._scanned: set = set()

    def availability(self) -> Optional[str]:
        reason = compiler.availability()
        if reason:
            return reason
        if shutil.which(QEMU) is None:
            return f"{QEMU} not found: {build.APT_HINT}"
        return build.toolchain_missing()

    def _variant_vlen(self, case: Case) -> tuple[str, int]:
        variant, vlen = riscv_target(case)
        return riscv.canonical(variant or riscv.BASELINE_VARIANT), int(vlen or riscv.BASELINE_VLEN)

    def supports_op(self, op: str) -> Optional[str]:
        return registry.missing_program(IREE_PROGRAMS, op)

    def supports(self, case: Case) -> Optional[str]:
        reason = unsupported_case(case)
        if reason:
            return reason
        cannot = getattr(registry.module_for(IREE_PROGRAMS, case.op), "HARNESS_CANNOT_RUN", None)
        if cannot:
            return NotApplicable(f"qemu-rvv runs programs through its harness: {cannot}")
        variant, vlen = self._variant_vlen(case)
        if variant not in riscv.VARIANTS:
            return f"unknown RISC-V variant {variant!r} (known: {', '.join(riscv.VARIANTS)})"
        return riscv.check_vlen(variant, vlen)

    def ahead(self, cases):
        """Every program's riscv64 compile, batched across cases as on the host (each case's
        codegen scan reads only its own program's dispatches: build.scan_of), then the harness
        of each static library: one link serves every program of a batch and every case of each,
        a plan's later steps too."""
        from accel_regress.toolchains.iree import ahead
        requests = []
        for i, case in enumerate(cases):
            variant, _ = self._variant_vlen(case)
            requests += [ahead.Request(i, p.mlir, build.riscv_flags(p, variant), "host.mlir", f"{case.op}/{case.id}",
                                       then=(self._link_job(variant, p),))
                         for p in plan_for(case)]
        return ahead.jobs(requests, shared_files=True)

    @staticmethod
    def _link_job(variant: str, program):
        def link():
            build.library_harness(build.compile_riscv(program, variant), uart_outputs=True, rdcycle=True)
        return link

    def versions(self) -> dict[str, str]:
        return {"iree-compiler": compiler.compiler_version(), "qemu": build.tool_version(QEMU), "clang": build.clang_version()}

    def timeout(self, case: Case) -> float:
        # A plan (fused_decode's steps) builds and runs one harness per program.
        return self.default_timeout_s + 30.0 * (len(plan_for(case)) - 1)

    def run(self, case: Case, inputs: Mapping[str, np.ndarray], *, timeout_s: Optional[float] = None) -> dict[str, np.ndarray]:
        variant, vlen = self._variant_vlen(case)
        reason = riscv.check_vlen(variant, vlen)
        if reason:
            raise Unsupported(reason)
        self.last_report = {"variant": variant, "vlen": vlen, "codegen_scan": [], "cycles": 0, "dispatches": []}
        self._scanned = set()      # (entry, dispatch): a dispatch the plan's steps share is counted once
        plan = plan_for(case)
        if len(plan) > 1:
            build.compile_plan(plan, variant, name=f"{case.op}/{case.id}")
        return run_plan(plan, inputs,
                        lambda program, args: self._run_program(case, program, args, variant, vlen, timeout_s))

    def _run_program(self, case: Case, program, inputs: Mapping[str, np.ndarray], variant: str, vlen: int,
                     timeout_s: Optional[float]) -> dict[str, np.ndarray]:
        compiled = build.compile_riscv(program, variant, name=f"{case.op}/{case.id}/{program.entry}")
        exe = build.library_harness(compiled, uart_outputs=True, rdcycle=True)
        report = self.last_report
        report["harness"] = str(exe)
        report["codegen_scan"] += [d for d in build.scan_of(compiled, program)
                                   if (compiled.dir, d["function"]) not in self._scanned]
        self._scanned.update((compiled.dir, d["function"]) for d in report["codegen_scan"])
        with tempfile.TemporaryDirectory(prefix="qemu-rvv-") as tmp:
            data = build.write_case(compiled, program, inputs, Path(tmp) / "case.bin")
            return self._run_exe(case, program, exe, data, variant, vlen, timeout_s)

    def _run_exe(self, case: Case, program, exe, data, variant: str, vlen: int,
                 timeout_s: Optional[float]) -> dict[str, np.ndarray]:
        report = self.last_report
        argv = [QEMU, "-cpu", qemu_cpu(variant, vlen), str(exe), str(data)]
        # Below the isolation layer's bound for the whole run, so that a hang ends here, with the
        # open [dn] named, rather than as a killed worker.
        bound = timeout_s or max(5.0, self.default_timeout_s - 15.0)
        start = time.perf_counter()
        try:
            # Killed with the worker that started it (a hung run's worker is killed by the isolation layer).
            proc = subprocess.run(children.dying_with_parent(argv), capture_output=True, timeout=bound)
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace")
            t = protocol.parse(out)
            raise Hang(f"qemu-riscv64 did not finish {program.entry} within {bound:.0f} s: {t.where()}", stage="run",
                       detail={**report, "argv": " ".join(argv), "stdout_tail": _tail(out)}) from None
        report["run_s"] = round(report.get("run_s", 0.0) + time.perf_counter() - start, 4)
        out = proc.stdout.decode(errors="replace")
        err = proc.stderr.decode(errors="replace")
        try:
            t = protocol.parse(out)
        except protocol.ProtocolError as exc:
            raise Crash(f"harness output unreadable: {exc}", detail={**report, "stdout_tail": _tail(out)}) from None
        report["cycles"] += t.cycles or 0
        report["dispatches"] += [{"d": d, "cyc": c} for d, c in t.completed]
        detail = {**report, "argv": " ".join(argv), "stdout_tail": _tail(out), "stderr": err[-4000:]}
        if proc.returncode != 0 or not t.done:
            if proc.returncode < 0:
                sig = signal.Signals(-proc.returncode).name
                what = f"qemu-riscv64 died with {sig} at {t.where()}"
            else:
                what = f"harness exited {proc.returncode} at {t.where()}"
            if len(plan_for(case)) > 1:
                what = f"{program.entry}: {what}"
            if t.errors:
                what += f": {t.errors[-1]}"
            if QEMU_RTZ_ASSERT in err:
                what += (" -- qemu's translator aborted (decode_save_opc assertion): qemu 7.2 cannot translate "
                         "vfcvt.rtz.* (probe hardware/backends/qemu_rvv/probes/vfcvt_rtz.c); a qemu defect, not the program")
                detail["qemu_defect"] = "qemu 7.2 decode_save_opc assertion on vfcvt.rtz.x.f.v (gitlab qemu #1441)"
            raise Crash(what, detail=detail)
        missing = [n for n in program.outputs if n not in t.outputs]
        if missing:
            raise Crash(f"harness printed no output {', '.join(missing)}", detail=detail)
        return dict(t.outputs)


def case_outputs(case: Case) -> tuple[str, ...]:
    return tuple(n for program in plan_for(case) for n in program.outputs)
