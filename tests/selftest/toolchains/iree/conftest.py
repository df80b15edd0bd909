import pytest


@pytest.fixture
def compiler_starts(monkeypatch):
    """Every ``iree-compile`` the test starts (its argv), counted where the compiler runs it; no
    per-cache variable moves the IREE cache out of the test's ``$ACCEL_CACHE_DIR``."""
    from accel_regress.toolchains.iree import compiler
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    calls = []
    real = compiler.children.run

    def counting(argv, *a, **k):
        if argv and argv[0] == compiler.tool_path():
            calls.append(argv)
        return real(argv, *a, **k)
    monkeypatch.setattr(compiler.children, "run", counting)
    return calls
