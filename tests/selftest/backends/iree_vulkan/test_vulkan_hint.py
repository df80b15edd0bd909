"""What to install when no Vulkan device opens (backends/iree_vulkan/device.py, hint): on the first
GPU machine NVIDIA's manifest named libGLX_nvidia.so.0 (file_format_version 1.0.1, as the loader's
VK_LOADER_DEBUG=driver printed it there) and vkCreateInstance failed with
VK_ERROR_INCOMPATIBLE_DRIVER until glvnd's libGLdispatch was installed; the lavapipe hint said
nothing useful there."""
import ctypes.util
import json

import pytest

from accel_regress.backends.iree_vulkan import device


@pytest.fixture
def manifest(tmp_path, monkeypatch):
    def write(library: str):
        path = tmp_path / "icd.json"
        path.write_text(json.dumps({"file_format_version": "1.0.1",
                                    "ICD": {"library_path": library, "api_version": "1.4.312"}}))
        monkeypatch.setenv("VK_DRIVER_FILES", str(path))
        monkeypatch.delenv("VK_ICD_FILENAMES", raising=False)
        return path
    return write


def _glvnd(monkeypatch, present: bool):
    real = ctypes.util.find_library
    monkeypatch.setattr(ctypes.util, "find_library",
                        lambda name: ("libGLdispatch.so.0" if present else None) if name == "GLdispatch" else real(name))


def test_nvidia_without_glvnd_says_so(manifest, monkeypatch):
    path = manifest("libGLX_nvidia.so.0")
    _glvnd(monkeypatch, present=False)
    said = device.hint()
    assert "libglvnd0" in said and "libGLX_nvidia.so.0" in said and str(path) in said


@pytest.mark.parametrize("library, glvnd", [("libGLX_nvidia.so.0", True), ("libvulkan_lvp.so", False)])
def test_otherwise_the_lavapipe_hint(manifest, monkeypatch, library, glvnd):
    manifest(library)
    _glvnd(monkeypatch, present=glvnd)
    assert device.hint() == device.APT_HINT
