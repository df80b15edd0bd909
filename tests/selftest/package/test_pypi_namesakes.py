"""Installed beside PyPI's own ``hardware`` and ``golden`` projects, accel-regress is untouched and
touches nothing of theirs (issue 24 item 4): it installs one import package, ``accel_regress``.

Before that change, installing PyPI's ``hardware`` overwrote our ``hardware/__init__.py`` and
uninstalling it deleted the file. The real projects are downloaded from the package index (as CI
can); without it the test says so and skips.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from test_guest_projects import REPO, build_wheel, scratch_venv

NAMESAKES = ("hardware", "golden")


def _run(py: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), *args], capture_output=True, text=True, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def namesakes(tmp_path_factory) -> list[Path]:
    where = tmp_path_factory.mktemp("pypi")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(where), *NAMESAKES],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"PyPI's {' and '.join(NAMESAKES)} could not be downloaded: {proc.stderr.strip()[-300:]}")
    return sorted(where.iterdir())


def test_installed_beside_pypis_hardware_and_golden(namesakes, tmp_path):
    wheel = build_wheel(REPO, tmp_path / "build")
    py = scratch_venv(wheel, tmp_path / "venv")
    site = Path(_run(py, "-c", "import accel_regress, pathlib; print(pathlib.Path(accel_regress.__file__).parents[1])",
                     cwd=tmp_path).stdout.strip())
    ours = sorted(p.relative_to(site).as_posix() for p in (site / "accel_regress").rglob("*") if p.is_file()
                  and "__pycache__" not in p.parts)
    assert not (site / "hardware").exists() and not (site / "golden").exists(), "the wheel installs generic names"

    proc = _run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", *map(str, namesakes),
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    check = ("import accel_regress, golden, hardware; from accel_regress.golden import assert_close; "
             "from accel_regress.core import registry; registry.check(); "
             "print(*hardware.__path__, *golden.__path__)")   # PyPI's golden is a namespace package
    proc = _run(py, "-c", check, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(site / name) for name in NAMESAKES], proc.stdout
    listing = _run(tmp_path / "venv" / "bin" / "accel-regress", cwd=tmp_path)
    assert listing.returncode == 0 and "emu" in listing.stdout, listing.stdout + listing.stderr

    proc = _run(py, "-m", "pip", "uninstall", "-q", "-y", *NAMESAKES, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = sorted(p.relative_to(site).as_posix() for p in (site / "accel_regress").rglob("*") if p.is_file()
                   and "__pycache__" not in p.parts)
    assert after == ours, "uninstalling PyPI's namesakes removed files of accel-regress"
    proc = _run(py, "-c", "import accel_regress.plugin, accel_regress.golden.compare", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
