"""The wheel: every non-Python file of the packages (C harness, bare-metal runtime, probes) is in it,
and so are the entry points (pytest11 and the registrations)."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
# The repository's folders and where the wheel puts them (setup.py).
FOLDERS = {"hardware": "accel_regress", "golden": "accel_regress/golden", "families": "accel_regress/families"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")
    src = tmp_path_factory.mktemp("src")
    # Built from a copy, so the checkout gets no build/ or egg-info.
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", *FOLDERS):
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(
            REPO / name, src / name, **({"ignore": shutil.ignore_patterns("__pycache__")} if (REPO / name).is_dir() else {}))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return zipfile.ZipFile(next(out.glob("accel_regress-*.whl")))


def test_wheel_carries_every_non_python_file(wheel):
    names = set(wheel.namelist())
    wanted = sorted(f"{FOLDERS[pkg]}/{p.relative_to(REPO / pkg).as_posix()}" for pkg in FOLDERS
                    for p in (REPO / pkg).rglob("*")
                    if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts)
    assert wanted, "expected the C harness and the bare-metal runtime"
    assert "accel_regress/backends/qemu_rvv/harness/harness.c" in wanted
    assert [w for w in wanted if w not in names] == []


def test_wheel_declares_the_plugin_and_the_builtin_registrations(wheel):
    eps = next(wheel.read(n).decode() for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "[pytest11]\naccel-regress = accel_regress.plugin" in eps
    assert "[accel_regress.backends]" in eps and "emu = accel_regress.backends.emu:EmuBackend" in eps
    assert "[accel_regress.families]" in eps and "[accel_regress.emu_models]" in eps


def test_wheel_declares_ranges_licence_and_authors(wheel):
    """An outside team on another torch or IREE can install it; the exact pins are this
    repository's own (constraints.txt)."""
    import email.parser
    meta = email.parser.Parser().parsestr(next(wheel.read(n).decode() for n in wheel.namelist()
                                               if n.endswith(".dist-info/METADATA")))
    requires = meta.get_all("Requires-Dist")
    assert not [r for r in requires if "==" in r.partition(";")[0]], requires
    assert any(r.startswith("torch") and ">=" in r and "<" in r for r in requires), requires
    assert any(r.startswith("iree-base-compiler") and ">=" in r and 'extra == "iree"' in r for r in requires), requires
    assert meta["License-Expression"] == "Apache-2.0" and meta["Author"]
    assert "LICENSE" in meta.get_all("License-File")
    licence = next(n for n in wheel.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
    assert wheel.read(licence).decode().split()[:2] == ["Apache", "License"]
    pins = (REPO / "constraints.txt").read_text()
    assert "torch==2.13.0" in pins and "iree-base-compiler==3.13.0" in pins


def test_wheel_says_what_it_is(wheel):
    """Issue 48: a pytest plugin's classifier, PEP 561's marker, one version: the wheel's, which
    accel_regress.__version__ reads (0+unknown only in a checkout never installed)."""
    import email.parser
    meta = email.parser.Parser().parsestr(next(wheel.read(n).decode() for n in wheel.namelist()
                                               if n.endswith(".dist-info/METADATA")))
    classifiers = meta.get_all("Classifier") or []
    assert "Framework :: Pytest" in classifiers and "Typing :: Typed" in classifiers, classifiers
    assert not [c for c in classifiers if c.startswith("License ::")], "PEP 639: the licence is the SPDX expression"
    assert "accel_regress/py.typed" in wheel.namelist()
    assert accel_regress.__version__ == meta["Version"]
    registries = ("pypi.org", "pypi.python.org", "test.pypi.org", "files.pythonhosted.org")
    assert not [u for u in meta.get_all("Project-URL") or [] if any(r in u for r in registries)]
