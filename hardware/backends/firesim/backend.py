"""``firesim``: one FireSim (or metasimulation) workload per micro-test; the verdict comes from its logs.

Per case: build the boot binary -- the qemu-rvv harness built bare-metal
(``build_harness(..., uart_outputs=True, target="baremetal")``: linked at 0x80000000, console and
exit through HTIF, hardware/backends/qemu_rvv/baremetal.py) from the run's inputs -- under a name of its own,
write ``workloads/<name>.json``, derive a runtime config from the user's (this workload, a one-node
topology, ``+max-cycles``, and a ``+fesvr-step-size`` that lets the console fit the cycle budget:
hardware/backends/firesim/console.py), run ``firesim infrasetup`` (always: only it copies the boot binary to
the run farm's sim slot) and ``firesim runworkload``, each under a wall-clock bound, find the newest
results folder, classify its uartlog (with metasim_stderr.out and heartbeat.csv), and read the
outputs back from the ``[out]`` lines.

At the wall-clock bound the simulation is stopped the way FireSim stops it: ``firesim kill`` while
runworkload is still polling, so that runworkload sees the slot end and copies the (partial) uartlog
and heartbeat.csv back (run_farm_deploy_managers.py:607-619, polled every 10 s,
firesim_topology_with_passes.py:1159); runworkload is stopped only if it has not returned by then.

Log verdict -> suite verdict:

=========  ==================================================================================
pass       outputs from the ``[out]`` lines (the suite compares them); a pass without ``[done]``
           (stopped after a bench iteration but before the outputs) is ``Incomplete``
warmup     ``Incomplete`` (FAIL at stage run): stopped by the bound while still advancing
progress   ``Incomplete`` (FAIL at stage run): likewise. Never HANG: a run still making progress
           when it was stopped is not a hang (issue 5); raise ACCEL_FIRESIM_MAX_CYCLES
stopped    ``Incomplete``: stopped inside a dispatch with no evidence of a hang (issue 13: seed 004's
           mistake); lower ACCEL_FIRESIM_MAX_CYCLES below what the wall clock allows, so that the
           driver's own bound ends the run
hang       ``accel_regress.Hang``: with the bound's evidence (cycle bound, cycle counts) the dispatch it
           stopped in; with FireSim's deadlock line, a hang of the simulator, said so
early      ``accel_regress.Crash`` with the driver's code (died or stopped before the first dispatch)
fail       ``accel_regress.Crash`` with the driver's code (``*** FAILED *** (code = K)``)
=========  ==================================================================================

Nothing coming back at all after the wall-clock bound is ``Incomplete`` too: no evidence either
way. Missing results, unreadable logs and bad ``[out]`` lines are CRASH with the file and what is
wrong.
"""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core.backend import Backend
from accel_regress.core.errors import Crash, Hang, Unsupported, VerdictError
from accel_regress.backends.firesim import config as fs_config
from accel_regress.backends.firesim import bootbin, console, manager, results, uart, workload
from accel_regress.backends.firesim import classify
from accel_regress.backends.firesim.classify import Classification, describe_dispatch

OPS = ("f32_reduction",)
KILL_S = 300.0          # `firesim kill` itself
MARGIN_S = KILL_S + 60.0    # plus the copy-back wait (Settings.copyback_s)

Builder = Callable[..., Path]   # build_harness(case, variant, out_dir, uart_outputs=True) -> Path


class BareMetalBuilder:
    """The default builder: the qemu-rvv harness as a bare-metal image FireSim can boot, built
    from the inputs the run was given (an injected builder gets none and makes its own)."""

    takes_inputs = True

    def __init__(self, build_harness: Callable[..., Path], toolchain_missing: Callable[[str], Optional[str]]):
        self._build, self._missing = build_harness, toolchain_missing

    def missing(self) -> Optional[str]:
        return self._missing("baremetal")

    def __call__(self, case: Case, variant: str, out_dir: Path, uart_outputs: bool = True, *,
                 inputs: Optional[Mapping[str, np.ndarray]] = None) -> Path:
        # rdcycle: M-mode may always read the cycle CSR, so each [dc] line carries the dispatch's
        # cycles (the seed's table reports them; the Linux build leaves it off for user mode)
        return self._build(case, variant, out_dir, uart_outputs, inputs=inputs, rdcycle=True, target="baremetal")

    @staticmethod
    def console_chars(case: Case, variant: str) -> int:
        """An upper bound on what the image prints: its schedule's dispatches and outputs (the same
        compile the build uses, so a cache hit)."""
        from accel_regress.toolchains.iree import riscv
        from accel_regress.toolchains.iree.program import program_for
        from accel_regress.backends.qemu_rvv import build, schedule
        program = program_for(case)
        compiled = build.compile_riscv(program, riscv.canonical(variant), name=f"{case.op}/{case.id}")
        # The entry may be a batch (compiled ahead with other programs): the program's own function.
        sched = schedule.parse_file(compiled.output, compiled.symbol(program.entry))
        outputs = [(name, o.dtype, "x".join(map(str, o.shape)), o.length)
                   for name, o in zip(program.outputs, sched.outputs)]
        return console.harness_chars(outputs, len(sched.dispatches))


