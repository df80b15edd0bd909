"""Where the history lives: ``--history PATH`` (SQLite), ``--history postgresql://...`` (a server
shared by a fleet), ``--history none`` (no history); else ``$ACCEL_HISTORY``; else
``$XDG_DATA_HOME/accel-regress/history.sqlite`` (``~/.local/share/...``). No SQLAlchemy here:
the pytest plugin reads this at every start."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

ENV = "ACCEL_HISTORY"
OFF = ("none", "off", "no")


class HistoryError(Exception):
    """The history cannot be used (missing, corrupt, locked, newer schema, unreachable); one line."""


def default_location() -> str:
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(data) / "accel-regress" / "history.sqlite")


def resolve(given: Optional[str]) -> Optional[str]:
    """The history to use, or None for none."""
    value = given if given not in (None, "") else (os.environ.get(ENV) or default_location())
    return None if value.strip().lower() in OFF else value


def is_server(location: str) -> bool:
    return "://" in location


def describe(location: str) -> str:
    """The location as it may be printed: a server URL without its password."""
    if not is_server(location):
        return location
    from sqlalchemy.engine import make_url
    try:
        return make_url(location).render_as_string(hide_password=True)
    except Exception:       # an unparsable URL: say only its scheme
        return location.split("://", 1)[0] + "://..."
