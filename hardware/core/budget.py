"""What a slow backend runs in a default run: simulators (qemu-rvv, FireSim) are ~1000x slower
than the host, so they get a stated subset by default and everything with ``-m large``."""
from __future__ import annotations

import pytest

SIMULATOR_KINDS = ("simulator", "fpga-simulation")
# qemu-rvv: 512^3 multiply-adds take ~25 s of CPU; this many take about half a second.
SIMULATOR_DEFAULT_MACS = 2_500_000


def large_requested(config) -> bool:
    expr = config.getoption("markexpr", "") or ""
    return "large" in expr and "not large" not in expr


def skip_on_simulator(hw, config, why: str) -> None:
    """SKIP this case on a simulator unless ``-m large`` asked for everything; ``why`` says what
    puts it outside the default run's budget."""
    if hw.backend.kind in SIMULATOR_KINDS and not large_requested(config):
        pytest.skip(f"{hw.name} is a simulator: {why}, outside its default-run budget; run with -m large to include it")


def simulator_budget_skip(hw, macs: int, config) -> None:
    if macs > SIMULATOR_DEFAULT_MACS:
        skip_on_simulator(hw, config, f"{macs:.2g} multiply-adds exceed {SIMULATOR_DEFAULT_MACS:.2g}")
