"""Issue 47 S2: a symbolic link planted where the suite writes (a claim file, a folder of the cache
root, a folder of the report folder) is removed and refused, never written or cleared through,
and a folder another user owns is refused: the golden store's rule (golden/store_folder.py),
applied through hardware/core/own_folder.py. Each test is an attack 60769d1 fell for (the file
the link names created, the victim's files deleted, the harness linked into the victim)."""
import os

import pytest

from accel_regress.core import verdicts
from accel_regress.results import failure_files, report_dir
from accel_regress.toolchains.iree import compiler


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.delenv("ACCEL_GOLDEN_CACHE_SHARED", raising=False)
    monkeypatch.delenv("MESA_SHADER_CACHE_DIR", raising=False)
    monkeypatch.delenv("MESA_GLSL_CACHE_DIR", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    compiler._verified.clear()
    getattr(compiler, "_states", {}).clear()
    return tmp_path / "cache"


def test_a_planted_claim_link_is_removed_not_created(cache, tmp_path):
    root = compiler.cache_root()
    root.mkdir(parents=True)
    victim = tmp_path / "victim-file"
    (root / ".claim-k").symlink_to(victim)
    with compiler.claim(root, "k", wait_s=None) as held:
        assert held
    assert not victim.exists(), "the claim was created through the planted link"
    assert not (root / ".claim-k").is_symlink()


def test_a_cache_folder_that_is_a_link_is_not_written_through(cache, tmp_path):
    pytest.importorskip("iree.compiler")
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    victim = tmp_path / "victim"
    victim.mkdir()
    cache.mkdir()
    (cache / "iree").symlink_to(victim, target_is_directory=True)
    mlir = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n"
    got = compiler.compile_cached(mlir, HOST_FLAGS, name="f")
    assert got.vmfb.is_file()
    assert not os.listdir(victim), f"written through the planted link: {os.listdir(victim)}"


def test_a_planted_harness_folder_link_is_not_written_through(cache, tmp_path):
    from accel_regress.backends.qemu_rvv import QemuRvvBackend
    if QemuRvvBackend().availability():
        pytest.skip(QemuRvvBackend().availability())
    from pathlib import Path
    import shutil
    from accel_regress.families.f32_reduction import golden as R
    case = R.make_case("row_sum", (4, 33), "v", 256)
    want = QemuRvvBackend().run(case, R.make_inputs(case))
    backend = QemuRvvBackend()
    backend.run(case, R.make_inputs(case))
    entry = Path(backend.last_report["harness"]).parent
    shutil.rmtree(entry)
    victim = tmp_path / "victim"
    victim.mkdir()
    entry.symlink_to(victim, target_is_directory=True)
    compiler._verified.clear()
    got = QemuRvvBackend().run(case, R.make_inputs(case))
    assert got["sum"].tobytes() == want["sum"].tobytes()
    assert not os.listdir(victim), f"the harness was linked into the planted link's target: {os.listdir(victim)}"


def test_a_planted_shader_cache_link_is_not_given_to_mesa(cache, tmp_path):
    from accel_regress.backends.iree_vulkan import shader_cache
    victim = tmp_path / "victim"
    victim.mkdir()
    cache.mkdir()
    (cache / "mesa-shader-cache").symlink_to(victim, target_is_directory=True)
    env = shader_cache.child_env()
    assert env is None or os.path.realpath(env[shader_cache.ENV]) != str(victim)
    assert not (cache / "mesa-shader-cache").is_symlink()


def _detail():
    return {"program": "func.func @f() { return }", "diagnostic": "error: boom\nmore"}


@pytest.mark.parametrize("sub", ["failures", "heatmaps", "arrays"])
def test_a_report_subfolder_link_is_neither_written_nor_cleared(tmp_path, sub):
    r = tmp_path / "reports"
    r.mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    for name in ("keep.png", "keep.npy", "keep.txt"):
        (victim / name).write_text("the victim's")
    (r / sub).symlink_to(victim, target_is_directory=True)
    report_dir.clear(r)
    assert sorted(os.listdir(victim)) == ["keep.npy", "keep.png", "keep.txt"], "cleared through the planted link"
    if sub == "failures":
        (r / sub).unlink(missing_ok=True)
        (r / sub).symlink_to(victim, target_is_directory=True)
        said = failure_files.keep(r, "case-1", verdicts.CRASH, _detail())
        assert sorted(os.listdir(victim)) == ["keep.npy", "keep.png", "keep.txt"], "written through the planted link"
        assert "could not be kept" in said


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_report_subfolder_of_another_user_is_refused(tmp_path):
    r = tmp_path / "reports"
    (r / "failures").mkdir(parents=True)
    os.chown(r / "failures", 65534, 65534)
    said = failure_files.keep(r, "case-1", verdicts.CRASH, _detail())
    assert "could not be kept" in said and "owned by uid 65534" in said
    assert not os.listdir(r / "failures")
    from accel_regress.core import own_folder
    with pytest.raises(own_folder.Refused):
        own_folder.own_subdir(r, "failures")
