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
    """The backend cannot run this case (a SKIP with the reason), e.g. an operator it lacks."""


class SetupError(Exception):
    """The backend's installation is incomplete (a packaged file is missing): a fault of the
    set-up, reported at the test's set-up with the file named, never as a verdict on the device."""
