"""The interface every backend implements. One backend per folder under hardware/backends/, registered in the
``accel_regress.backends`` entry-point group (hardware/core/registry.py)."""
from __future__ import annotations

from importlib import resources
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from accel_regress.golden.case import Case
from accel_regress.core.errors import NotApplicable
from accel_regress.golden.inputs import CLASSES, class_of


class Backend:
    name: str = ""
    kind: str = ""            # emulator | compiler | simulator | hardware | fpga-simulation
    description: str = ""
    default_timeout_s: float = 120.0
    device_resource: Optional[str] = None   # hardware backends: name of the device pool they lock
    # How the isolated worker's memory is bounded while this backend runs (core/isolation/bounds.py
    # MEMORY_BOUNDS): "address-space" (RLIMIT_AS at --worker-memory), "device" (the host address
    # space is left open: a GPU driver reserves large virtual ranges at start-up, and the device's
    # allocator bounds what a case holds), "cgroup" (memory.max of the worker's cgroup), "none".
    memory_bound: str = "address-space"
    # Non-Python files the backend reads at run time, as "package:relative/path" (package data of
    # the wheel). One missing is a set-up error of the backend naming the file, never a CRASH.
    package_files: tuple[str, ...] = ()
    # The device generations a backend's device facts may name, as merge, gate and expectations
    # read them (accel_regress.results.keys): (substring, name) pairs, and exact ids -> name.
    device_generations: tuple[tuple[str, str], ...] = ()
    device_ids: dict[str, str] = {}
    # The kinds of per-family program it reads (accel_regress.core.contracts.ProgramKind): each one's
    # entry-point group and contract. Declared here, so the core lists no kind of program.
    program_kinds: tuple = ()
    # Backends whose known bugs (expectations/<name>.toml) are this one's too: a variant of their
    # kernels (torch-cpu capped at an older oneDNN ISA). Each entry's own conditions still decide.
    shares_expectations_of: tuple[str, ...] = ()

    def missing_files(self) -> list[str]:
        """The ``package_files`` not present in this installation, as paths."""
        missing = []
        for spec in self.package_files:
            package, _, rel = spec.partition(":")
            try:
                path = resources.files(package).joinpath(rel)
            except ModuleNotFoundError:
                missing.append(spec)
                continue
            if not path.is_file():
                missing.append(str(path))
        return missing

    def availability(self) -> Optional[str]:
        """None when usable here; otherwise what is missing and how to get it."""
        return None

    def compile_only(self) -> Optional[str]:
        """None when this backend's cases run here; otherwise why they only compile (a GPU
        backend without its GPU or driver). Such a backend is left out of the default selection
        and runs when named (``--hw``): its compile stage is exercised, its runs SKIP with this."""
        return None

    def supports_op(self, op: str) -> Optional[str]:
        """Why this backend can run no case of operator family ``op`` at all, or None (it may,
        case by case). Asked at collection, so such tests SKIP before any input is generated."""
        return None

    def supports(self, case: Case) -> Optional[str]:
        """None when this backend can run ``case``; otherwise why not."""
        return self.supports_op(case.op)

    # Input classes (golden/inputs.py) whose values this backend's data path can hold.
    input_classes: tuple = CLASSES

    def supports_inputs(self, case: Case) -> Optional[str]:
        """None when this backend's data path can hold the case's input class
        (``case.params['inputs']``: specials need inf and NaN, subnormal needs subnormals);
        otherwise why not, which the case reports as its SKIP."""
        cls = class_of(case.params)
        if cls not in self.input_classes:
            return NotApplicable(f"{self.name} runs the input classes {', '.join(self.input_classes)}, not {cls!r}")
        return None

    def versions(self) -> dict[str, str]:
        """Toolchain and device versions that go into every result."""
        return {}

    def timeout(self, case: Case) -> float:
        """Bound for one run of ``case`` in seconds (may grow with the problem size)."""
        return self.default_timeout_s

    def run(self, case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the case; return named outputs in logical shapes, values in the device's precision.

        Raise ``accel_regress.Hang`` / ``Crash`` / ``CompileError`` for those outcomes and
        ``accel_regress.Unsupported`` when the case cannot run here.
        """
        raise NotImplementedError

    def ahead(self, cases: Sequence[Case]) -> list[tuple[int, Callable[[], None]]]:
        """What this backend can build for ``cases`` before they run (compiles), as jobs a session
        starts on idle cores once collection ends (plugin/ahead.py), each with the index of the
        first case it serves (the cases come in the order they will run). A job builds into the
        backend's own cache and never raises for a program that fails to build: its case builds it
        again when it runs and gets the verdict. The cases are ones ``supports`` accepts. Default:
        nothing is built ahead."""
        return []

    def process_env(self) -> dict[str, str]:
        """Settings a library reads once per process, before its first use (oneDNN's
        ``ONEDNN_MAX_CPU_ISA``). A backend with its own runs in an isolated worker of its own, set
        before its first run, so no other backend's run has fixed them in that process first."""
        return {}

    def preload_modules(self) -> list[str]:
        """Modules the isolated worker imports once before any case, so every run starts warm."""
        return [type(self).__module__]

    def reset(self) -> None:
        """Called after a HANG: bring the device back (reopen, reset) if the backend can."""
