"""What a slow backend runs in a default run: simulators (qemu-rvv, FireSim) are ~1000x slower
than the host, so they get a stated subset by default and everything with ``-m large``.

A case outside that subset carries ``large_on(*kinds_or_names, reason=...)`` (``on_simulators``,
``simulator_budget``): on a backend of one of those kinds or names it is a ``large`` case,
deselected at collection unless ``-m`` names ``large`` (plugin/fixtures.py); on every other
backend it runs by default. Deciding at collection, not in the test, means nothing is built for
it ahead (plugin/ahead.py) and no SKIP row stands for a case nobody meant to run."""
from __future__ import annotations

import pytest

SIMULATOR_KINDS = ("simulator", "fpga-simulation")
# qemu-rvv: 512^3 multiply-adds take ~25 s of CPU; this many take about half a second.
SIMULATOR_DEFAULT_MACS = 2_500_000


def on_simulators(why: str):
    """The mark of a case that is large on a simulator, ``why`` saying what puts it outside the budget."""
    return pytest.mark.large_on(*SIMULATOR_KINDS, reason=f"{why}: outside a simulator's default-run budget")


def simulator_budget(macs: int) -> tuple:
    """The marks of a case of ``macs`` multiply-adds: beyond the simulators' budget it is large there."""
    if macs > SIMULATOR_DEFAULT_MACS:
        return (on_simulators(f"{macs:.2g} multiply-adds exceed {SIMULATOR_DEFAULT_MACS:.2g}"),)
    return ()


def large_on(mark, name: str, kind: str) -> bool:
    """Whether a ``large_on`` mark makes a case large on backend ``name`` of ``kind``."""
    return name in mark.args or kind in mark.args
