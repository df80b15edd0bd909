"""How the plugin's options are spelled, so that they clash with no project's (issue 37 item 1).

Every option is ``--accel-NAME`` (dest ``accel_NAME``, ini ``accel_NAME``); the short spelling
``--NAME`` is added as well, but only where the project pytest runs in has not defined it itself.

Why the short spellings wait: pytest calls ``pytest_addoption`` of the plugins loaded from entry
points first (``Config.parse``: ``load_setuptools_entrypoints("pytest11")``, pytest 9.0
_pytest/config/__init__.py), and a rootdir conftest.py's only when ``pytest_load_initial_conftests``
registers it (the hook is historic, so it runs at registration, same file, ``Config.parse`` and
``PytestPluginManager._importconftest``). Since pytest 9 every ``addoption`` goes straight into the
one argparse parser (``OptionGroup._addoption_instance`` in _pytest/config/argparsing.py calls
``self._arggroup.add_argument``), so a project's ``--hw`` added after ours dies with argparse's
"conflicting option string". The options are parsed for good only after that hook
(``self._parser.parse(args, namespace=self.option)``), so a wrapper around it sees every option the
plugins and the initial conftests have declared and adds each short spelling nobody has.
"""
from __future__ import annotations

import argparse
import weakref

import pytest

PREFIX = "accel_"
_PREFIXED_ONLY = pytest.StashKey[list]()
# Parser -> (group, declared attrs, short spelling) waiting for the initial conftests.
_WANTED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# dest -> the attrs an option was declared with. Not pytest's Argument.attrs(): pytest 9.1's is the
# argparse Action's __dict__ ("container", "option_strings", ... and no "action"), which
# add_argument refuses (_pytest/config/argparsing.py:288-292 at 9.1.1).
_DECLARED: dict[str, dict] = {}


def dest(name: str) -> str:
    return name if name.startswith(PREFIX) else PREFIX + name


def flag(name: str) -> str:
    return "--" + dest(name).replace("_", "-")


def short(name: str) -> str:
    return "--" + name.removeprefix(PREFIX).replace("_", "-")


def add(parser, name: str, **attrs) -> None:
    """Declare option ``name`` (e.g. ``hw``): ``--accel-hw`` now, ``--hw`` once it is known to be free."""
    group = parser.getgroup("accel-regress")
    spec = _DECLARED[dest(name)] = {"dest": dest(name), **attrs}
    group.addoption(flag(name), **spec)
    _WANTED.setdefault(parser, []).append((group, spec, short(name)))


def declared(argument) -> dict:
    """The attrs a pytest option was declared with (its default, action, type, ...): as given to
    ``add``; for one a plugin added to our group itself, what pytest says of it."""
    return _DECLARED.get(argument.dest) or argument.attrs()


def _taken(parser) -> set:
    # Parser._groups holds every OptionGroup, pytest's own ones and the anonymous group
    # parser.addoption fills (argparsing.py, Parser.__init__ and getgroup).
    return {n for group in parser._groups for option in group.options for n in option.names()}


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(early_config, parser, args):
    result = yield
    taken = _taken(parser)
    prefixed_only = []
    for group, attrs, name in _WANTED.pop(parser, []):
        if name in taken:
            prefixed_only.append(name)
            continue
        group.addoption(name, **{**attrs, "help": argparse.SUPPRESS})   # --help shows the prefixed one, which says so
    early_config.stash[_PREFIXED_ONLY] = prefixed_only
    return result


def prefixed_only(config) -> list[str]:
    """The short spellings the project defines itself: ours are ``--accel-...`` only there."""
    return config.stash.get(_PREFIXED_ONLY, [])


def spelled(config, name: str) -> str:
    """How option ``name`` is written in this session (rerun lines, messages)."""
    return flag(name) if short(name) in prefixed_only(config) else short(name)
