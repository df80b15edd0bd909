"""XRT command states -> verdicts.

The states are XRT's ``ert_cmd_state`` (xrt/detail/ert.h: NEW=1 QUEUED=2 RUNNING=3 COMPLETED=4
ERROR=5 ABORT=6 SUBMITTED=7 TIMEOUT=8 NORESPONSE=9 SKERROR=10 SKCRASHED=11; pyxrt binds all but
RUNNING). ``run.wait(timeout_ms)`` returns ERT_CMD_STATE_TIMEOUT when its own bound expires
(xrt_kernel.cpp, run_impl::wait), and pyxrt has no abort binding, so a TIMEOUT leaves the command
on the device: the verdict is HANG and the device must be reopened before the next case.
The amdxdna driver ends commands itself too: its watchdog (module parameter timeout_in_sec,
default 2 s; hardware/backends/npu/device.py driver_timeout_s) resets a device on which no command
completed for one to two periods, the running command coming back TIMEOUT and those queued behind
it ABORT; a HANG that came back that way before our bound says the driver ended it.
NORESPONSE is "timed out and failed to reset", ABORT a command the driver (or a failing runlist
predecessor) aborted: both are "did not complete in time" from the test's side.
Everything else that is not COMPLETED is the device reporting an error: CRASH, naming the state.
"""
from __future__ import annotations

import re
from typing import Optional

from accel_regress.core.errors import Crash, Hang, VerdictError

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


# A wait that returns this much before its own bound did not end by it.
EARLY_MS = 500


def ended_by_driver(elapsed_ms: Optional[float], bound_ms: Optional[int], driver_timeout_s: Optional[int]) -> bool:
    """Whether the amdxdna driver's watchdog, not our wait bound, ended a command: it came back
    in a hang state well before our bound, with the driver's timeout on and already passed."""
    return (elapsed_ms is not None and driver_timeout_s is not None and driver_timeout_s > 0
            and elapsed_ms >= driver_timeout_s * 1000 - EARLY_MS
            and (bound_ms is None or elapsed_ms < bound_ms - EARLY_MS))


def verdict_for(state, *, what: str, bound_ms: Optional[int] = None, elapsed_ms: Optional[float] = None,
                driver_timeout_s: Optional[int] = None) -> Optional[VerdictError]:
    """None for COMPLETED; otherwise the Hang or Crash to raise for ``what`` (e.g. 'entry 2 of 4').
    With the time the wait took and the driver's timeout_in_sec, a HANG says whose timeout ended it."""
    name = name_of(state)
    if name == COMPLETED:
        return None
    detail = {"ert_cmd_state": name}
    if bound_ms is not None:
        detail["wait_bound_ms"] = bound_ms
    if elapsed_ms is not None:
        detail["elapsed_ms"] = round(elapsed_ms)
    if name in HANG_STATES:
        detail["needs_reset"] = True
        if ended_by_driver(elapsed_ms, bound_ms, driver_timeout_s):
            detail["ended_by"] = f"amdxdna timeout_in_sec={driver_timeout_s}"
            ours = f"our {bound_ms} ms bound" if bound_ms is not None else "any bound of ours"
            return Hang(f"{what} was ended by the amdxdna driver's own timeout (timeout_in_sec={driver_timeout_s}: "
                        f"its watchdog saw no command complete for {driver_timeout_s}-{2 * driver_timeout_s} s and reset "
                        f"the device), not by {ours}: {name} after {elapsed_ms / 1000:.1f} s; a healthy kernel this "
                        f"long needs a larger timeout_in_sec (/sys/module/amdxdna/parameters/timeout_in_sec, 0 = off)",
                        stage="run", detail=detail)
        bound = f" within {bound_ms} ms" if bound_ms is not None and name == "ERT_CMD_STATE_TIMEOUT" else ""
        return Hang(f"{what} did not complete{bound}: {name}", stage="run", detail=detail)
    return Crash(f"{what} ended in {name}", stage="run", detail=detail)


def from_exception(exc: BaseException, *, what: str, **timing) -> Optional[VerdictError]:
    """XRT raises for failed runs and runlists ("Command failed to complete successfully
    (ERT_CMD_STATE_X)" / "runlist failed execution (ERT_CMD_STATE_X)", xrt_kernel.cpp
    throw_command_error) and IRON for failed runs ("... did not complete correctly:
    ert_cmd_state.ERT_CMD_STATE_X"): recover the state from the text, else None. ``timing``:
    bound_ms, elapsed_ms, driver_timeout_s as for verdict_for."""
    match = _STATE_RE.search(str(exc))
    if not match:
        return None
    verdict = verdict_for(match.group(0), what=what, **timing)
    if verdict is not None:
        verdict.detail["exception"] = f"{type(exc).__name__}: {exc}"
    return verdict
