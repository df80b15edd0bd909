"""Every command the README shows runs as written, with the exit status its comment promises
(issue 48: the README's first install line failed). A command added to the README without an
entry here fails this test, and so does an entry the README no longer shows.

Each runs from a scratch folder with the checkout's paths (tests/..., repros/...) made absolute,
so what it writes (reports/) stays there; the user's caches, history and settings are swapped for
scratch ones. The make targets are checked with ``make -n`` (they exist and run what the README
says): ``make test`` is what CI runs (.ci/run), tier by tier (scripts/test_tiers.py, whose tiers
test_test_tiers.py holds to the README's words); it builds the docs and runs this test.

The install lines run in a copy of the checkout, into a scratch venv that sees this machine's
site-packages (torch, IREE: nothing downloaded). There this checkout is installed already (set-up's
``pip install -e .``), and pip would keep that one for the wheel of the same version, so they run
with ``PIP_IGNORE_INSTALLED=1 PIP_NO_DEPS=1`` (pip's own settings, the command lines unchanged: the
named packages are installed, their dependencies are the machine's); then the venv must import
accel_regress from its own site-packages and list the team's backend. The README's pyproject line
(a direct reference to the wheel) is installed by pip as a dependency, with its resolution.
"""
import shutil
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]
CHECKOUT_FOLDERS = ("tests/", "repros/", "examples/", "benchmarks/", "scripts/")

# command as the README writes it (its comment left out) -> exit status, and a line its output holds
EXPECTED = {
    "make suite": (0, "pytest tests --ignore=tests/selftest"),
    "make test": (0, "scripts/test_tiers.py"),
    "make docs": (0, "sphinx -W --keep-going"),
    "python -m accel_regress --help": (0, "new-family    Write a working operator family into your own package."),
    "python -m accel_regress": (0, "default --hw here:"),
    "pytest --hw emu tests/test_gemm_partition_n.py -k M64-K512-N256": (0, "20 passed"),
    "python -m accel_regress gate reports/results.json": (0, "SHIP"),
    "pytest --hw emu tests/test_gemm_partition_n.py -k M64-K512-N256 --inject-fault iron-gemm-stale-dma":
        (1, "DON'T SHIP"),
    "python repros/gemm_partition_n.py --hw emu --fault iron-gemm-stale-dma": (1, "C_1"),
    # Install lines: run by test_readme_install_lines_install.
    "python -m pip wheel --no-deps -w dist .": (0, ""),
    "pip install 'dist/accel_regress-0.1.0-py3-none-any.whl[iree]'": (0, ""),
    "pip install --find-links dist -e examples/outside-operator": (0, ""),
}
INSTALLS = [c for c in EXPECTED if c.startswith(("pip ", "python -m pip "))]
# What a copy of the checkout needs to build the wheel and install the example (scripts/wheel_check.sh's list).
WHEEL_SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "hardware", "golden", "families",
                 "examples/outside-operator")


def readme_commands(text: str) -> list[str]:
    """The command lines of the README's ```sh blocks, comments left out, in order."""
    out = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


def _argv(command: str) -> tuple[list[str], Path]:
    words = shlex.split(command)
    if words[0] == "make":
        return ["make", "-n", "--no-print-directory", *words[1:]], REPO
    words = [str(REPO / w) if w.startswith(CHECKOUT_FOLDERS) and (REPO / w).exists() else w for w in words]
    if words[0] == "python":
        return [sys.executable, *words[1:]], None
    if words[0] == "pytest":
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[1:]], None
    raise AssertionError(f"README command {command!r}: no way to run it here")


def _scratch_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_", "XDG_", "PYTEST_"))}
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        (tmp_path / name).mkdir()
        env[name] = str(tmp_path / name)
    env["ACCEL_HISTORY"] = "none"
    return env


def test_readme_lists_only_commands_this_test_runs():
    readme = REPO / "README.md"
    if not readme.is_file():
        pytest.skip("not a source checkout")
    shown = readme_commands(readme.read_text())
    assert sorted(shown) == sorted(EXPECTED), (
        f"README commands not run here: {sorted(set(shown) - set(EXPECTED))}; "
        f"run here but not in the README: {sorted(set(EXPECTED) - set(shown))}")


def test_readme_commands_run_as_written(tmp_path):
    readme = REPO / "README.md"
    if not readme.is_file():
        pytest.skip("not a source checkout")
    work = tmp_path / "work"
    work.mkdir()
    env = _scratch_env(tmp_path)
    for command in readme_commands(readme.read_text()):
        if command not in EXPECTED or command in INSTALLS:
            continue        # the test above names it; the install lines are the next test's
        status, line = EXPECTED[command]
        argv, cwd = _argv(command)
        res = subprocess.run(argv, cwd=cwd or work, env=env, capture_output=True, text=True, timeout=900)
        out = res.stdout + res.stderr
        assert res.returncode == status, f"{command}: exit {res.returncode}, not {status}\n{out[-3000:]}"
        assert line in out, f"{command}: its output lacks {line!r}\n{out[-3000:]}"


def test_readme_install_lines_install(tmp_path):
    readme = REPO / "README.md"
    if not readme.is_file():
        pytest.skip("not a source checkout")
    checkout = tmp_path / "checkout"
    for name in WHEEL_SOURCES:
        src, dst = REPO / name, checkout / name
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "reports"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    venv = tmp_path / "venv"
    # --without-pip: the venv runs the machine's pip (the venv's bundled one is older than torch needs).
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    env = {**_scratch_env(tmp_path), "PIP_IGNORE_INSTALLED": "1", "PIP_NO_DEPS": "1",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    for command in readme_commands(readme.read_text()):
        if command not in INSTALLS:
            continue
        words = shlex.split(command)
        argv = [py, *words[1:]] if words[0] == "python" else [py, "-m", *words]
        res = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, timeout=900)
        assert res.returncode == EXPECTED[command][0], f"{command}: exit {res.returncode}\n{(res.stdout + res.stderr)[-3000:]}"
    where = subprocess.run([py, "-c", "import accel_regress, gelu_ops; print(accel_regress.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    assert where.returncode == 0 and where.stdout.startswith(str(venv)), where.stdout + where.stderr
    listing = subprocess.run([str(venv / "bin" / "accel-regress")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "gelu-toy = gelu_ops.toy_backend:ToyBackend  [gelu-ops 0.1.0" in listing.stdout, listing.stdout[-3000:]

    # An outside team's pyproject that names the wheel by a direct reference: pip installs it with
    # its dependencies resolved (here every one is on the machine already).
    wheel = next((checkout / "dist").glob("accel_regress-*.whl"))
    team = tmp_path / "team"
    (team / "src" / "team_ops").mkdir(parents=True)
    (team / "src" / "team_ops" / "__init__.py").write_text("")
    (team / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "team-ops"\nversion = "0.1.0"\n'
        f'dependencies = ["accel-regress[iree] @ {wheel.as_uri()}"]\n')
    env = {k: v for k, v in env.items() if k not in ("PIP_IGNORE_INSTALLED", "PIP_NO_DEPS")}
    res = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation", str(team)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
