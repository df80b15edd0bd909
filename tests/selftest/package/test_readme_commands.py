"""Every command the README shows runs as written, with the exit status its comment promises
(issue 48: the README's first install line failed). A command added to the README without an
entry here fails this test, and so does an entry the README no longer shows.

Each runs from a scratch folder with the checkout's paths (tests/..., repros/...) made absolute,
so what it writes (reports/) stays there; the user's caches, history and settings are swapped for
scratch ones. The two set-up commands are checked with ``make -n`` (the targets exist and run what
the README says): ``make test`` is what CI runs (.ci/run), and it runs this test.
"""
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
    "make test": (0, "sphinx -W"),
    "python -m accel_regress": (0, "default --hw here:"),
    "pytest --hw emu tests/test_gemm_partition_n.py -k M64-K512-N256": (0, "20 passed"),
    "python -m accel_regress gate reports/results.json": (0, "SHIP"),
    "pytest --hw emu tests/test_gemm_partition_n.py -k M64-K512-N256 --inject-fault iron-gemm-stale-dma":
        (1, "DON'T SHIP"),
    "python repros/gemm_partition_n.py --hw emu --fault iron-gemm-stale-dma": (1, "C_1"),
}


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
        if command not in EXPECTED:
            continue        # the test above names it
        status, line = EXPECTED[command]
        argv, cwd = _argv(command)
        res = subprocess.run(argv, cwd=cwd or work, env=env, capture_output=True, text=True, timeout=900)
        out = res.stdout + res.stderr
        assert res.returncode == status, f"{command}: exit {res.returncode}, not {status}\n{out[-3000:]}"
        assert line in out, f"{command}: its output lacks {line!r}\n{out[-3000:]}"
