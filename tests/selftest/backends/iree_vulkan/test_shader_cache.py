"""The Vulkan driver's shader cache lives under the one cache root (backends/iree_vulkan/shader_cache.py):
a CI job that restores the root gets lavapipe's compiled pipelines back, not only IREE's modules.
Failed on 9983a7b: the pipelines went to $XDG_CACHE_HOME/mesa_shader_cache, outside the root."""
import pytest

from accel_regress.core import registry
from accel_regress.families.f32_reduction import golden as R

pytestmark = pytest.mark.skipif(registry.availability("iree-vulkan") is not None,
                                reason=str(registry.availability("iree-vulkan")))


def _run():
    case = R.make_case("row_sum", (4, 33), inputs="normal")
    registry.get("iree-vulkan").run(case, R.make_inputs(case))


def _files(folder):
    return [p for p in folder.rglob("*") if p.is_file()] if folder.is_dir() else []


@pytest.fixture
def roots(tmp_path, monkeypatch):
    for name in ("ACCEL_IREE_CACHE", "MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "root"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


def test_pipelines_are_kept_under_the_cache_root(roots):
    _run()
    assert _files(roots / "root" / "mesa-shader-cache"), "lavapipe wrote no pipeline under the cache root"
    assert not _files(roots / "xdg" / "mesa_shader_cache")


def test_a_users_own_shader_cache_is_left_where_they_put_it(roots, monkeypatch):
    monkeypatch.setenv("MESA_SHADER_CACHE_DIR", str(roots / "theirs"))
    _run()
    assert _files(roots / "theirs") and not (roots / "root" / "mesa-shader-cache").exists()
