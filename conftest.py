"""The plugin comes from its pytest11 entry point (`pip install -e .`, scripts/setup.sh).

What this checkout's tests import must be this checkout: an editable install of another tree
(a second checkout, a worktree) would silently test that tree's code instead.
"""
from pathlib import Path

import pytest


def pytest_configure(config):
    import accel_regress
    here = Path(__file__).resolve().parent
    got = Path(accel_regress.__file__).resolve().parent.parent
    if got != here:
        raise pytest.UsageError(f"accel_regress is imported from {got}, not from this checkout {here}: "
                                f"run `python -m pip install -e {here}` (scripts/setup.sh does)")
