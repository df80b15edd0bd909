"""When collection starts and again when it ends, everything alive (numpy, the plugins, the test modules, then
the collected items: hundreds of thousands of objects that live until the process ends) moves to
the garbage collector's permanent generation (``gc.freeze``), so later collections skip it: the
automatic full collections while ~8000 items are collected and while they run, and pytest's own at
the session's end (five full ``gc.collect`` calls in its unraisable-exception clean-up: ~1.2 s
while torch was imported here). Objects created later are collected as before. When the session is
over, one collection finalizes its garbage (an exception in a finalizer is still pytest's to
report) and what is left is frozen too, so that pytest's five collections after it find little.
At exit they are unfrozen, so that the interpreter's last collection finalizes them as it did
(native extensions such as IREE's nanobind runtime report frozen instances as leaks).
Only in a session that is the plugin's (plugin/engagement.py): another project's garbage is its own.
"""
from __future__ import annotations

import atexit
import gc

import pytest

from accel_regress.plugin import engagement


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    if engagement.engaged(session.config):
        _freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    if engagement.engaged(session.config):
        _freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if engagement.engaged(config):
        gc.collect()
        _freeze()


def _freeze() -> None:
    if not _frozen:
        _frozen.append(True)
        atexit.register(gc.unfreeze)
    gc.freeze()


_frozen: list = []
