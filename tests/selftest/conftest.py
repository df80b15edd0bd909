import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "selftest" in item.nodeid.split("::")[0]:
            item.add_marker(pytest.mark.selftest)
