"""Registers the suite's hypothesis profiles (hardware/plugin/hypothesis_profiles.py) only when
hypothesis is in use, so that a run without property tests never imports it (~0.3 s, and more
where pytest cannot cache its rewrite of hypothesis' ~70 modules: PYTHONDONTWRITEBYTECODE or a
read-only site-packages).

In use means: a hypothesis option on the command line or in addopts (``--hypothesis-profile
explore``: registered before hypothesis' own plugin loads the profile, this hook runs first), or
hypothesis imported by the end of collection (before hypothesis' plugin looks at the items) or
by the time a test starts (a property test module imports
it, and usually the profiles module itself, at collection).
"""
from __future__ import annotations

import sys

import pytest

# The dests of hypothesis' pytest options (_hypothesis_pytestplugin.py): any one given makes its
# plugin import hypothesis and load the profile at configure time.
_OPTIONS = ("hypothesis_profile", "hypothesis_verbosity", "hypothesis_show_statistics", "hypothesis_seed",
            "hypothesis_explain")
_registered = False


def register() -> None:
    global _registered
    if not _registered:
        import accel_regress.plugin.hypothesis_profiles  # noqa: F401 (registers the profiles on import)
        _registered = True


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if "hypothesis" in sys.modules or any(config.getoption(o, None) for o in _OPTIONS):
        register()


@pytest.hookimpl(tryfirst=True)     # before hypothesis' own, which reads the code's constants into its home
def pytest_collection_modifyitems(session, config, items):
    if "hypothesis" in sys.modules:
        register()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not _registered and "hypothesis" in sys.modules:
        register()
