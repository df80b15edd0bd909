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


def test_generated_family_passes_on_emu_iree_cpu_and_onnxruntime_and_fails_under_its_fault(tmp_path):
    root = team_project(tmp_path)
    made = new_family(root, "swiglu")
    assert made.returncode == 0, made.stderr
    assert "# the team's own comment" in (root / "pyproject.toml").read_text()
    env = install_metadata(root)
    green = run_pytest(root, env, "--hw", "emu,iree-cpu,onnxruntime")
    assert green.returncode == 0, green.stdout + green.stderr
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    assert sorted((c["backend"], c["verdict"]) for c in cases) == \
        [("emu", "PASS")] * 3 + [("iree-cpu", "PASS")] * 3 + [("onnxruntime", "PASS")] * 3
    red = run_pytest(root, env, "--hw", "emu,iree-cpu,onnxruntime", "--inject-fault", "swiglu-drops-bias")
    assert red.returncode == 1, red.stdout + red.stderr
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    assert [c["verdict"] for c in cases] == ["FAIL"] * 9, [c["verdict"] for c in cases]


def _summary(out: str) -> str:
    return out[out.index("accel-regress summary"):]


def test_plain_pytest_ships_as_generated(tmp_path):
    """Issue 48: `accel-regress new-family x`, then plain `pytest` (every backend available here,
    torch-cpu and onnxruntime among them) says SHIP: the scaffold writes the torch and ONNX programs
    too, and every case of every default backend passes, none NOT_APPLICABLE. Failed on 60769d1:
    DON'T SHIP, 'backend torch-cpu is required by default policy ... but did not run' (no torch
    program), while pytest exited 0; on 64bd3b8 the onnxruntime cases were NOT_APPLICABLE (no ONNX program)."""
    root = team_project(tmp_path)
    made = new_family(root, "swiglu")
    assert made.returncode == 0, made.stderr
    for program in ("emu", "iree_program", "torch_program", "onnx_program"):
        assert (root / "src" / "swiglu_ops" / "swiglu" / f"{program}.py").is_file(), made.stdout
    env = install_metadata(root)
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = _summary(res.stdout)
    assert summary.splitlines()[1].startswith("SHIP"), summary
    cases = json.loads((root / "reports" / "results.json").read_text())["cases"]
    verdicts = {(c["backend"], c["verdict"]) for c in cases}
    assert {("torch-cpu", "PASS"), ("onnxruntime", "PASS"), ("iree-cpu", "PASS")} <= verdicts, sorted(verdicts)
    assert {v for b, v in verdicts} == {"PASS"}, sorted(verdicts)


def test_a_backend_without_the_familys_program_is_not_applicable_and_ships(tmp_path):
    """A family with no program for a selected backend is NOT_APPLICABLE there, said once for the
    family x backend, and blocks nothing. Failed on 60769d1: DON'T SHIP."""
    root = team_project(tmp_path)
    assert new_family(root, "swiglu", "--backend", "emu").returncode == 0
    assert not (root / "src" / "swiglu_ops" / "swiglu" / "torch_program.py").exists()
    env = install_metadata(root)
    res = run_pytest(root, env, "--hw", "emu,torch-cpu")
    assert res.returncode == 0, res.stdout + res.stderr
    summary = _summary(res.stdout)
    assert summary.splitlines()[1].startswith("SHIP"), summary
    assert summary.count("not applicable (3 cases; swiglu on torch-cpu)") == 1, summary
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    assert sorted({(c["backend"], c["verdict"]) for c in cases}) == [("emu", "PASS"), ("torch-cpu", "NOT_APPLICABLE")]


def test_it_writes_the_programs_the_named_backends_read(tmp_path):
    """The kinds of program come from the backends' own declarations (``program_kinds``), not from
    their names: onnxruntime reads the ONNX program, qemu-rvv the IREE program; an unknown backend
    is a usage error."""
    root = team_project(tmp_path)
    made = new_family(root, "swiglu", "--backend", "onnxruntime,qemu-rvv")
    assert made.returncode == 0, made.stderr
    family = root / "src" / "swiglu_ops" / "swiglu"
    assert sorted(p.name for p in family.glob("*.py")) == ["__init__.py", "emu.py", "golden.py", "iree_program.py",
                                                          "onnx_program.py"]
    groups = tomllib.loads((root / "pyproject.toml").read_text())["project"]["entry-points"]
    assert groups["accel_regress.onnx_programs"] == {"swiglu": "swiglu_ops.swiglu.onnx_program"}
    assert "accel_regress.torch_programs" not in groups
    wrong = new_family(team_project(tmp_path / "other"), "swiglu", "--backend", "emu,onnxruntme")
    assert wrong.returncode == 2 and "unknown backend(s) onnxruntme" in wrong.stderr, wrong.stderr


