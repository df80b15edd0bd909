"""Where the history lives: ``--history PATH`` (SQLite), ``--history postgresql://...`` (a server
shared by a fleet), ``--history none`` (no history); else ``$ACCEL_HISTORY``; else the project's
own, ``<project>/.accel-regress/history.sqlite`` (beside the project, as pytest keeps
``.pytest_cache`` and hypothesis ``.hypothesis``: two projects on one machine never share one).
``--history user`` is the one history of this user, ``$XDG_DATA_HOME/accel-regress/history.sqlite``
(``~/.local/share/...``), opt-in. No SQLAlchemy here: the pytest plugin reads this at every start."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

ENV = "ACCEL_HISTORY"
OFF = ("none", "off", "no")
USER = "user"
FOLDER = ".accel-regress"
# The files that make a folder a project's root, as pytest looks for its configuration (rootdir).
_PROJECT_FILES = ("pyproject.toml", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg")


class HistoryError(Exception):
    """The history cannot be used (missing, corrupt, locked, newer schema, unreachable); one line."""


def user_location() -> str:
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(data) / "accel-regress" / "history.sqlite")


def project_root(start: Path) -> Path:
    """The project a command run in ``start`` belongs to: the nearest folder up holding a
    pyproject.toml or a pytest configuration file; ``start`` itself when none does."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / name).is_file() for name in _PROJECT_FILES):
            return folder
    return start


def project_location(root: Path) -> str:
    return str(root / FOLDER / "history.sqlite")


def default_location(root: Optional[Path] = None) -> str:
    """The history when none is named: the project's (pytest's rootdir, else the project of the
    current folder)."""
    return project_location(root if root is not None else project_root(Path.cwd()))


def resolve(given: Optional[str], root: Optional[Path] = None) -> Optional[str]:
    """The history to use, or None for none (``root``: the project, for the default). A blank or
    control-character name is refused (a history file named " " is a typo, never a wish)."""
    value = given if given is not None else (os.environ.get(ENV) or default_location(root))
    where = "--history" if given is not None else f"${ENV}"
    if not value.strip():
        raise HistoryError(f"{where} is blank: give a SQLite file, a postgresql:// URL, user or none")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise HistoryError(f"{where} {redact(value)!r} holds a control character")
    if value.strip().lower() == USER:
        return user_location()
    return None if value.strip().lower() in OFF else value


def keep_out_of_version_control(location: str) -> None:
    """A project's own history folder says so to git, as .pytest_cache does (its .gitignore: *)."""
    path = Path(location)
    if path.parent.name == FOLDER and path.parent.is_dir() and not (path.parent / ".gitignore").exists():
        try:
            (path.parent / ".gitignore").write_text("# Created by accel-regress: the project's results history.\n*\n")
        except OSError:
            pass          # a read-only project: the history's own errors say what matters


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
