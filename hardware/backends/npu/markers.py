"""pytest plugin for NPU runs: the ``supported_devices`` marker and the NPU options.

``@pytest.mark.supported_devices("npu4", "npu5", "npu6")`` says which NPU kinds a test is valid
on; on any other NPU the test is SKIP with the reason. Backends that have no device kind (emu,
iree-cpu, ...) are not affected.
"""
from __future__ import annotations

import os

import pytest

from accel_regress.plugin import spelling


def pytest_addoption(parser):
    spelling.add(parser, "npu_artifacts", default=None, metavar="PATH",
                help="npu: manifest of prebuilt xclbins (a manifest.json or its folder); sets $ACCEL_NPU_ARTIFACTS")
    spelling.add(parser, "npu_mode", default=None, choices=("auto", "iron", "artifacts"),
                help="npu: run through IRON, from prebuilt artifacts, or whichever fits (default auto)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "supported_devices(*kinds): NPU kinds (npu1, npu4, npu5, npu6) the test is valid on; "
                   "SKIP on other NPUs")
    # Environment, not config: a run may happen in an isolated child process.
    artifacts = config.getoption("accel_npu_artifacts", None)
    if artifacts:
        os.environ["ACCEL_NPU_ARTIFACTS"] = os.path.abspath(artifacts)
    mode = config.getoption("accel_npu_mode", None)
    if mode:
        os.environ["ACCEL_NPU_MODE"] = mode


def unsupported_reason(item) -> str | None:
    marker = item.get_closest_marker("supported_devices")
    callspec = getattr(item, "callspec", None)
    name = callspec.params.get("hw") if callspec else None
    if marker is None or name is None:
        return None
    from accel_regress.core import registry
    if registry.availability(name) is not None:
        return None
    backend = registry.get(name)
    kind_of = getattr(backend, "device_kind", None)
    if not callable(kind_of):
        return None
    from accel_regress.plugin import isolation
    # This process runs tests: take its device lock now, from the session's locks (the run takes
    # the same one), so that the kind asked about is the kind of the NPU the test will run on.
    isolation.context(item.config).device_env(name)
    kinds = [str(k) for k in marker.args]
    kind = kind_of()
    if kind in kinds:
        return None
    return f"{name}: test runs on {', '.join(kinds)} only; this device is {kind or 'of unknown kind'}"


@pytest.hookimpl(trylast=True)      # after the core plugin has opened the test's record
def pytest_runtest_setup(item):
    reason = unsupported_reason(item)
    if reason:
        pytest.skip(reason)
