"""Two projects on one machine keep a history each (issue 48): by default a session stores itself
in its project's .accel-regress/history.sqlite (pytest's rootdir), the commands read the one of the
project they run in, and the user-wide history is opt-in (--history user). Failed on 60769d1:
both projects' runs went into $XDG_DATA_HOME/accel-regress/history.sqlite."""
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.results.history import location


@pytest.fixture
def machine(tmp_path, monkeypatch):
    for name in ("ACCEL_HISTORY", "ACCEL_HISTORY_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user-data"))
    projects = []
    for name in ("alpha", "beta"):
        root = tmp_path / name
        (root / "tests").mkdir(parents=True)
        (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\nversion = "0"\n')
        (root / "tests" / "test_it.py").write_text("def test_it():\n    pass\n")
        projects.append(root)
    return tmp_path, projects


def _projects_stored(db: Path) -> list:
    with sqlite3.connect(db) as con:
        return sorted(r[0] for r in con.execute("select project from runs"))


def test_each_project_keeps_its_own_history(machine):
    tmp_path, projects = machine
    for root in projects:
        res = subprocess.run([sys.executable, "-m", "pytest", "--hw", "emu", "-p", "no:cacheprovider", "-q"],
                             cwd=root, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"stored in {root / '.accel-regress' / 'history.sqlite'}" in res.stdout, res.stdout
    for root in projects:
        db = root / ".accel-regress" / "history.sqlite"
        assert _projects_stored(db) == [root.name]
        assert (root / ".accel-regress" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (tmp_path / "user-data" / "accel-regress").exists()
    # A command run inside a project (a subfolder too) reads that project's history.
    out = subprocess.run([sys.executable, "-m", "accel_regress", "history", "show", "test_it"],
                         cwd=projects[1] / "tests", capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_user_history_is_opt_in(machine):
    tmp_path, projects = machine
    assert location.resolve("user") == str(tmp_path / "user-data" / "accel-regress" / "history.sqlite")
    assert location.resolve(None, root=projects[0]) == str(projects[0] / ".accel-regress" / "history.sqlite")
    assert location.project_root(projects[1] / "tests") == projects[1]
