"""Registrations that cannot be used (hardware/core/registry.py, hardware/core/contracts.py): a typo
is a usage error naming the distribution, group, name and import error, and ``python -m
accel_regress`` lists it as BROKEN; a module that lacks part of its contract is named with what it
lacks when it is loaded, never a device FAIL per case."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import accel_regress
from accel_regress.core import contracts, registry

REPO = Path(accel_regress.__file__).resolve().parents[1]

pytest_plugins = ["pytester"]

GOOD = {
    "golden_twice.py": '''
        import numpy as np
        OP = "twice"
        def make_inputs(case):
            return {"x": np.arange(4.0)}
        def output_contract(case):
            return {"out": ("float64", (4,))}
        def reference(case, inputs):
            return {"out": 2 * inputs["x"]}
        def tolerances(case, inputs, ref):
            from accel_regress.golden.tolerance import exact_model
            return {"out": exact_model(ref["out"].shape)}
    ''',
    "emu_twice.py": '''
        def run(case, inputs):
            return {"out": 2 * inputs["x"]}
        def off_by_one(case, outputs):
            return {"out": outputs["out"] + 1}
        FAULTS = {"twice-off-by-one": off_by_one}
    ''',
    "__init__.py": '''
        from accel_regress.core.backend import Backend
        class ToyBackend(Backend):
            kind = "emulator"
            description = "a toy"
            def run(self, case, inputs):
                return {"out": 2 * inputs["x"]}
    ''',
}


def _install(root: Path, entry_points: dict, files: dict = GOOD) -> Path:
    """A distribution as pip leaves it: package ``twice_pkg`` and a .dist-info with its entry points."""
    pkg = root / "twice_pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    for name, text in {**GOOD, **files}.items():
        (pkg / name).write_text(textwrap.dedent(text))
    info = root / "twice_pkg-0.3.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: twice-pkg\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text("".join(f"[{g}]\n{line}\n\n" for g, line in entry_points.items()))
    return root


def _forget():
    for name in [m for m in sys.modules if m == "twice_pkg" or m.startswith("twice_pkg.")]:
        del sys.modules[name]


@pytest.fixture
def team(tmp_path, monkeypatch):
    _forget()

    def install(entry_points, files=GOOD):
        root = _install(tmp_path / "site", entry_points, files)
        monkeypatch.syspath_prepend(str(root))
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), str(REPO)]))
        registry.clear_cache()
        return root
    yield install
    registry.clear_cache()
    _forget()


TEST_TWICE = '''
import pytest
from accel_regress.golden.case import Case
pytestmark = pytest.mark.family("twice")
@pytest.mark.parametrize("i", range(3))
def test_twice(hw, i):
    import numpy as np
    out = hw.run(Case.make("twice", f"c{i}", {}), {"x": np.arange(4.0)})
    assert out["out"].tolist() == [0.0, 2.0, 4.0, 6.0]
'''


def _run(pytester, *args):
    pytester.makepyfile(test_twice=TEST_TWICE)     # the plugin: its installed pytest11 entry point
    return pytester.runpytest_subprocess("--isolation", "none", "-p", "no:cacheprovider", *args)


def _listing():
    return subprocess.run([sys.executable, "-m", "accel_regress"], capture_output=True, text=True)


@pytest.mark.parametrize("group, line, error", [
    ("accel_regress.emu_models", "twice = twice_pkg.emu_twcie", "ModuleNotFoundError: No module named 'twice_pkg.emu_twcie'"),
    ("accel_regress.families", "twice = twice_pkg.golden_twcie", "ModuleNotFoundError: No module named 'twice_pkg.golden_twcie'"),
    ("accel_regress.backends", "toy = twice_pkg:ToyBakend", "AttributeError"),
])
def test_a_registration_that_cannot_be_loaded_is_a_usage_error(team, pytester, group, line, error):
    entry_points = {"accel_regress.emu_models": "twice = twice_pkg.emu_twice",
                    "accel_regress.families": "twice = twice_pkg.golden_twice"}
    team({**entry_points, group: line})
    res = _run(pytester, "--hw", "emu")
    assert res.ret == pytest.ExitCode.USAGE_ERROR, res.stdout.str()
    name, value = (s.strip() for s in line.split("="))
    res.stderr.fnmatch_lines([f"*entry point {name} = {value} (group {group}, distribution twice-pkg 0.3*"
                              f"cannot be loaded: {error}*"])
    assert "Traceback" not in res.stderr.str() and not (pytester.path / "reports" / "results.json").exists()
    out = _listing()
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert any(row.startswith(f"  {name} = {value}  [twice-pkg 0.3") and "BROKEN: " in row and error in row
               for row in out.stdout.splitlines()), out.stdout


def test_the_same_package_registered_correctly_runs(team, pytester):
    team({"accel_regress.emu_models": "twice = twice_pkg.emu_twice",
          "accel_regress.families": "twice = twice_pkg.golden_twice",
          "accel_regress.backends": "toy = twice_pkg:ToyBackend"})
    _run(pytester, "--hw", "emu,toy").assert_outcomes(passed=6)
    assert _listing().returncode == 0


def test_a_backend_missing_its_dependency_stays_unavailable(team):
    team({"accel_regress.backends": "needs = twice_pkg.needs:NeedsBackend"},
         {"needs.py": "import no_such_toolchain_module\n"})
    assert registry.check() is None
    assert "No module named 'no_such_toolchain_module'" in registry.availability("needs")


@pytest.mark.parametrize("kind, files, problem", [
    ("family", {"golden_twice.py": 'OP = "twice"\n'}, "no make_inputs(case)"),
    ("family", {"golden_twice.py": 'OP = "twice"\ndef make_inputs(case): return {}\ndef reference(case, inputs): return {}\n'},
     "no tolerances(case, inputs, ref)"),
    ("family", {"golden_twice.py": 'OP = "twice"\ndef make_inputs(case): return {}\n'
                                   'def tolerances(case, inputs, ref): return {}\n'},
     "no reference(case, inputs)"),
    ("family", {"golden_twice.py": 'OP = "thrice"\ndef make_inputs(case): return {}\ndef reference(case, inputs): return {}\n'
                                   'def tolerances(case, inputs, ref): return {}\n'},
     "its OP is 'thrice', not the name it is registered under"),
    ("family", {"golden_twice.py": 'OP = "twice"\ndef make_inputs(case): return {}\ndef reference(case, inputs): return {}\n'
                                   'def tolerances(inputs, ref): return {}\n'},
     "tolerances(inputs, ref) cannot be called as tolerances(case, inputs, ref)"),
    ("emu_model", {"emu_twice.py": "def run(inputs): return inputs\n"}, "run(inputs) cannot be called as run(case, inputs)"),
    ("emu_model", {"emu_twice.py": "def run(case, inputs): return inputs\n"
                                   "def bad(outputs): return outputs\nFAULTS = {'bad': bad}\n"},
     "FAULTS has faults that break the Fault contract ('bad': bad(outputs) cannot be called as fault(case, outputs))"),
    ("iree_program", {"prog_twice.py": "PROGRAM = 'func.func @main'\n"}, "no program(case)"),
])
def test_a_module_that_breaks_its_contract_is_named_with_what_it_lacks(team, kind, files, problem):
    team({"accel_regress.families": "twice = twice_pkg.golden_twice",
          "accel_regress.emu_models": "twice = twice_pkg.emu_twice",
          "accel_regress.iree_programs": "twice = twice_pkg.prog_twice"}, {**GOOD, "prog_twice.py": "", **files})
    with pytest.raises(registry.RegistrationError) as err:
        registry.module_for(kind, "twice")
    text = str(err.value)
    assert problem in text, text
    group = registry.GROUPS.get(kind) or registry.registrations(kind)["twice"].group
    assert f"group {group}, distribution twice-pkg 0.3" in text
    assert {"family": "GoldenModule", "emu_model": "EmuModel", "iree_program": "IreeProgram"}[kind] in text


def test_a_backend_that_breaks_its_contract_is_a_usage_error(team):
    team({"accel_regress.backends": "toy = twice_pkg.bad:Bad"},
         {"bad.py": "class Bad:\n    kind = 'emulator'\n    def run(self, inputs):\n        return inputs\n"})
    with pytest.raises(registry.RegistrationError) as err:
        registry.check()
    assert "no availability()" in str(err.value) and "run(inputs) cannot be called as run(case, inputs)" in str(err.value)


def test_every_builtin_registration_meets_its_contract():
    registry.clear_cache()
    assert registry.broken() == []
    for kind in registry.kinds():
        for name, reg in registry.registrations(kind).items():
            obj = registry.get(name) if kind == "backend" else reg.load()
            assert contracts.problems(reg.contract() or kind, obj) == [], (kind, name)


# A kind of per-family program the core has never heard of: a backend in an outside package declares
# the group it reads and its contract; registrations in that group are found, checked and listed.
SHADER = {
    "shader.py": '''
        from typing import Protocol
        from accel_regress.core.backend import Backend
        from accel_regress.core.contracts import ProgramKind
        from accel_regress.core import registry
        class ShaderProgram(Protocol):
            def shade(self, case, inputs): ...
        class ShaderProgramOptional(Protocol):
            pass
        SHADERS = ProgramKind("shader_program", "accel_regress.shader_programs", ShaderProgram, ShaderProgramOptional)
        class ShaderBackend(Backend):
            kind = "compiler"
            description = "runs each family's shader program"
            program_kinds = (SHADERS,)
            def supports_op(self, op):
                return None if registry.module_for(SHADERS, op) else "no shader program"
            def run(self, case, inputs):
                return registry.module_for(SHADERS, case.op).shade(case, inputs)
    ''',
    "shader_twice.py": "def shade(case, inputs):\n    return {'out': 2 * inputs['x']}\n",
    "shader_bad.py": "def shade(inputs):\n    return inputs\n",
}


def test_a_new_kind_of_program_needs_no_core_edit(team, pytester):
    team({"accel_regress.families": "twice = twice_pkg.golden_twice",
          "accel_regress.backends": "shader = twice_pkg.shader:ShaderBackend",
          "accel_regress.shader_programs": "twice = twice_pkg.shader_twice"}, {**GOOD, **SHADER})
    assert "shader_program" not in registry.GROUPS and "shader_program" not in contracts.CONTRACTS
    assert registry.check() is None
    assert list(registry.registrations("shader_program")) == ["twice"]
    _run(pytester, "--hw", "shader").assert_outcomes(passed=3)
    listing = _listing()
    assert listing.returncode == 0, listing.stderr
    assert "accel_regress.shader_programs:  (shader_programs)" in listing.stdout


def test_a_program_of_a_new_kind_is_checked_against_the_contract_its_backend_declares(team):
    team({"accel_regress.families": "twice = twice_pkg.golden_twice",
          "accel_regress.backends": "shader = twice_pkg.shader:ShaderBackend",
          "accel_regress.shader_programs": "twice = twice_pkg.shader_bad"}, {**GOOD, **SHADER})
    with pytest.raises(registry.RegistrationError) as err:
        registry.module_for("shader_program", "twice")
    text = str(err.value)
    assert "shade(inputs) cannot be called as shade(case, inputs)" in text and "ShaderProgram" in text, text
    assert "group accel_regress.shader_programs, distribution twice-pkg 0.3" in text
    listing = _listing()
    assert listing.returncode == 2 and "BROKEN: " in listing.stdout, listing.stdout


@pytest.mark.parametrize("args", [("--hw", "emu"), ("--hw", "emu", "-n", "2"), ()], ids=["explicit", "xdist", "collected"])
def test_a_golden_module_without_tolerances_is_one_usage_error_before_any_case(team, pytester, args):
    """Issue 37 item 2. Failed on e6e33d9: every case FAILed with RegistrationError (exit 1) and
    the summary said DON'T SHIP as if the device were wrong."""
    team({"accel_regress.families": "twice = twice_pkg.golden_twice",
          "accel_regress.emu_models": "twice = twice_pkg.emu_twice"},
         {"golden_twice.py": 'OP = "twice"\ndef make_inputs(case):\n    return {}\n'
                           'def reference(case, inputs):\n    return {}\n'})
    res = _run(pytester, *args)
    out = res.stdout.str() + res.stderr.str()
    assert res.ret == pytest.ExitCode.USAGE_ERROR, out
    lines = [line for line in out.splitlines() if "no tolerances(case, inputs, ref)" in line]
    assert len(lines) == 1, out
    assert "entry point twice = twice_pkg.golden_twice (group accel_regress.families" in lines[0], lines
    assert "GoldenModule" in lines[0]           # what it should be
    assert "PASS" not in out and "FAIL" not in out and "DON'T SHIP" not in out and "Traceback" not in out, out
