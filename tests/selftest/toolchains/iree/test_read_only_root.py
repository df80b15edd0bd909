"""Issue 47 defect 1: a cache root that cannot be written (a read-only mount, a copy restored
read-only) made every warm iree-cpu case a CRASH (OSError: Read-only file system on the claim).
A valid warm entry is read without writing anything; what the root lacks is compiled into a
temporary folder, said once as a setup line, never a device verdict. The root is made read-only
for real: a read-only bind mount (as root) or chmod (as another user)."""
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability()))
pytest_plugins = ["pytester"]

ADD = "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n" \
      "  %0 = arith.addf %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
SUB = ADD.replace("addf", "subf")
MUL = ADD.replace("addf", "mulf")


def _flags():
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    return HOST_FLAGS


@pytest.fixture
def read_only():
    made = []

    def make(path: Path) -> None:
        if os.geteuid() == 0:
            proc = subprocess.run(["mount", "--bind", "-o", "ro", str(path), str(path)], capture_output=True, text=True)
            if proc.returncode:
                pytest.skip(f"no read-only bind mount here: {proc.stderr.strip()}")
            made.append(("mount", path))
        else:
            for folder, _, _ in os.walk(path):
                os.chmod(folder, 0o555)
            made.append(("chmod", path))
        with pytest.raises(OSError):
            (path / "probe").write_text("x")
    yield make
    for how, path in made:
        if how == "mount":
            subprocess.run(["umount", str(path)], check=True)
        else:
            for folder, _, _ in os.walk(path):
                os.chmod(folder, 0o755)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.delenv("ACCEL_GOLDEN_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    _new_process()
    yield tmp_path / "cache"
    _new_process()


def _new_process():
    compiler._verified.clear()
    for memo in ("_states", "_scratch_built"):
        getattr(compiler, memo, {}).clear()
    from accel_regress.core import build_seal
    build_seal._said.clear()


def _listing(root: Path) -> list:
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_a_warm_entry_is_read_without_writing_and_the_rest_compiles_aside(cache, read_only, capsys):
    warm = compiler.compile_cached(ADD, _flags(), name="add")
    read_only(cache)
    before = _listing(cache)
    _new_process()
    capsys.readouterr()
    again = compiler.compile_cached(ADD, _flags(), name="add")
    assert again.cached and again.dir == warm.dir
    cold = compiler.compile_cached(SUB, _flags(), name="sub")
    assert not cold.cached and cache not in cold.dir.parents and cold.vmfb.is_file()
    assert compiler.compile_cached(SUB, _flags(), name="sub").dir == cold.dir    # once per session
    assert compiler.compile_batch([MUL, MUL.replace("@f", "@g")], _flags()) is None
    assert _listing(cache) == before
    assert capsys.readouterr().err.count("is read-only") == 1


# Three f32 reductions: compile ahead puts their programs in one batch, each case reading the
# batch's entry through its link (the path that claimed before looking, on 60769d1).
REDUCTIONS = textwrap.dedent("""
    import pytest
    from accel_regress.golden import assert_close
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.plugin.ahead import case_fixture

    pytestmark = pytest.mark.family(R.OP)

    @pytest.fixture(scope="module")
    def cfg(request):
        return request.param

    @case_fixture
    def case(cfg, golden_seed):
        return R.make_case(cfg[0], cfg[1], "v", 256, golden_seed)

    @pytest.mark.parametrize("cfg", [("row_sum", (4, 33)), ("softmax", (4, 33)), ("mean_var", (8, 17))],
                             indirect=True, ids=str)
    def test_reduction(hw, case):
        inputs = R.make_inputs(case)
        got, ref = hw.run(case, inputs), R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        for name in R.output_names(case.params["kind"]):
            assert_close(got[name], ref[name], tol=tol[name], name=name, zero_sign=R.zero_sign(case))
""")


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_session_on_a_read_only_root_passes(cache, read_only, pytester, warm):
    pytester.makepyfile(test_reductions=REDUCTIONS)
    cache.mkdir(parents=True)
    if warm:
        pytester.runpytest("--hw", "iree-cpu", "--accel-compile-ahead", "2").assert_outcomes(passed=3)
        assert list((cache / "iree" / compiler.BATCHED).glob("*.json")), "no batch: the path under test not taken"
    read_only(cache)
    _new_process()
    res = pytester.runpytest("--hw", "iree-cpu", "--accel-compile-ahead", "2")
    res.assert_outcomes(passed=3)
    assert "CRASH" not in res.stdout.str()
