"""Hypothesis profiles for the property-based tests, registered when this module is imported: by a
property test module, or by the pytest plugin once hypothesis is in use (before hypothesis reads
``--hypothesis-profile``; hardware/plugin/hypothesis_setup.py).

``accel-ci``: what every default run uses: a fixed, small number of examples drawn from a fixed
    seed (derandomize), no example database, no deadline (a compile takes what it takes). The same
    shapes every run, on every machine. Hypothesis' own home directory (where it caches more than
    examples) is moved out of the tree to $ACCEL_HYPOTHESIS_HOME or
    ~/.cache/accel-regress/hypothesis-home, so a run writes nothing into the checkout.
``explore``: ``pytest --hypothesis-profile explore``, for long runs on hardware: many examples,
    fresh ones each run, failures kept in a database outside the tree ($ACCEL_HYPOTHESIS_DB or
    ~/.cache/accel-regress/hypothesis) so the next run tries them first.
"""
from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase

CI = "accel-ci"
CACHE = Path(os.environ.get("ACCEL_HYPOTHESIS_HOME") or Path.home() / ".cache" / "accel-regress" / "hypothesis-home")
# Hypothesis keeps more than examples in its home directory (a cache of constants it found in the
# code), by default ./.hypothesis: point it outside the working tree so a run writes nothing there.
set_hypothesis_home_dir(str(CACHE))
EXPLORE = "explore"
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(CI, max_examples=25, derandomize=True, database=None, deadline=None,
                          print_blob=False, suppress_health_check=_SLOW_OK)


def _explore_db() -> Path:
    env = os.environ.get("ACCEL_HYPOTHESIS_DB")
    return Path(env) if env else Path.home() / ".cache" / "accel-regress" / "hypothesis"


settings.register_profile(EXPLORE, max_examples=400, derandomize=False,
                          database=DirectoryBasedExampleDatabase(str(_explore_db())), deadline=None,
                          print_blob=True, suppress_health_check=_SLOW_OK)


def active() -> settings:
    """The settings a property test uses: the profile chosen with --hypothesis-profile, or
    ``accel-ci`` when none was chosen (hypothesis' own default profile is randomized)."""
    name = settings.get_current_profile_name()
    return settings.get_profile(CI) if name == "default" else settings.get_profile(name)


def exploring() -> bool:
    return settings.get_current_profile_name() == EXPLORE
