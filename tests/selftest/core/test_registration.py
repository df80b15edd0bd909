"""Registration by entry points (hardware/core/registry.py): the built-ins through this repository's
pyproject.toml, an outside package through its installed metadata, a clash named with both sources."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import accel_regress
from accel_regress.core import faults, registry

REPO = Path(accel_regress.__file__).resolve().parents[1]   # this checkout, not an installed copy

pytest_plugins = ["pytester"]

OUTSIDE = {
    "accel_regress.backends": "toy = outside_pkg:ToyBackend",
    "accel_regress.emu_models": "twice = outside_pkg.emu_twice",
    "accel_regress.families": "twice = outside_pkg.golden_twice",
}


def _install(root, entry_points: dict, name="outside-pkg"):
    """A distribution as pip leaves it: a package and a .dist-info with entry_points.txt."""
    pkg = root / "outside_pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(textwrap.dedent('''
        from accel_regress.core.backend import Backend
        class ToyBackend(Backend):
            kind = "emulator"
            description = "a toy"

        class NeedsFileBackend(Backend):
            """Reads a file of its package at run time, which this installation lacks."""
            kind = "emulator"
            package_files = ("outside_pkg:kernels/twice.c",)
            def run(self, case, inputs):
                import pathlib
                pathlib.Path(__file__).with_name("kernels").joinpath("twice.c").read_text()
                return {"out": 2 * inputs["x"]}
    '''))
    (pkg / "emu_twice.py").write_text(textwrap.dedent('''
        def run(case, inputs):
            return {"out": 2 * inputs["x"]}
        def off_by_one(case, outputs):
            return {"out": outputs["out"] + 1}
        FAULTS = {"outside-off-by-one": off_by_one}
    '''))
    (pkg / "golden_twice.py").write_text('OP = "twice"\ndef make_inputs(case):\n    return {}\n'
                                         'def reference(case, inputs):\n    return {}\n'
                                         'def tolerances(case, inputs, ref):\n    return {}\n')
    info = root / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("".join(f"[{g}]\n{line}\n\n" for g, line in entry_points.items()))
    return root


@pytest.fixture
def outside(tmp_path, monkeypatch):
    def install(entry_points=OUTSIDE, **kw):
        root = _install(tmp_path / "site", entry_points, **kw)
        monkeypatch.syspath_prepend(str(root))
        registry.clear_cache()
        return root
    yield install
    registry.clear_cache()


def test_builtins_come_from_this_repository_pyproject():
    regs = registry.registrations("backend")
    assert list(regs)[:3] == ["emu", "iree-cpu", "qemu-rvv"]
    assert all("accel-regress" in r.source and "pyproject.toml" in r.source for r in regs.values())
    assert registry.KNOWN["emu"] == "accel_regress.backends.emu:EmuBackend"
    # a registered family's golden module says the id it is registered under
    for op, reg in registry.registrations("family").items():
        assert registry.module_for("family", op).OP == op, reg


def test_outside_package_registers_backend_model_family_and_fault(outside):
    outside()
    assert registry.get("toy").description == "a toy"
    assert "outside-pkg 0.1" in registry.registrations("backend")["toy"].source
    assert registry.get("emu").supports_op("twice") is None
    assert registry.module_for("family", "twice").OP == "twice"
    assert "outside-off-by-one" in faults.builtin()
    assert registry.parse("toy,emu") == ["toy", "emu"]


def test_a_clash_names_both_sources(outside):
    outside({"accel_regress.backends": "emu = outside_pkg:ToyBackend"})
    with pytest.raises(registry.RegistrationError) as err:
        registry.registrations("backend")
    text = str(err.value)
    assert "'emu' is registered twice" in text
    assert "accel_regress.backends.emu:EmuBackend by accel-regress" in text and "outside_pkg:ToyBackend by outside-pkg 0.1" in text


def test_a_clash_is_a_usage_error_and_listed_by_python_m_hardware(outside, pytester, monkeypatch):
    root = outside({"accel_regress.emu_models": "matmul = outside_pkg.emu_twice"})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), str(REPO)]))
    pytester.makepyfile(test_x="def test_x(hw): pass")
    res = pytester.runpytest_subprocess("--hw", "emu", "--isolation", "none")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*emu model 'matmul' is registered twice*accel_regress.families.matmul.emu by accel-regress*"
                              "outside_pkg.emu_twice by outside-pkg 0.1*"])
    out = subprocess.run([sys.executable, "-m", "accel_regress"], capture_output=True, text=True)
    assert out.returncode == 2 and "registered twice" in out.stderr and "Traceback" not in out.stderr


def test_python_m_hardware_lists_each_registration_with_its_source(outside):
    root = outside()
    out = subprocess.run([sys.executable, "-m", "accel_regress"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO)])})
    assert out.returncode == 0, out.stderr
    assert "toy = outside_pkg:ToyBackend  [outside-pkg 0.1 (installed" in out.stdout
    assert "twice = outside_pkg.emu_twice  [outside-pkg 0.1" in out.stdout
    assert "emu = accel_regress.backends.emu:EmuBackend  [accel-regress 0.1.0 (source checkout" in out.stdout


def test_a_missing_packaged_file_is_a_setup_error_naming_it(outside, pytester, monkeypatch):
    root = outside({"accel_regress.backends": "needs-file = outside_pkg:NeedsFileBackend",
                    "accel_regress.emu_models": "twice = outside_pkg.emu_twice"})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), str(REPO)]))
    pytester.makepyfile(test_x=textwrap.dedent('''
        import numpy as np, pytest
        from accel_regress.golden.case import Case
        pytestmark = pytest.mark.family("twice")
        def test_twice(hw):
            hw.run(Case.make("twice", "x", {}), {"x": np.ones(3)})
    '''))
    res = pytester.runpytest_subprocess("--hw", "needs-file", "--isolation", "none")
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines(["E*SetupError: backend needs-file cannot be set up*kernels/twice.c*"])
    case = json.loads((pytester.path / "reports" / "results.json").read_text())["cases"][0]
    assert (case["verdict"], case["stage"]) == ("FAIL", "setup") and "kernels/twice.c" in case["message"]
    listing = subprocess.run([sys.executable, "-m", "accel_regress"], capture_output=True, text=True).stdout
    assert "set-up error: the installation lacks" in listing
