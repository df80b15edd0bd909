"""What a session selects of the plugin's: its backends, and the opt-in cases ``-m`` asks for.

Shared by the plugin's parts (options settles them; fixtures, isolation and recording read them).
"""
from __future__ import annotations

import re

import pytest

_OPT_IN = {"large": re.compile(r"\blarge\b"), "input_classes": re.compile(r"\binput_classes\b"),
           "corpus": re.compile(r"\bcorpus\b")}
_USER_EXPR = pytest.StashKey[str]()
_SELECTED = pytest.StashKey[list]()


def set_expression(config, expr: str) -> None:
    config.stash[_USER_EXPR] = expr


def expression(config) -> str:
    """The user's own ``-m`` expression, as given."""
    return config.stash.get(_USER_EXPR, "")


def names(expr: str, marker: str) -> bool:
    return bool(_OPT_IN[marker].search(expr))


def wants(config, marker: str) -> bool:
    """Whether the user's ``-m`` names an opt-in marker (``large``, ``input_classes``): the
    plugin's cases so marked are generated and run only then. The expression itself is pytest's
    to apply, unchanged, to every test."""
    return bool(_OPT_IN[marker].search(config.stash.get(_USER_EXPR, "")))


def opt_in_unwanted(config, names) -> bool:
    """A case with these marker names is an opt-in one the selection does not ask for."""
    return any(m in names and not wants(config, m) for m in _OPT_IN)


def selected(config) -> list[str]:
    """The backends of this session (``--hw``, else $ACCEL_HW, else every available one: each
    probed once, and only when the session has items of the plugin's)."""
    if _SELECTED not in config.stash:
        from accel_regress.core import registry
        try:
            config.stash[_SELECTED] = registry.parse(config.getoption("accel_hw"))
        except registry.RegistrationError as exc:
            raise pytest.UsageError(f"accel-regress registrations: {exc}") from None
        except ValueError as exc:
            raise pytest.UsageError(f"--hw: {exc}") from None
    return config.stash[_SELECTED]


def already_selected(config):
    """The backends of this session if they are settled already (None: not asked for yet, and so
    no backend probed)."""
    return config.stash.get(_SELECTED, None)
