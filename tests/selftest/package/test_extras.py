"""Heavy optional parts are extras (issue 48): the plugin loads into every pytest session of an
environment, so a session that is not the plugin's imports none of its dependencies, and what one
backend or one kind of history alone reads (FireSim's YAML, the PostgreSQL driver) is an extra
whose absence is a reason naming it. Failed on 60769d1: pyyaml and psycopg were requirements of
every installation."""
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
HEAVY = ("numpy", "torch", "ml_dtypes", "sqlalchemy", "alembic", "psycopg", "yaml", "jsonschema",
         "fastjsonschema", "tomlkit", "iree", "onnx", "onnxruntime", "matplotlib")
PROBE = f"""
import sys, pytest
class Probe:
    def pytest_sessionfinish(self, session):
        print("\\nIMPORTED", sorted(m for m in {HEAVY!r} if m in sys.modules))
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider"], plugins=[Probe()]))
"""


def test_a_session_that_is_not_the_plugins_imports_none_of_its_dependencies(tmp_path):
    (tmp_path / "test_other.py").write_text("def test_other():\n    assert 1 + 1 == 2\n")
    res = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("IMPORTED"))
    assert line == "IMPORTED []", line


def test_the_backend_and_history_only_dependencies_are_extras():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    required = " ".join(project["dependencies"])
    extras = project["optional-dependencies"]
    for name, extra in (("pyyaml", "firesim"), ("psycopg", "postgresql")):
        assert name not in required, name
        assert any(d.startswith(name) for d in extras[extra]), (name, extras[extra])
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert all(f",{e}" in setup for e in ("firesim", "postgresql")), "scripts/setup.sh installs every extra CI tests"


def test_a_postgresql_history_without_its_driver_names_the_extra(monkeypatch):
    from accel_regress.results.history.location import HistoryError
    from accel_regress.results.history.store import History
    monkeypatch.setitem(sys.modules, "psycopg", None)       # importlib.util.find_spec: None, as when not installed
    with pytest.raises(HistoryError, match=r"needs the psycopg driver: the extra accel-regress\[postgresql\]"):
        History("postgresql://ci@db.invalid/accel")

