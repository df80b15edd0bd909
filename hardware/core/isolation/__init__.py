"""Isolation: every backend run happens in a warm worker process, away from pytest.

A run that never returns (also one blocked in native code holding the GIL), a fatal signal, an
``os._exit`` or a memory blow-up becomes a HANG or CRASH verdict of that case alone; see ``pool``
(the pytest side), ``server`` (the fork server), ``worker`` (the child that runs jobs), ``bounds``
(time, memory, how an end is worded), ``transfer`` (arrays as raw files) and ``guard`` (--max-hangs).
"""
from accel_regress.core.isolation.bounds import Bounds, parse_size
from accel_regress.core.isolation.guard import HangGuard

__all__ = ["Bounds", "HangGuard", "Isolation", "IsolationError", "parse_size"]


def __getattr__(name):
    # The pool (numpy among its imports) only when asked for: reading a bound, as every pytest
    # start does to check its options, must not import it.
    if name in ("Isolation", "IsolationError"):
        from accel_regress.core.isolation import pool
        return getattr(pool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
