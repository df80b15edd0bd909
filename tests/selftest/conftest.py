# Imported before any test runs: pytester's inline runs restore sys.modules afterwards, dropping
# what they imported, and a second import of torch (its C extension already initialised) crashes
# the process. The pytest process itself no longer imports torch (only the isolated worker does),
# so a selftest's inline session would otherwise be the first to import it.
import torch  # noqa: F401
# The same for matplotlib (the heatmaps and the trend chart): its classes dropped and imported
# anew by a later inline session no longer match the objects it cached (set_clip_path's TypeError).
import matplotlib  # noqa: F401
import matplotlib.figure  # noqa: F401
import matplotlib.backends.backend_agg  # noqa: F401
import pytest


@pytest.fixture(autouse=True)
def _no_user_history(monkeypatch):
    """The sessions a selftest starts go into no results history unless the test names one (its
    --history): never into the user's own."""
    monkeypatch.setenv("ACCEL_HISTORY", "none")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "selftest" in item.nodeid.split("::")[0]:
            item.add_marker(pytest.mark.selftest)
