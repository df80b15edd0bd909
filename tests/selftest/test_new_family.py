"""``accel-regress new-family`` (issue 37 item 3): what it writes into a team's own package passes
on emu and iree-cpu as generated and fails under its fault; it overwrites nothing and refuses a
name that cannot be a module.

The team's package is made importable the way ``pip install -e .`` does it: its src/ on the path
and a .dist-info holding the entry points the command wrote into pyproject.toml (importlib.metadata
reads entry_points.txt from there, as it does for any installed distribution). Failed on
e6e33d9: there was no such command ("unknown command 'new-family'")."""
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]


def new_family(root: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accel_regress", "new-family", *args], cwd=root,
                          capture_output=True, text=True, timeout=120)


def team_project(root: Path) -> Path:
    (root / "src" / "swiglu_ops").mkdir(parents=True)
    (root / "src" / "swiglu_ops" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text('[project]\nname = "swiglu-ops"\nversion = "0.1"\n# the team\'s own comment\n')
    return root


def install_metadata(root: Path) -> dict:
    """What pip leaves for an editable install: the entry points in a .dist-info on the path."""
    eps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"]
    info = root / "site" / "swiglu_ops-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: swiglu-ops\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in names.items()) + "\n" for group, names in eps.items()))
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "src"), str(root / "site"), str(REPO)]))


def run_pytest(root: Path, env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "tests/test_swiglu.py", "--history", "none",
                           "-p", "no:cacheprovider", "--report-dir", "rep", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)


def test_generated_family_passes_on_emu_and_iree_cpu_and_fails_under_its_fault(tmp_path):
    root = team_project(tmp_path)
    made = new_family(root, "swiglu")
    assert made.returncode == 0, made.stderr
    assert "# the team's own comment" in (root / "pyproject.toml").read_text()
    env = install_metadata(root)
    green = run_pytest(root, env, "--hw", "emu,iree-cpu")
    assert green.returncode == 0, green.stdout + green.stderr
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    assert sorted((c["backend"], c["verdict"]) for c in cases) == [("emu", "PASS")] * 3 + [("iree-cpu", "PASS")] * 3
    red = run_pytest(root, env, "--hw", "emu,iree-cpu", "--inject-fault", "swiglu-drops-bias")
    assert red.returncode == 1, red.stdout + red.stderr
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    assert [c["verdict"] for c in cases] == ["FAIL"] * 6, [c["verdict"] for c in cases]


def test_it_overwrites_nothing_and_refuses_a_bad_name(tmp_path):
    root = team_project(tmp_path)
    assert new_family(root, "swiglu").returncode == 0
    golden = root / "src" / "swiglu_ops" / "swiglu" / "golden.py"
    golden.write_text("# edited by the team\n")
    again = new_family(root, "swiglu")
    assert again.returncode == 2 and "not overwriting" in again.stderr and "Traceback" not in again.stderr
    assert golden.read_text() == "# edited by the team\n"
    for bad in ("Swi-GLU", "class"):
        out = new_family(root, bad)
        assert out.returncode == 2 and "Python identifier" in out.stderr, out.stderr


@pytest.mark.parametrize("layout", ["none", "two"])
def test_it_asks_which_package_when_it_cannot_tell(tmp_path, layout):
    if layout == "two":
        for name in ("a", "b"):
            (tmp_path / "src" / name).mkdir(parents=True)
            (tmp_path / "src" / name / "__init__.py").write_text("")
    out = new_family(tmp_path, "swiglu")
    assert out.returncode == 2 and "pass --package DIR" in out.stderr, out.stderr
