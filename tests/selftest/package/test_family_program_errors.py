"""Issue 47 defect 15: a torch program's own TypeError (the family's bug) was the device's CRASH,
and the gate's "new hang/crash". The family's code that raises a programming error is said as
the family's, with its file and line: a FAIL at stage ``family``, blocked by the gate as no verdict
on the device, never a known bug. The family is one ``new-family`` writes, installed as
test_new_family does; its torch program calls a torch op wrongly for one shape."""
import json
import subprocess
import sys

from test_new_family import install_metadata, new_family, run_pytest, team_project


def test_a_torch_programs_own_type_error_is_the_familys(tmp_path):
    root = team_project(tmp_path)
    assert new_family(root, "swiglu").returncode == 0
    program = root / "src" / "swiglu_ops" / "swiglu" / "torch_program.py"
    text = program.read_text()
    assert '    return {"y": x * w + b}' in text
    program.write_text(text.replace('    return {"y": x * w + b}', '    if x.numel() == 1000:\n'
                                    '        return {"y": x.mul(w, b, b)}      # the family\'s own bug\n'
                                    '    return {"y": x * w + b}'))
    env = install_metadata(root)
    res = run_pytest(root, env, "--hw", "torch-cpu")
    cases = json.loads((root / "rep" / "results.json").read_text())["cases"]
    got = sorted((c["verdict"], c["stage"]) for c in cases)
    assert got == [("FAIL", "family"), ("PASS", "compare"), ("PASS", "compare")], (got, res.stdout[-3000:])
    bad = next(c for c in cases if c["verdict"] == "FAIL")
    assert bad["message"].startswith("the swiglu family's torch program raised TypeError"), bad["message"]
    line = next(n for n, ln in enumerate(program.read_text().splitlines(), 1) if "the family's own bug" in ln)
    assert f"{program}:{line} in run" in bad["message"] and "not the device" in bad["message"], bad["message"]
    gate = subprocess.run([sys.executable, "-m", "accel_regress", "gate", "rep/results.json"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert gate.returncode == 1 and "1 case(s) got no verdict on the device" in gate.stdout, gate.stdout
    assert "hang/crash" not in gate.stdout and "CRASH" not in gate.stdout, gate.stdout
