"""Installed in an environment, the plugin leaves other projects alone (issue 24 item 3).

The wheel is built from this checkout and installed in a scratch venv (``--system-site-packages``,
``pip --no-index``: torch and IREE come from what set-up installed), next to four small projects
that know nothing of accel-regress (tests/selftest/fixtures/guests/): one with its own ``hw``
fixture, one with its own ``large`` and ``input_classes`` markers, one with a local ``golden.py``
and ``hardware.py``, one using hypothesis's default example database. Each runs twice from a
fresh copy, with the plugin and with ``-p no:accel-regress``, each with its own empty HOME and
TMPDIR, and the two runs must agree on the test ids and outcomes, the counts, the exit code, the
files left in the project, HOME and TMPDIR, and on the heavy modules imported (the plugin must
not pull numpy, torch or IREE into a run that is not its own).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
GUESTS = Path(__file__).parents[1] / "fixtures" / "guests"
# What a wheel build does not need (and the tests' fixtures are large).
_NOT_BUILT = {".git", "tests", "benchmarks", "repros", "examples", "reports", ".cache", "build", "dist",
              ".pytest_cache", ".hypothesis"}
HEAVY = ("numpy", "torch", "iree", "ml_dtypes", "scipy", "matplotlib")

RUNS = [("own_hw", []), ("large_marker", []), ("large_marker", ["-m", "large"]),
        ("large_marker", ["-m", "not input_classes"]), ("local_modules", []), ("hypothesis_db", [])]


def build_wheel(repo: Path, out: Path) -> Path:
    """The accel-regress wheel of ``repo``, built from a copy (the checkout gets no build/ or egg-info)."""
    src = out / "src"
    shutil.copytree(repo, src, ignore=lambda d, names: [
        n for n in names if n == "__pycache__" or n.endswith(".egg-info") or (Path(d) == repo and n in _NOT_BUILT)])
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(out / "dist"), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return next((out / "dist").glob("accel_regress-*.whl"))


def scratch_venv(wheel: Path, where: Path) -> Path:
    """A venv that sees the machine's packages and has the wheel installed (never the checkout)."""
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(where)],
                   check=True, timeout=300)
    py = where / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--ignore-installed",
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    where_from = subprocess.run([str(py), "-c", "import accel_regress; print(accel_regress.__file__)"],
                                capture_output=True, text=True, cwd=where, timeout=120).stdout.strip()
    assert where_from.startswith(str(where)), f"the venv imports accel_regress from {where_from}"
    return py


_OUTCOME = re.compile(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b", re.MULTILINE)
_COLLECTED = re.compile(r"collected (\d+ items?[^\n]*)")
_COUNTS = re.compile(r"^=+ (.*) in [\d.]+s(?: \([^)]*\))? =+$", re.MULTILINE)


def _files(root: Path) -> list[str]:
    """Every file under ``root``; hypothesis's database by folder (its file names are hashes of
    random examples, and its patch files are dated)."""
    out = set()
    for p in root.rglob("*"):
        if p.is_file() or p.is_symlink():
            parts = p.relative_to(root).parts
            out.add("/".join(parts[:2] if parts[0] == ".hypothesis" else parts))
    return sorted(out)


def observe(py: Path, project: Path, args: list[str], work: Path, plugin: bool) -> dict:
    """Run ``project``'s tests from a fresh copy, and what a user of it would see."""
    work.mkdir(parents=True)
    copy, home, tmp = work / project.name, work / "home", work / "tmp"
    shutil.copytree(project, copy)
    home.mkdir()
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ACCEL_", "PYTEST_", "HYPOTHESIS")) and k not in ("PYTHONPATH", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONDONTWRITEBYTECODE="1")
    argv = [str(py), "-X", "importtime", "-m", "pytest", "-v", "-p", "no:cacheprovider", *args]
    if not plugin:
        argv += ["-p", "no:accel-regress"]
    proc = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    imported = {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    counts = _COUNTS.findall(proc.stdout)
    return {"exit": proc.returncode, "outcomes": sorted(_OUTCOME.findall(proc.stdout)),
            "collected": _COLLECTED.findall(proc.stdout), "counts": counts[-1:],
            "files": {"project": _files(copy), "HOME": _files(home), "TMPDIR": _files(tmp)},
            "heavy": sorted(imported & set(HEAVY)), "stdout": proc.stdout}


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory):
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not a source checkout")
    out = tmp_path_factory.mktemp("wheel")
    return scratch_venv(build_wheel(REPO, out), out / "venv")


@pytest.mark.parametrize("project, args", RUNS, ids=[f"{p}{'-' + '_'.join(a).replace(' ', '_') if a else ''}"
                                                      for p, a in RUNS])
def test_guest_project_is_unchanged(venv_python, tmp_path, project, args):
    plain = observe(venv_python, GUESTS / project, args, tmp_path / "plain", plugin=False)
    assert plain["outcomes"] and plain["counts"], plain["stdout"]
    guest = observe(venv_python, GUESTS / project, args, tmp_path / "with", plugin=True)
    for key in ("exit", "outcomes", "collected", "counts", "files", "heavy"):
        assert guest[key] == plain[key], f"{key} differs with the plugin installed:\n{guest['stdout']}"
