"""iree-cpu: generic over operators, compile cache, COMPILE_ERROR with the diagnostic."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress.families.f32_reduction import golden as R
from accel_regress.golden.case import Case
from accel_regress import CompileError
from accel_regress.toolchains.iree import compiler
from accel_regress.toolchains.iree.program import Program
from accel_regress.backends.iree_cpu import IreeCpuBackend


@pytest.fixture(scope="module")
def backend():
    b = IreeCpuBackend()
    reason = b.availability()
    if reason:
        pytest.skip(reason)
    return b


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_IREE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_supports_any_op_with_a_program():
    b = IreeCpuBackend()
    assert "no iree program for operator 'no_such_op'" in b.supports(Case("no_such_op", "x", {}))
    assert b.supports(R.make_case("softmax", (64, 64))) is None
    assert "no meaning on the host" in b.supports(R.make_case("softmax", (64, 64), "novec"))


def test_versions(backend):
    v = backend.versions()
    assert v["iree-compiler"].startswith("3.13") and v["iree-runtime"] == "3.13.0"


def test_compile_is_cached_by_text_flags_and_version(backend, cache):
    case = R.make_case("row_sum", (4, 7))
    first = backend.compile(case)
    again = backend.compile(case)
    assert not first.cached and again.cached and again.dir == first.dir and first.vmfb.is_file()
    other = backend.compile(R.make_case("row_sum", (4, 33)))
    assert other.dir != first.dir
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]   # no temporary folders left


def test_compile_error_carries_the_diagnostic(backend, cache, monkeypatch):
    bad = Program(mlir="func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  return %y : tensor<4xf32>\n}\n",
                  entry="main", inputs=("x",), outputs=("y",))
    with pytest.raises(CompileError) as info:
        backend.compile(Case("row_sum", "bad", {}), bad)
    assert "undefined" in info.value.detail["diagnostic"] or "use of undeclared" in info.value.detail["diagnostic"]
    assert info.value.stage == "compile" and "iree-compile failed" in info.value.message
    assert not list(cache.iterdir()) or not [p for p in cache.iterdir() if p.name.startswith(".")]


def test_run_matches_reference(backend):
    case = R.make_case("softmax", (R.TAIL_ROWS, 33))
    inputs = R.make_inputs(case)
    out = backend.run(case, inputs)
    ref = R.reference(case, inputs)
    tol = R.tolerances(case, inputs, ref)
    assert out["y"].dtype == np.float32 and np.all(np.abs(out["y"] - ref["y"]) <= tol["y"])


def test_missing_wheel_reason(monkeypatch):
    monkeypatch.setattr(compiler, "tool_path", lambda: None)
    assert "pip install iree-base-compiler==3.13.0" in compiler.availability()


def test_compile_cache_is_outside_the_checkout(monkeypatch, tmp_path):
    # A fresh clone or a second checkout finds the programs compiled by the first one.
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.delenv("ACCEL_CACHE_DIR", raising=False)     # the one root, when a CI job sets it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiler.cache_root() == tmp_path / "accel-regress" / "iree"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compiler.cache_root() == Path.home() / ".cache" / "accel-regress" / "iree"


_COMPILE_TWICE = """
import sys
from accel_regress.families.f32_reduction import golden as R
from accel_regress.backends.iree_cpu import IreeCpuBackend
print(IreeCpuBackend().compile(R.make_case("row_sum", (4, 9))).dir)
"""


def test_concurrent_compiles_of_one_program_share_one_entry(backend, cache):
    root = Path(__file__).resolve().parents[4]
    env = {**os.environ, "PYTHONPATH": str(root)}
    procs = [subprocess.Popen([sys.executable, "-c", _COMPILE_TWICE], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=300)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert len(set(outs)) == 1 and (Path(outs[0]) / compiler.VMFB).is_file()
    assert [p.name for p in cache.iterdir()] == [Path(outs[0]).name]     # no temporary folder left
