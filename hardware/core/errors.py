"""Exceptions that stand for a verdict. Backends and faults raise them; the harness records them."""
from __future__ import annotations

from typing import Any, Optional


class VerdictError(Exception):
    verdict = "FAIL"
    default_stage = "run"

    def __init__(self, message: str = "", *, stage: Optional[str] = None, detail: Optional[dict[str, Any]] = None):
        super().__init__(message or self.verdict)
        self.message = message or self.verdict
        self.stage = stage or self.default_stage
        self.detail = dict(detail or {})


class Hang(VerdictError):
    """No completion within the case's bound."""
    verdict = "HANG"


class Crash(VerdictError):
    """The process, runtime or simulator died (signal, exit code, device error state)."""
    verdict = "CRASH"


class CompileError(VerdictError):
    """The toolchain rejected the program; ``detail['diagnostic']`` holds its words."""
    verdict = "COMPILE_ERROR"
    default_stage = "compile"


class Unsupported(Exception):
    """The backend cannot run this case (a SKIP with the reason), e.g. an operator it lacks;
    ``never``: it never can (NOT_APPLICABLE, see NotApplicable)."""

    def __init__(self, *args, never: bool = False):
        super().__init__(*args)
        self.never = never


class NotApplicable(str):
    """A reason from ``Backend.supports`` / ``supports_inputs`` that holds for the backend always:
    the configuration has no meaning there (a RISC-V flag variant on the host) or its data path
    cannot hold it (inf in a bfp16 block). The case is NOT_APPLICABLE, counted once per family x
    backend in the summary, not a SKIP that matters."""


class SetupError(Exception):
    """The backend's installation is incomplete (a packaged file is missing): a fault of the
    set-up, reported at the test's set-up with the file named, never as a verdict on the device."""


class HarnessError(Exception):
    """Not a verdict on the device: the suite's own files failed the case (its cache root or a
    temporary folder full or read-only: hardware/core/harness_files.py). Recorded as FAIL at stage
    ``harness``, which the gate blocks as the harness's error and ``expectations update`` never
    proposes as a known bug (issue 47 defect 2). Not a VerdictError: nothing that catches the
    device's verdicts (an expected FAIL's xfail, a batch retried one by one) takes it for one."""
    verdict = "FAIL"
    stage = "harness"

    def __init__(self, message: str, *, stage: str = "harness", detail: Optional[dict[str, Any]] = None):
        super().__init__(message)
        self.message = message
        self.stage = stage       # "harness": the suite's files; "family": a family's own program raised
        self.detail = dict(detail or {})
