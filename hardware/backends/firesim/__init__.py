"""``firesim`` backend: seed-004 micro-tests on FireSim or metasimulation, verdict from the logs.

``python -m accel_regress.backends.firesim classify FILE...`` runs the log classifier alone.
"""
from accel_regress.backends.firesim.backend import FireSimBackend, Incomplete

__all__ = ["FireSimBackend", "Incomplete"]
