"""``npu``: AMD NPUs (Phoenix, Strix, Strix Halo, Krackan) through pyxrt, with or without IRON.

Two ways to run a case, chosen per case ($ACCEL_NPU_MODE = auto | iron | artifacts, default auto):
- iron: IRON is importable and has an adapter for the operator (hardware/backends/npu/iron_runner.py);
- artifacts: a manifest entry names the prebuilt xclbin, instructions and argument layout
  (hardware/backends/npu/manifest.py, hardware/backends/npu/xrt_runner.py).
"""
from __future__ import annotations

import importlib
import os
import platform
import warnings
from typing import Mapping, Optional

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core import registry
from accel_regress.core.backend import Backend
from accel_regress.core.errors import Crash, NotApplicable, Unsupported
from accel_regress.backends.npu import device, fused, iron_runner, manifest, xrt_runner

MODE_ENV = "ACCEL_NPU_MODE"
MODES = ("auto", "iron", "artifacts")

# Bounds. The slowest NPU here (Phoenix, ~5 TMAC/s bf16 peak) is assumed to reach at least 1% of
# peak on any operator worth testing: 50 GMAC/s. A run gets 2 s of launch slack plus 4x that
# estimate; a case (outer, process-level bound) gets its runs plus host set-up, and in IRON mode
# the compilation of its xclbin (minutes with Peano and aiecc on a CI runner).
FLOOR_MACS_PER_S = 5e10
RUN_SLACK_MS = 2000
RUN_FACTOR = 4
DEFAULT_RUN_MS = 10000
HOST_SETUP_S = 30.0
IRON_COMPILE_S = 900.0


class DriverTimeoutWarning(UserWarning):
    """A case may legitimately run longer than the amdxdna driver lets a command run."""


def _macs(case: Case) -> Optional[int]:
    p = case.params
    if all(k in p for k in ("M", "K", "N")):
        return int(p["M"]) * int(p["K"]) * int(p["N"])
    return None


