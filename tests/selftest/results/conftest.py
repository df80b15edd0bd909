"""The results history's selftests share one real PostgreSQL server per module (initdb in a
temporary folder, hardware/results/history/localserver.py) and run each history test on SQLite and on it."""
import pytest


@pytest.fixture(scope="module")
def postgres():
    from accel_regress.results.history import localserver
    why = localserver.unavailable()
    if why:
        pytest.skip(why)
    with localserver.LocalServer() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "history.sqlite")
    return request.getfixturevalue("postgres").create_database()
