"""``firesim`` backend: seed-004 micro-tests on FireSim or metasimulation, verdict from the logs.

``python -m hardware.firesim classify FILE...`` runs the log classifier alone.
"""
from hardware.firesim.backend import FireSimBackend, Incomplete

__all__ = ["FireSimBackend", "Incomplete"]
