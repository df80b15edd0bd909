"""Whether a session is the plugin's to act on (issue 24 item 3).

Installed in an environment, the plugin is loaded into every pytest run there. It acts only on its
own items: the tests of a registered operator family (``@pytest.mark.family(op)`` with ``op``
registered in ``accel_regress.families``) and the tests that use its ``hw`` or ``golden_seed``
fixture (not a project's own fixture of that name). Until a session has such an item it is
*disengaged*: the plugin starts no fork server, probes no backend, writes no reports, prints no
summary, deselects nothing, leaves hypothesis's settings and the garbage collector alone.

A session is engaged
- from its configuration when it is plainly meant for the plugin (``explicit``): an accel-regress
  option on the command line (``--hw``, ``--inject-fault``, ...), an ``accel_*`` ini value, or a
  rootdir whose pyproject.toml registers accel-regress entry points (this repository, an operator
  team's package); then the fork server starts before collection (``--help``, ``--version``,
  ``--markers`` and ``--fixtures`` engage nothing);
- otherwise when collection meets the first item of the plugin's (its ``hw`` parametrization or
  the collected items), or, in an xdist controller (which collects nothing), with the first result
  record a worker sends.

Engaging registers the parts of the plugin that only a session of its own needs (their packages
import numpy and the backends: registered at start-up, they would cost every project's run that
import) and calls ``pytest_accel_regress_engaged(config)`` once; each part of the plugin does its
session work there.
"""
from __future__ import annotations

from typing import Optional

import pytest

_ENGAGED = pytest.StashKey[bool]()
_EXPLICIT = pytest.StashKey[bool]()
FIXTURES_MODULE = "accel_regress.plugin.fixtures"
OWN_FIXTURES = ("hw", "golden_seed")
# Registered when a session engages, in this order (their options are declared in plugin/options.py),
# then the session plugins backends and families register (entry-point group accel_regress.session_plugins).
ON_ENGAGEMENT = (
    "accel_regress.plugin.unsupported",                 # a backend's Unsupported while a test runs is a SKIP
    "accel_regress.plugin.expectations",                # known bugs: XFAIL / strict XPASS, known hangs not attempted
    "accel_regress.plugin.reports",                     # markdown, html and heatmaps after results.json
    "accel_regress.plugin.repeat",                      # --repeat N: mixed outcomes are FLAKY k/N
    "accel_regress.plugin.shard",                       # --shard I/N: a split every runner computes alike
    "accel_regress.plugin.history",                     # every run into the results history
    "accel_regress.plugin.live_status",                 # on a terminal: what a long wait waits for
)


def _session_plugins() -> list[str]:
    from accel_regress.core import registry
    return [reg.value for reg in registry.registrations("session_plugin").values()]


def set_explicit(config, value: bool) -> None:
    config.stash[_EXPLICIT] = value


def explicit(config) -> bool:
    return config.stash.get(_EXPLICIT, False)


def engaged(config) -> bool:
    return config.stash.get(_ENGAGED, False)


def engage(config) -> None:
    if not config.stash.get(_ENGAGED, False):
        config.stash[_ENGAGED] = True
        for name in (*ON_ENGAGEMENT, *_session_plugins()):
            config.pluginmanager.import_plugin(name)    # pytest_configure is historic: it runs now
        config.hook.pytest_accel_regress_engaged(config=config)


def rootdir_registers(config) -> bool:
    """The project pytest runs in registers accel-regress entry points (this repository, an
    operator team's package): its pyproject.toml names one of the groups."""
    inipath = config.inipath
    path = inipath if inipath is not None and inipath.name == "pyproject.toml" else config.rootpath / "pyproject.toml"
    try:
        return "accel_regress." in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def own_fixture(fixturedefs) -> bool:
    """Whether the closest definition of a fixture (pytest's list, farthest first) is this plugin's."""
    if not fixturedefs:
        return False
    func = getattr(fixturedefs[-1], "func", None)
    return getattr(func, "__module__", None) == FIXTURES_MODULE


def parametrized_directly(definition, name: str) -> bool:
    """The test names ``name`` in its own ``@pytest.mark.parametrize`` (then it is not the fixture's to give)."""
    for mark in definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


def uses_own_fixture(item_or_metafunc, name: str) -> bool:
    defs = getattr(item_or_metafunc, "_arg2fixturedefs", None)
    if defs is None:
        info = getattr(item_or_metafunc, "_fixtureinfo", None)
        defs = info.name2fixturedefs if info is not None else {}
    return name in getattr(item_or_metafunc, "fixturenames", ()) and own_fixture(defs.get(name))


def family_of(item) -> Optional[str]:
    """The registered operator family an item belongs to, if any."""
    mark = item.get_closest_marker("family")
    if mark is None or not mark.args:
        return None
    from accel_regress.core import registry
    try:
        return mark.args[0] if mark.args[0] in registry.registrations("family") else None
    except registry.RegistrationError:
        return mark.args[0]      # a broken registration is the plugin's to report, at engagement


def is_ours(item) -> bool:
    if not isinstance(item, pytest.Function):
        return False
    return any(uses_own_fixture(item, name) for name in OWN_FIXTURES) or family_of(item) is not None


def claim(config, items) -> list:
    """The plugin's items among ``items``; the session is engaged if there are any."""
    ours = [item for item in items if is_ours(item)]
    if ours:
        engage(config)
    return ours


def _informs_only(config) -> bool:
    """Options that print something about pytest and run no test."""
    option = config.option
    return any(getattr(option, name, False) for name in ("help", "version", "markers", "showfixtures",
                                                           "show_fixtures_per_test"))


@pytest.hookimpl(trylast=True)      # after every part of the plugin has read its options
def pytest_configure(config):
    if explicit(config) and not _informs_only(config):
        engage(config)