def test_a_family_written_for_the_previous_reference_contract_runs_with_one_warning(tmp_path):
    """Issue 48: reference(inputs) became reference(case, inputs) (contract 2); a family written for
    the previous form keeps working for the deprecation period, with one warning naming the change.
    Failed on 60769d1: exit 4, '... does not meet its contract ...: reference(inputs) cannot be
    called as reference(case, inputs)'."""
    root = team_project(tmp_path)
    assert new_family(root, "swiglu", "--backend", "emu").returncode == 0
    golden = root / "src" / "swiglu_ops" / "swiglu" / "golden.py"
    text = golden.read_text()
    assert "def reference(case: Case, inputs" in text
    golden.write_text(text.replace("def reference(case: Case, inputs", "def reference(inputs"))
    test = root / "tests" / "test_swiglu.py"
    test.write_text(test.read_text().replace("golden.reference(case, inputs)", "golden.reference(inputs)"))
    env = install_metadata(root)
    res = run_pytest(root, env, "--hw", "emu")
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("reference(inputs) became reference(case, inputs) in contract 2") == 1, res.stdout
    assert "AccelRegressDeprecationWarning" in res.stdout


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


@pytest.mark.parametrize("name, said", [("f32_reduction", "already a registered family"),
                                        ("a" * 300, "at most 64")])
def test_it_refuses_a_registered_or_overlong_id(tmp_path, name, said):
    """Issue 47 defect 10: on 60769d1 f32_reduction was written and registered (once installed,
    every session in that environment stopped at the duplicate), a 300-character id a traceback."""
    root = team_project(tmp_path)
    out = new_family(root, name)
    assert out.returncode == 2 and said in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (root / "src" / "swiglu_ops" / name[:64]).exists()
    assert "entry-points" not in (root / "pyproject.toml").read_text()


@pytest.mark.parametrize("layout", ["none", "two"])
def test_it_asks_which_package_when_it_cannot_tell(tmp_path, layout):
    if layout == "two":
        for name in ("a", "b"):
            (tmp_path / "src" / name).mkdir(parents=True)
            (tmp_path / "src" / name / "__init__.py").write_text("")
    out = new_family(tmp_path, "swiglu")
    assert out.returncode == 2 and "pass --package DIR" in out.stderr, out.stderr


def test_a_compile_error_keeps_program_command_and_output_in_the_report_folder(tmp_path):
    """Issue 37 item 3: the program, the command lines and iree-compile's output of a COMPILE_ERROR
    stay in the report folder and the message points there. Failed on e6e33d9: the message cited
    .../program.mlir:N:M in a temporary folder deleted before the run ended."""
    root = team_project(tmp_path)
    assert new_family(root, "swiglu").returncode == 0
    program = root / "src" / "swiglu_ops" / "swiglu" / "iree_program.py"
    program.write_text(program.read_text().replace("arith.addf %p, %d", "arith.addf %p, %undefined"))
    env = install_metadata(root)
    res = run_pytest(root, env, "--hw", "iree-cpu", "-k", "N64")
    assert res.returncode == 1, res.stdout + res.stderr
    case = json.loads((root / "rep" / "results.json").read_text())["cases"][0]
    assert case["verdict"] == "COMPILE_ERROR", case
    kept = sorted((root / "rep" / "failures").iterdir())
    assert [p.name.rsplit(".", 2)[-2:] for p in kept] == [["command", "txt"], ["output", "txt"], ["program", "mlir"]]
    stem = kept[0].name.rsplit(".", 2)[0]
    assert f"kept: rep/failures/{stem}.{{program.mlir,command.txt,output.txt}}" in case["message"], case["message"]
    assert f"rep/failures/{stem}.program.mlir:9:25: error" in case["message"]     # the kept copy, line and column
    assert "%undefined" in (root / "rep" / "failures" / f"{stem}.program.mlir").read_text()
    command = (root / "rep" / "failures" / f"{stem}.command.txt").read_text()
    assert "./program.mlir" in command.splitlines()[-1] and "-o ./" in command.splitlines()[-1], command
    assert "error" in (root / "rep" / "failures" / f"{stem}.output.txt").read_text()
    assert "program" not in case["detail"], "the program is in failures/, not in every results file"
    assert "kept for reading" in res.stdout


def test_a_program_that_raises_is_left_out_of_compile_ahead(tmp_path):
    """Issue 47 defect 6: one case whose program() raises killed the session at compile-ahead
    planning on 60769d1 (INTERNALERROR, 0 cases, exit 3); it is left out of the plan, reports it
    when it runs, and the other cases run as with --accel-compile-ahead 0."""
    root = team_project(tmp_path)
    assert new_family(root, "swiglu").returncode == 0
    program = root / "src" / "swiglu_ops" / "swiglu" / "iree_program.py"
    program.write_text(program.read_text().replace(
        '    n = math.prod(case.params["shape"])\n',
        '    n = math.prod(case.params["shape"])\n    if n == 1000:\n        raise ValueError("the family\'s own bug")\n'))
    env = install_metadata(root)
    res = run_pytest(root, env, "--hw", "iree-cpu", "--accel-compile-ahead", "2")
    assert "INTERNALERROR" not in res.stdout + res.stderr, res.stdout[-3000:] + res.stderr[-3000:]
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    verdicts = sorted(c["verdict"] for c in cases)
    assert verdicts == ["CRASH", "PASS", "PASS"], verdicts
    assert "the family's own bug" in next(c for c in cases if c["verdict"] == "CRASH")["message"]
