"""Where the history lives: ``--history PATH`` (SQLite), ``--history postgresql://...`` (a server
shared by a fleet), ``--history none`` (no history); else ``$ACCEL_HISTORY``; else
``$XDG_DATA_HOME/accel-regress/history.sqlite`` (``~/.local/share/...``). No SQLAlchemy here:
the pytest plugin reads this at every start."""
from __future__ import annotations

import os
import re
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
    """The history to use, or None for none. A blank or control-character name is refused (a
    history file named " " is a typo, never a wish)."""
    value = given if given is not None else (os.environ.get(ENV) or default_location())
    where = "--history" if given is not None else f"${ENV}"
    if not value.strip():
        raise HistoryError(f"{where} is blank: give a SQLite file, a postgresql:// URL or none")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise HistoryError(f"{where} {redact(value)!r} holds a control character")
    return None if value.strip().lower() in OFF else value


def is_server(location: str) -> bool:
    return "://" in location


# userinfo's password in any URL (scheme://user:PASSWORD@host), and a password= query parameter.
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:?#]*):[^@/\s]*@")
_QUERY_PASSWORD = re.compile(r"([?&;]password=)[^&;#\s]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every URL password taken out (``postgresql://u:pw@h/db`` -> ``postgresql://u@h/db``,
    ``?password=pw`` -> ``?password=``): what may be recorded or printed. libpq finds the password
    itself ($PGPASSWORD, ~/.pgpass, a $PGSERVICE entry), so nothing recorded ever needs it."""
    if "://" not in text and "password=" not in text.lower():
        return text
    return _QUERY_PASSWORD.sub(r"\1", _URL_PASSWORD.sub(r"\1@", text))


def describe(location: str) -> str:
    """The location as it may be printed: a server URL without its password."""
    if not is_server(location):
        return location
    from sqlalchemy.engine import make_url
    try:
        url = make_url(location)
        return redact(url.set(password=None).render_as_string(hide_password=False))
    except Exception:       # an unparsable URL: say only its scheme
        return location.split("://", 1)[0] + "://..."
