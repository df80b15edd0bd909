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
import os

import pytest


def _scrub_callers_environment() -> None:
    """The caller's settings are not the selftests' (issue 51): a CI job that exports the README's
    cache settings, a developer's ACCEL_HW or a PostgreSQL password must not change what a
    selftest's session does or prints. What the plugin and backends read is removed; where the
    caches are is pinned to where the caller keeps them (a warm root still serves the selftests'
    compiles, and each selftest that is about the root sets its own)."""
    from accel_regress.util.derived_cache import CACHE_ROOT_ENV, cache_root
    root = str(cache_root())
    prefixes = ("ACCEL_", "PYPTO_", "PTOAS_", "ASCEND_", "A2A3_", "XRT_", "PG", "ONEDNN_", "DNNL_", "XDG_")
    names = ("PEANO_INSTALL_DIR", "MLIR_AIE_INSTALL_DIR", "IREE_CMAKE_PLUGIN_PATHS", "MESA_SHADER_CACHE_DIR",
             "MESA_GLSL_CACHE_DIR", "VK_ICD_FILENAMES", "VK_DRIVER_FILES")
    for name in [k for k in os.environ if k.startswith(prefixes) or k in names]:
        if name != "XDG_RUNTIME_DIR":
            del os.environ[name]
    os.environ[CACHE_ROOT_ENV] = root


def pytest_configure(config):
    # Only in a session of selftests alone (make test runs them so): `pytest tests` also runs the
    # suite itself, whose ACCEL_HW and cache settings are the caller's to give.
    here = os.path.dirname(os.path.abspath(__file__))
    args = [os.path.abspath(os.path.join(str(config.invocation_params.dir), a.split("::")[0]))
            for a in config.args]
    if args and all(a == here or a.startswith(here + os.sep) for a in args):
        _scrub_callers_environment()


@pytest.fixture(autouse=True)
def _no_user_history(monkeypatch):
    """The sessions a selftest starts go into no results history unless the test names one (its
    --history): never into the user's own."""
    monkeypatch.setenv("ACCEL_HISTORY", "none")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "selftest" in item.nodeid.split("::")[0]:
            item.add_marker(pytest.mark.selftest)
