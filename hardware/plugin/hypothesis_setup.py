"""Registers the suite's hypothesis profiles (hardware/plugin/hypothesis_profiles.py) only when
hypothesis is in use, so that a run without property tests never imports it (~0.3 s, and more
where pytest cannot cache its rewrite of hypothesis' ~70 modules: PYTHONDONTWRITEBYTECODE or a
read-only site-packages).

In use means, in a session that is the plugin's (plugin/engagement.py; registering moves
hypothesis's home folder, and so a project's own example database, out of the working tree): a
hypothesis option on the command line or in addopts (``--hypothesis-profile explore``: registered
before hypothesis' own plugin loads the profile, this hook runs first), or hypothesis imported by
the end of collection (before hypothesis' plugin looks at the items) or by the time a test starts
(a property test module imports it, and usually the profiles module itself, at collection).

A session of the plugin's in which nothing imported hypothesis does without hypothesis's own
pytest plugin at its end: that plugin's terminal summary imports all of hypothesis (about 0.4 s)
to report observations and failing examples that only a hypothesis test can make.
"""
from __future__ import annotations

import sys

import pytest

from accel_regress.plugin import engagement

# The dests of hypothesis' pytest options (_hypothesis_pytestplugin.py): any one given makes its
# plugin import hypothesis and load the profile at configure time.
_OPTIONS = ("hypothesis_profile", "hypothesis_verbosity", "hypothesis_show_statistics", "hypothesis_seed",
            "hypothesis_explain")
CI, EXPLORE = "accel-ci", "explore"     # hypothesis_profiles' names (importing it imports hypothesis)
_PROFILES = "accel_regress.plugin.hypothesis_profiles"


def _registered() -> bool:
    return _PROFILES in sys.modules


def register() -> None:
    if not _registered():
        import accel_regress.plugin.hypothesis_profiles  # noqa: F401 (registers the profiles on import)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    profile = config.getoption("hypothesis_profile", None)
    if engagement.explicit(config) or profile == CI:     # "explore" may be a project's own name too
        if "hypothesis" in sys.modules or any(config.getoption(o, None) for o in _OPTIONS):
            register()


@pytest.hookimpl(tryfirst=True)     # before hypothesis' own, which reads the code's constants into its home
def pytest_collection_modifyitems(session, config, items):
    if "hypothesis" in sys.modules and (engagement.engaged(config) or engagement.claim(config, items)):
        register()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not _registered() and "hypothesis" in sys.modules and engagement.engaged(item.config):
        register()


def pytest_sessionfinish(session):
    config = session.config
    # An xdist controller runs no test itself: its workers' failing examples reach it in their reports.
    controller = not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"
    if engagement.engaged(config) and "hypothesis" not in sys.modules and not controller:
        plugin = config.pluginmanager.get_plugin("hypothesispytest")
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
