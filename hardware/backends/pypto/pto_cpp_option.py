"""pytest option ``--pto-cpp DIR``: ptoas-emitted C++ and/or the .pto IR it came from, for the
codegen lint test, and its fixture.

Registered through ``pytest_plugins`` in hardware/plugin.py. Without the option the lint test
is a SKIP that says how to give it a build folder.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from accel_regress.plugin import spelling


def pytest_addoption(parser):
    spelling.add(
        parser, "pto_cpp", default=None, metavar="DIR|FILE",
        help="ptoas-emitted C++ and .pto IR (a pypto build_output folder, .cpp or .pto files) to run the "
             "codegen lint over")


@pytest.fixture(scope="session")
def pto_cpp(request) -> Path:
    value = request.config.getoption("accel_pto_cpp")
    if not value:
        pytest.skip("no ptoas C++ given: pass --pto-cpp DIR (a pypto build_output folder) to lint it")
    path = Path(value)
    if not path.exists():
        raise pytest.UsageError(f"--pto-cpp {value}: no such file or directory")
    return path
