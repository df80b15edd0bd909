"""After collection, everything alive (torch, numpy, the collected items: hundreds of thousands of
objects that live until the process ends) moves to the garbage collector's permanent generation
(``gc.freeze``), so later collections skip it: pytest's own at the session's end (five full
``gc.collect`` calls in its unraisable-exception cleanup, ~1.2 s over torch's object graph) and
the automatic full collections during the run. Objects created later are collected as before.
At exit they are unfrozen, so that the interpreter's last collection finalizes them as it did
(native extensions such as IREE's nanobind runtime report frozen instances as leaks).
"""
from __future__ import annotations

import atexit
import gc

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    if not _frozen:
        _frozen.append(True)
        atexit.register(gc.unfreeze)
    gc.freeze()


_frozen: list = []
