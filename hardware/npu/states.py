"""XRT command states -> verdicts.

The states are XRT's ``ert_cmd_state`` (xrt/detail/ert.h: NEW=1 QUEUED=2 RUNNING=3 COMPLETED=4
ERROR=5 ABORT=6 SUBMITTED=7 TIMEOUT=8 NORESPONSE=9 SKERROR=10 SKCRASHED=11; pyxrt binds all but
RUNNING). ``run.wait(timeout_ms)`` returns ERT_CMD_STATE_TIMEOUT when its own bound expires
(xrt_kernel.cpp, run_impl::wait), and pyxrt has no abort binding, so a TIMEOUT leaves the command
on the device: the verdict is HANG and the device must be reopened before the next case.
NORESPONSE is the scheduler's "timed out and failed to reset", ABORT a command the scheduler (or
a failing runlist predecessor) aborted: both are "did not complete in time" from the test's side.
Everything else that is not COMPLETED is the device reporting an error: CRASH, naming the state.
"""
from __future__ import annotations

import re
from typing import Optional

from hardware.errors import Crash, Hang, VerdictError

COMPLETED = "ERT_CMD_STATE_COMPLETED"
HANG_STATES = frozenset({"ERT_CMD_STATE_TIMEOUT", "ERT_CMD_STATE_NORESPONSE", "ERT_CMD_STATE_ABORT"})

_STATE_RE = re.compile(r"ERT_CMD_STATE_[A-Z]+")


def name_of(state) -> str:
    """'ERT_CMD_STATE_X' for a pyxrt enum value, its repr/str, or a bare int."""
    name = getattr(state, "name", None)
    if isinstance(name, str) and name.startswith("ERT_CMD_STATE_"):
        return name
    match = _STATE_RE.search(str(state))
    if match:
        return match.group(0)
    try:
        return _BY_VALUE.get(int(state), f"ert_cmd_state({int(state)})")
    except (TypeError, ValueError):
        return f"unknown state {state!r}"


_BY_VALUE = {1: "ERT_CMD_STATE_NEW", 2: "ERT_CMD_STATE_QUEUED", 3: "ERT_CMD_STATE_RUNNING",
             4: COMPLETED, 5: "ERT_CMD_STATE_ERROR", 6: "ERT_CMD_STATE_ABORT",
             7: "ERT_CMD_STATE_SUBMITTED", 8: "ERT_CMD_STATE_TIMEOUT", 9: "ERT_CMD_STATE_NORESPONSE",
             10: "ERT_CMD_STATE_SKERROR", 11: "ERT_CMD_STATE_SKCRASHED"}


def verdict_for(state, *, what: str, bound_ms: Optional[int] = None) -> Optional[VerdictError]:
    """None for COMPLETED; otherwise the Hang or Crash to raise for ``what`` (e.g. 'entry 2 of 4')."""
    name = name_of(state)
    if name == COMPLETED:
        return None
    detail = {"ert_cmd_state": name}
    if bound_ms is not None:
        detail["wait_bound_ms"] = bound_ms
    if name in HANG_STATES:
        bound = f" within {bound_ms} ms" if bound_ms is not None and name == "ERT_CMD_STATE_TIMEOUT" else ""
        detail["needs_reset"] = True
        return Hang(f"{what} did not complete{bound}: {name}", stage="run", detail=detail)
    return Crash(f"{what} ended in {name}", stage="run", detail=detail)


def from_exception(exc: BaseException, *, what: str) -> Optional[VerdictError]:
    """XRT raises for failed runlists ("Command failed to complete successfully (ERT_CMD_STATE_X)",
    xrt_kernel.cpp throw_command_error) and IRON for failed runs ("... did not complete correctly:
    ert_cmd_state.ERT_CMD_STATE_X"): recover the state from the text, else None."""
    match = _STATE_RE.search(str(exc))
    if not match:
        return None
    verdict = verdict_for(match.group(0), what=what)
    if verdict is not None:
        verdict.detail["exception"] = f"{type(exc).__name__}: {exc}"
    return verdict