class NpuBackend(Backend):
    name = "npu"
    kind = "hardware"
    description = "AMD NPU (npu1 Phoenix, npu4 Strix, npu5 Strix Halo, npu6 Krackan) via pyxrt; IRON or prebuilt xclbins"
    device_resource = device.RESOURCE      # --devices locks one NPU per pytest process
    # NPU generations as XRT names them (xrt_info_device.name), and the driver's ids
    device_generations = (("krackan", "Krackan"), ("strix halo", "Strix Halo"), ("strix", "Strix"),
                          ("phoenix", "Phoenix"), ("hawk point", "Hawk Point"))
    device_ids = {"npu1": "Phoenix", "npu4": "Strix", "npu5": "Strix Halo", "npu6": "Krackan"}

    def __init__(self):
        self._described: dict[int, dict] = {}
        self._warned_driver_timeout = False

    # --- availability ------------------------------------------------------------------------
    def availability(self) -> Optional[str]:
        try:
            index = device.device_index()
        except device.NotChosen:
            index = None          # the run opens the NPU this process is given, and says if it fails
        try:
            importlib.import_module("pyxrt")
        except Exception as exc:
            node = device.device_node(index or 0)
            where = f"{node} exists" if node.exists() else f"and there is no device node {node}"
            return (f"pyxrt is not importable ({type(exc).__name__}: {exc}): XRT's Python bindings ship "
                    f"with XRT, not PyPI; install XRT and the amdxdna driver (xdna-driver) and run "
                    f"`source /opt/xilinx/xrt/setup.sh`; {where}")
        return None if index is None else device.open_error(index)

    def mode(self) -> str:
        mode = os.environ.get(MODE_ENV, "auto").strip() or "auto"
        if mode not in MODES:
            raise Unsupported(f"${MODE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
        return mode

    def _choose(self, case: Case) -> tuple[Optional[str], str]:
        """('iron' | 'artifacts' | None, why)."""
        mode = self.mode()
        reasons = []
        if mode in ("auto", "iron"):
            if not iron_runner.importable():
                reasons.append("IRON is not importable (install IRON and mlir-aie in this environment)")
            else:
                why = iron_runner.supports(case)
                if why is None:
                    return "iron", ""
                reasons.append(f"IRON: {why}")
        if mode in ("auto", "artifacts"):
            path = manifest.location()
            if path is None:
                reasons.append(f"no prebuilt artifacts (${manifest.ENV} is not set)")
            else:
                try:
                    entry = manifest.find(case)
                except manifest.ManifestError:
                    return "artifacts", ""          # run() reports the broken manifest as CRASH
                if entry is not None:
                    return "artifacts", ""
                reasons.append(f"{path} has no entry for {case.op}/{case.id}")
        return None, "; ".join(reasons)

    def supports_inputs(self, case: Case) -> Optional[str]:
        """A family whose cases declare the device's number format (IRON's bfp16 GEMM path: 8-bit
        block exponent, 8-bit mantissas, no inf, NaN or subnormals) says which input classes that
        format cannot hold: its golden module's ``format_excludes`` (core/contracts.py)."""
        excludes = getattr(registry.module_for("family", case.op), "format_excludes", None)
        if excludes is not None:
            why = excludes(case)
            return NotApplicable(why) if why else None
        why = fused.mask_excludes(case)
        if why:
            return NotApplicable(why)
        return super().supports_inputs(case)

    def supports(self, case: Case) -> Optional[str]:
        try:
            mode, why = self._choose(case)
        except Unsupported as exc:
            return str(exc)
        return None if mode else why

    # --- facts -------------------------------------------------------------------------------
    def versions(self) -> dict[str, str]:
        try:
            index = device.device_index()
        except device.NotChosen as exc:
            return {"python": platform.python_version(), "npu_device": f"not chosen yet ({exc})"}
        if index not in self._described:
            info = {"python": platform.python_version(), "npu_device_index": str(index)}
            try:
                info.update(device.describe(device.acquire(index)))
            except Exception as exc:
                info["npu_device_error"] = f"{type(exc).__name__}: {exc}"
            # How cases run here: expectations may differ between IRON's own operator (whose
            # Python code has seed 000's forward() bug) and prebuilt artifacts (which do not).
            info["npu_mode"] = os.environ.get(MODE_ENV, "auto").strip() or "auto"
            if manifest.location() is not None:
                info["npu_artifacts"] = str(manifest.location())
            if iron_runner.importable():
                try:
                    info["iron"] = iron_runner.version()
                    info["iron_aiegemm"] = iron_runner.revision()
                    info["iron_sequence"] = fused.describe()
                except Exception as exc:
                    info["iron"] = f"unknown ({type(exc).__name__})"
            self._described[index] = info
        return dict(self._described[index])

    def device_kind(self) -> Optional[str]:
        kind = self.versions().get("npu_device_kind", "")
        return kind if kind in device.KIND_NAMES else None

    def run_bound_ms(self, case: Case) -> int:
        """Bound for one kernel run (run.wait(timeout_ms)): from the manifest, else from the work."""
        entry = None
        try:
            entry = manifest.find(case)
        except manifest.ManifestError:
            pass
        if entry is not None and entry.wait_ms:
            return entry.wait_ms
        macs = (entry.macs if entry is not None and entry.macs else None) or _macs(case)
        if macs is None:
            return DEFAULT_RUN_MS
        parts = int(case.params.get("partition_N", 1) or 1)
        return int(RUN_SLACK_MS + RUN_FACTOR * 1000.0 * macs / parts / FLOOR_MACS_PER_S)

    def timeout(self, case: Case) -> float:
        self._check_driver_timeout(case)
        runs = int(case.params.get("partition_N", 1) or 1)
        total = HOST_SETUP_S + runs * self.run_bound_ms(case) / 1000.0
        try:
            mode, _ = self._choose(case)
        except Unsupported:
            mode = None
        if mode == "iron":
            total += IRON_COMPILE_S + 2 * runs * self.run_bound_ms(case) / 1000.0   # forward + runlist
        return total

    def _check_driver_timeout(self, case: Case) -> None:
        """Warn (once per process) when a kernel run may take longer than the amdxdna driver's own
        timeout: such a run, healthy or not, is ended by the driver and reported as HANG."""
        limit = device.driver_timeout_s()
        bound_ms = self.run_bound_ms(case)
        if self._warned_driver_timeout or not limit or bound_ms <= limit * 1000:
            return
        self._warned_driver_timeout = True
        warnings.warn(DriverTimeoutWarning(
            f"npu: {case.id} allows a kernel run {bound_ms / 1000:.1f} s, longer than the amdxdna driver's "
            f"timeout_in_sec={limit}: a run that long is ended by the driver (reported as HANG, naming the driver); "
            f"raise /sys/module/amdxdna/parameters/timeout_in_sec (0 turns the watchdog off) for such cases"),
            stacklevel=2)

    # --- running -----------------------------------------------------------------------------
    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        mode, why = self._choose(case)
        if mode is None:
            raise Unsupported(why)
        self._check_device(case)
        try:
            if mode == "iron":
                outputs, _ = iron_runner.run(case, inputs)
            else:
                outputs, _ = xrt_runner.run(manifest.find(case), inputs, self.run_bound_ms(case), self.device_kind())
        except manifest.ManifestError as exc:
            raise Crash(str(exc), stage="build", detail={"manifest": str(manifest.location())}) from None
        return outputs

    def _check_device(self, case: Case) -> None:
        """A manifest entry may say which device generations its binaries are for."""
        try:
            entry = manifest.find(case)
        except manifest.ManifestError:
            return
        kinds = entry.device_kinds if entry is not None else None
        if kinds:
            kind = self.device_kind()
            if kind not in kinds:
                raise Unsupported(f"the artifacts for {case.id} are built for {', '.join(kinds)}; "
                                  f"this NPU is {kind or 'of unknown kind'}")

    def reset(self) -> None:
        """After a HANG: drop contexts, kernels and IRON's device manager, then reopen the device."""
        xrt_runner.forget()
        iron_runner.reset()
        device.release()
        self._described.clear()
        try:
            device.acquire()
        except Exception:
            pass            # the next run's acquire reports why the device did not come back