class Incomplete(VerdictError):
    """Stopped by the cycle or wall-clock bound while still making progress: FAIL at stage run, not HANG."""
    verdict = "FAIL"


def _default_builder() -> tuple[Optional[Builder], Optional[str]]:
    try:
        from accel_regress.backends.qemu_rvv.build import build_harness, toolchain_missing
    except Exception as exc:   # the qemu-rvv backend owns the harness; without it there is no boot binary
        return None, (f"the boot binary is built by accel_regress.backends.qemu_rvv.build.build_harness, which cannot be "
                      f"imported ({type(exc).__name__}: {exc})")
    builder = BareMetalBuilder(build_harness, toolchain_missing)
    reason = builder.missing()
    if reason:
        return None, f"the boot binary (the bare-metal harness) cannot be built here: {reason}"
    return builder, None


def _yaml():
    try:
        import yaml
    except ImportError:
        return None
    return yaml


class FireSimBackend(Backend):
    name = "firesim"
    kind = "fpga-simulation"
    description = "FireSim / metasimulation: one workload per micro-test, verdict from uartlog"
    device_resource = "firesim"
    package_files = ("accel_regress.backends.qemu_rvv:harness/harness.c", "accel_regress.backends.qemu_rvv:harness/abi.h",
                     "accel_regress.backends.qemu_rvv:baremetal_rt/crt0.S", "accel_regress.backends.qemu_rvv:baremetal_rt/htif.c",
                     "accel_regress.backends.qemu_rvv:baremetal_rt/link.ld")

    def __init__(self, builder: Optional[Builder] = None, env: Optional[Mapping[str, str]] = None):
        self._builder = builder
        self._env = env
        # what the last run() saw, for tables such as repros/f32_reduction_hang.py's: log_verdict
        # (pass/warmup/progress/hang/early/fail), cycles (sum of [dc] cyc=), driver, results, ...
        self.last_report: dict = {}

    # -- configuration --------------------------------------------------------------------------
    def _environ(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    def settings(self) -> fs_config.Settings:
        return fs_config.load(self._environ())

    def builder(self) -> tuple[Optional[Builder], Optional[str]]:
        return (self._builder, None) if self._builder is not None else _default_builder()

    def availability(self) -> Optional[str]:
        try:
            self.settings()
        except fs_config.ConfigError as exc:
            return str(exc)
        if not self._environ().get("FIRESIM_SOURCED"):
            return ("FIRESIM_SOURCED is not set: the firesim manager refuses to run without it "
                    "(source firesim/sourceme-manager.sh first)")
        if _yaml() is None:
            return "PyYAML is missing (the runtime config is YAML): the extra accel-regress[firesim], or pip install pyyaml"
        _, reason = self.builder()
        return reason

    def supports_op(self, op: str) -> Optional[str]:
        if op not in OPS:
            return f"firesim runs the seed-004 micro-tests only ({', '.join(OPS)}), not {op!r}"
        return None

    def timeout(self, case: Case) -> float:
        try:
            s = self.settings()
        except fs_config.ConfigError:
            return 1800.0 + 900.0 + 120.0 + MARGIN_S
        return s.wall_s + s.infrasetup_s + s.copyback_s + MARGIN_S

    def versions(self) -> dict[str, str]:
        out = {}
        try:
            s = self.settings()
        except fs_config.ConfigError:
            return out
        try:
            described = subprocess.run(["git", "-C", str(s.deploy_dir), "describe", "--always", "--dirty", "--tags"],
                                       capture_output=True, text=True, timeout=10)
            if described.returncode == 0:
                out["firesim"] = described.stdout.strip()
                out["firesim_era"] = driver_era(out["firesim"])
        except (OSError, subprocess.TimeoutExpired):
            pass
        yaml = _yaml()
        if yaml is not None:
            try:
                base = yaml.safe_load(s.runtime_config.read_text()) or {}
                meta = bool(base.get("metasimulation", {}).get("metasimulation_enabled"))
                if s.metasimulation is not None:
                    meta = s.metasimulation
                out["firesim_mode"] = (f"metasimulation ({base['metasimulation'].get('metasimulation_host_simulator')})"
                                       if meta else "fpga")
                out["firesim_hw_config"] = str(base.get("target_config", {}).get("default_hw_config"))
            except Exception:
                pass
        out["firesim_max_cycles"] = str(s.max_cycles)
        return out

    # -- one case -------------------------------------------------------------------------------
    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            s = self.settings()
        except fs_config.ConfigError as exc:
            raise Unsupported(str(exc)) from None
        build, reason = self.builder()
        if build is None:
            raise Unsupported(reason)
        yaml = _yaml()
        if yaml is None:
            raise Unsupported("PyYAML is missing (the runtime config is YAML): the extra accel-regress[firesim], or pip install pyyaml")
        variant = case.params.get("variant", "+v")
        count = getattr(build, "console_chars", None)      # an injected builder may not know
        chars = count(case, variant) if callable(count) else None
        try:
            step = console.step_size(chars, s.max_cycles)
        except console.ConsoleTooLong as exc:
            raise Unsupported(str(exc)) from None
        work = Path(tempfile.mkdtemp(prefix="accel-firesim-"))
        name = workload.safe_name(f"accel-{case.op}-{case.id}", 60) + "-" + secrets.token_hex(4)
        wl = None
        self.last_report = {"case": case.id, "variant": variant, "console_chars": chars, "fesvr_step_size": step}
        try:
            extra = {"inputs": inputs} if getattr(build, "takes_inputs", False) else {}
            boot = Path(build(case, variant, work / "build", uart_outputs=True, **extra))
            if not boot.is_file():
                raise Crash(f"build_harness returned {boot}, which is not a file", stage="build")
            reason = bootbin.unbootable_reason(boot)
            if reason is not None:
                raise Unsupported(reason)
            wl = workload.build(s.deploy_dir, name, boot, s.rootfs)
            self.last_report.update(slot_bootbinary=wl.slot_boot_name, boot_sha256=wl.boot_sha256)
            cfg_path = work / "config_runtime.yaml"
            try:
                base = yaml.safe_load(s.runtime_config.read_text())
                derived = workload.runtime_config(base if isinstance(base, dict) else {}, wl.file_name,
                                                  s.max_cycles, s.metasimulation, step)
            except (OSError, ValueError, yaml.YAMLError) as exc:
                raise Crash(f"{s.runtime_config}: cannot use this runtime config: {exc}", stage="build") from None
            workload.write_atomic(cfg_path, yaml.safe_dump(derived, sort_keys=False))
            metasim = bool(derived["metasimulation"].get("metasimulation_enabled"))
            return self._run_workload(s, wl, cfg_path, work / "manager.log", step, metasim)
        finally:
            if wl is not None and not s.keep:
                wl.remove()
            shutil.rmtree(work, ignore_errors=True)

    def _manager(self, s: fs_config.Settings, task: str, cfg: Path, bound: float, log: Path) -> manager.ManagerRun:
        return manager.run(s.executable, task, cfg, cwd=s.deploy_dir, bound_s=bound, log=log, env=self._env)

    def _runworkload(self, s: fs_config.Settings, cfg: Path, log: Path, detail: dict) -> manager.ManagerRun:
        """runworkload under the wall-clock bound; at the bound, kill the simulation first and let
        runworkload copy the logs back, then stop runworkload if it still has not returned."""
        task = manager.Started(s.executable, "runworkload", cfg, cwd=s.deploy_dir, log=log, env=self._env,
                               note=f", bound {s.wall_s:.0f} s")
        if task.wait(s.wall_s):
            return task.result(False)
        killed = self._manager(s, "kill", cfg, KILL_S, log)
        detail["kill"] = "timed out" if killed.timed_out else f"exit {killed.returncode}"
        copied = task.wait(s.copyback_s)
        detail["runworkload_after_kill"] = (f"returned {task.proc.returncode}" if copied else
                                            f"still running {s.copyback_s:.0f} s after the kill: stopped")
        if not copied:
            task.stop()
        return task.result(True)

    def _run_workload(self, s: fs_config.Settings, wl: workload.Workload, cfg: Path, log: Path,
                      step: int, metasim: bool) -> dict[str, np.ndarray]:
        import time
        started = time.time()
        setup = self._manager(s, "infrasetup", cfg, s.infrasetup_s, log)
        if setup.timed_out or setup.returncode != 0:
            what = f"did not finish within {s.infrasetup_s:.0f} s" if setup.timed_out else f"exited {setup.returncode}"
            raise Crash(f"firesim infrasetup {what}; nothing was simulated",
                        detail={"manager_log": setup.tail(), "workload": wl.name})
        detail = self.last_report
        detail.update(workload=wl.name, max_cycles=s.max_cycles, wall_s=s.wall_s)
        runwl = self._runworkload(s, cfg, log, detail)
        detail["manager_seconds"] = round(runwl.seconds, 1)
        try:
            folder = results.newest_folder(s.deploy_dir, wl.name, not_before=started)
            logs = results.job_logs(folder, wl.job)
        except results.ResultsError as exc:
            detail["manager_log"] = runwl.tail()
            if runwl.timed_out:
                raise Incomplete(f"firesim runworkload did not finish within the wall-clock bound of {s.wall_s:.0f} s "
                                 f"and no uartlog came back after `firesim kill` ({exc}): no evidence of a hang "
                                 f"either way; lower ACCEL_FIRESIM_MAX_CYCLES so that the driver stops the run "
                                 f"itself", detail=detail) from None
            raise Crash(f"firesim runworkload exited {runwl.returncode}: {exc}", detail=detail) from None
        detail["results"] = str(logs.folder)
        try:
            beat = classify.read_heartbeat(logs.heartbeat) if logs.heartbeat else None
            # the slot keeps files between runs: a metasim_stderr.out there is this run's only in metasimulation
            c = classify.classify_files(logs.uartlog, logs.stderr if metasim else None, logs.heartbeat,
                                        cycles_per_char=console.worst_cycles_per_char(step))
        except uart.LogError as exc:
            raise Crash(str(exc), detail=detail) from None
        if beat is not None:
            detail["heartbeat"] = beat.summary()
        return self._verdict(c, logs, detail, runwl)

    def _verdict(self, c: Classification, logs: results.JobLogs, detail: dict,
                 runwl: manager.ManagerRun) -> dict[str, np.ndarray]:
        detail.update(log_verdict=c.verdict, log_detail=c.detail, cycles=c.cycles,
                      uartlog_tail=_tail(logs.uartlog))
        if c.driver is not None:
            detail["driver"] = c.driver.text
        if c.deadlock is not None:
            detail["deadlock"] = c.deadlock.text
        bound = ("+max-cycles" if c.driver is not None and c.driver.kind == "timed_out"
                 else "the wall-clock bound" if runwl.timed_out else "an unknown cause (no driver end line)")
        if c.verdict == "pass" and c.finished:
            try:
                out = uart.outputs(c.markers, str(logs.uartlog))
            except uart.LogError as exc:
                raise Crash(str(exc), detail=detail) from None
            if not out:
                raise Crash(f"{logs.uartlog}: the harness printed [done] but no [out] line", detail=detail)
            return out
        if c.verdict == "pass" and c.driver is not None and c.driver.kind == "passed":
            raise Crash(f"{logs.uartlog}: the target exited 0 but the harness never printed [done] "
                        f"(its outputs are incomplete): {c.detail}", detail=detail)
        if c.verdict in ("pass", "warmup", "progress"):
            raise Incomplete(f"stopped by {bound} while still making progress ({c.verdict}: {c.detail}); "
                             f"not a hang; raise ACCEL_FIRESIM_MAX_CYCLES / ACCEL_FIRESIM_WALL_S", detail=detail)
        if c.verdict == "stopped":
            raise Incomplete(f"stopped by {bound} inside a dispatch with no evidence of a hang ({c.detail}); "
                             f"not judged a hang: lower ACCEL_FIRESIM_MAX_CYCLES so that the driver's cycle bound "
                             f"ends the run within ACCEL_FIRESIM_WALL_S", detail=detail)
        if c.verdict == "hang":
            detail["hang_evidence"] = c.hang_evidence
            if c.hang_evidence == "deadlock":
                detail["hang_of"] = "simulator"
                raise Hang(f"FireSim simulator deadlock, not a hang shown in the design: {c.detail}", detail=detail)
            detail["hang_of"] = "target"
            raise Hang(f"hang in dispatch {describe_dispatch(c.last_dispatch)}: {c.detail}", detail=detail)
        code = c.driver_code
        detail["code"] = code
        where = "before the first dispatch" if c.verdict == "early" else f"in or after {describe_dispatch(c.last_dispatch)}"
        raise Crash(f"target {'exited with code ' + str(code) if code is not None else 'stopped'} {where} "
                    f"({c.verdict}: {c.detail})", detail=detail)


def driver_era(described: str) -> str:
    """Which cycle-bound line the driver of this FireSim release prints (all are read): >= 1.16
    ``simulation timed out`` (c890239a9), 1.13-1.15 ``+max_cycles specified timeout`` (351054c97),
    older ``(timeout)``."""
    import re
    m = re.match(r"v?(\d+)\.(\d+)", described)
    if not m:
        return f"unknown ({described!r} is not a release tag)"
    version = (int(m.group(1)), int(m.group(2)))
    line = ("simulation timed out" if version >= (1, 16) else
            "+max_cycles specified timeout" if version >= (1, 13) else "(timeout)")
    return f"FireSim {m.group(1)}.{m.group(2)}: driver prints '*** FAILED *** {line} after N cycles'"


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-chars:].decode("utf-8", errors="replace")
