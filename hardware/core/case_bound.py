"""What is left of the running case's bound (its ``--case-timeout``, else the backend's), for a
backend that waits on someone else: a wait that outlives the case becomes the case's HANG and
names nothing (issue 47 defect 5: another process's claim on a compile). One case runs in a
worker at a time; outside a case (compile ahead, a script) nothing is known."""
from __future__ import annotations

import contextlib
import time
from typing import Iterator, Optional

_deadline: Optional[float] = None


@contextlib.contextmanager
def running(bound_s: Optional[float]) -> Iterator[None]:
    global _deadline
    before = _deadline
    _deadline = time.monotonic() + bound_s if bound_s else None
    try:
        yield
    finally:
        _deadline = before


def left() -> Optional[float]:
    """Seconds left of the running case's bound (None: no case is running here)."""
    return None if _deadline is None else max(0.0, _deadline - time.monotonic())
