"""A backend's ``Unsupported`` raised while a test runs is a SKIP (NOT_APPLICABLE when it can never
run that configuration), not a failure.

Registered only when a session engages (plugin/engagement.py): a wrapper of pytest_runtest_call
is a frame of every test's traceback (``--fulltrace`` shows it), so a project that never uses the
plugin must not have it.
"""
from __future__ import annotations

import pytest

from accel_regress.core.errors import Unsupported
from accel_regress.plugin.fixtures import NOT_APPLICABLE


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    __tracebackhide__ = True
    try:
        return (yield)
    except Unsupported as exc:
        if exc.never:    # the backend can never run this configuration: NOT_APPLICABLE, not a SKIP
            item.stash[NOT_APPLICABLE] = str(exc)
        pytest.skip(str(exc))
