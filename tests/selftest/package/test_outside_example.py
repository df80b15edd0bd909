"""examples/outside-operator (an operator team's own package) through its registrations alone:
its tests pass on emu and on its toy backend, and fail with its documented fault. The full path
(built wheels, a scratch venv, a folder outside this tree, iree-cpu and qemu-rvv) is
scripts/wheel_check.sh, which CI runs."""
import json
import os
import shutil
import tomllib
from pathlib import Path

import pytest

import accel_regress

pytest_plugins = ["pytester"]

REPO = Path(accel_regress.__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "outside-operator"


@pytest.fixture
def team(pytester, monkeypatch):
    """The example's tests in a folder of their own; its package importable and registered (a
    .dist-info with its pyproject's entry points, as pip would write it)."""
    if not EXAMPLE.is_dir():
        pytest.skip("not a source checkout")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    site = pytester.path / "site"
    info = site / "gelu_ops-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for group, eps in project["entry-points"].items()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(EXAMPLE / "src"), str(REPO)]))
    shutil.copytree(EXAMPLE / "tests", pytester.path / "tests")
    return pytester


def _verdicts(pytester):
    data = json.loads((pytester.path / "reports" / "results.json").read_text())
    return sorted((c["backend"], c["verdict"]) for c in data["cases"])


def test_example_passes_on_emu_and_its_toy_backend(team):
    res = team.runpytest_subprocess("tests", "--isolation", "none", "--hw", "emu,gelu-toy")
    res.assert_outcomes(passed=6)
    assert _verdicts(team) == [("emu", "PASS")] * 3 + [("gelu-toy", "PASS")] * 3


def test_example_fails_with_its_documented_fault(team):
    res = team.runpytest_subprocess("tests", "--isolation", "none", "--hw", "emu,gelu-toy", "--inject-fault", "gelu-tanh-approx")
    res.assert_outcomes(failed=6)
    assert _verdicts(team) == [("emu", "FAIL")] * 3 + [("gelu-toy", "FAIL")] * 3
    res.stdout.fnmatch_lines(["*y is not close to the reference!*"])


def test_error_model_is_not_vacuous():
    """The clean emu output uses a real share of its allowance, and the fault exceeds it manyfold."""
    import sys
    sys.path.insert(0, str(EXAMPLE / "src"))
    try:
        from gelu_ops import emu, golden
    finally:
        sys.path.remove(str(EXAMPLE / "src"))
    import numpy as np
    case = golden.make_case((4099,))
    inputs = golden.make_inputs(case)
    ref, got = golden.reference(case, inputs)["y"], emu.run(case, inputs)["y"]
    tol = golden.tolerances(case, inputs, golden.reference(case, inputs))["y"].tol
    ratio = np.max(np.abs(got - ref) / tol)
    assert 0.01 < ratio <= 1.0
    bad = emu.FAULTS["gelu-tanh-approx"](case, {"y": got})["y"]
    assert np.max(np.abs(bad - ref) / tol) > 10


def test_example_keeps_torch_out_of_the_pytest_process(team):
    """gelu-toy runs torch's GELU, in the isolated worker only: versions() reads torch's version
    from the installed metadata."""
    team.makeconftest("import sys\n"
                      "def pytest_sessionfinish(session):\n"
                      "    open('torch-in-pytest.txt', 'w').write(str('torch' in sys.modules))\n")
    team.runpytest_subprocess("tests", "--hw", "emu,gelu-toy").assert_outcomes(passed=6)
    assert (team.path / "torch-in-pytest.txt").read_text() == "False"


def test_example_output_contract_fails_a_float64_result(team):
    """Right values in a wrong dtype are a FAIL naming the contract, before any comparison."""
    fault = team.path / "widen.py"
    fault.write_text("import numpy as np\n"
                     "def widen(case, outputs):\n"
                     "    return {**outputs, 'y': outputs['y'].astype(np.float64)}\n")
    res = team.runpytest_subprocess("tests", "--isolation", "none", "--hw", "emu", "--inject-fault", f"{fault}:widen")
    res.assert_outcomes(failed=3)
    res.stdout.fnmatch_lines(["*broke the gelu output contract: y: expected float32 (64,), got float64 (64,)*"])
