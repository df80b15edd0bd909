"""Isolation: every backend run happens in a warm worker process, away from pytest.

A run that never returns (also one blocked in native code holding the GIL), a fatal signal, an
``os._exit`` or a memory blow-up becomes a HANG or CRASH verdict of that case alone; see ``pool``
(the pytest side), ``server`` (the fork server), ``worker`` (the child that runs jobs), ``bounds``
(time, memory, how an end is worded), ``transfer`` (arrays as .npy files) and ``guard`` (--max-hangs).
"""
from accel_regress.core.isolation.bounds import Bounds, parse_size
from accel_regress.core.isolation.guard import HangGuard
from accel_regress.core.isolation.pool import Isolation, IsolationError

__all__ = ["Bounds", "HangGuard", "Isolation", "IsolationError", "parse_size"]
