"""What is left of the running case's bound (its ``--case-timeout``, else the backend's), for a
backend that waits on someone else: a wait that outlives the case becomes the case's HANG and
names nothing (issue 47 defect 5: another process's claim on a compile). One case runs in a
worker at a time; outside a case (compile ahead, a script) nothing is known."""
from __future__ import annotations

import contextlib
import contextvars
import time
from typing import Iterator, Optional

# A context variable, not a module global: the deadline is the running case's, and a thread the
# case did not start (compile ahead) sees none.
_deadline: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar("accel_case_deadline", default=None)


@contextlib.contextmanager
def running(bound_s: Optional[float]) -> Iterator[None]:
    token = _deadline.set(time.monotonic() + bound_s if bound_s else None)
    try:
        yield
    finally:
        _deadline.reset(token)


def left() -> Optional[float]:
    """Seconds left of the running case's bound (None: no case is running here)."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())
