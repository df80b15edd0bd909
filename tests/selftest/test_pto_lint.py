"""The ptoas codegen lint (hardware/pypto/lint.py): seed 002's excerpt is flagged, its fix is clean."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from hardware.pypto import lint

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "ptoas"
BARE = FIXTURES / "seed002_bare_tile.cpp"
FIXED = FIXTURES / "seed002_fixed.cpp"


def test_seed_excerpt_is_flagged(capsys):
    assert lint.main([str(BARE)]) == 1
    out = capsys.readouterr().out
    assert f"{BARE}:9: pto-bare-tile-validshape: tile v21 declared bare at line 7" in out
    assert "written by TROWEXPANDMUL" in out
    assert "its SetValidShape comes only at line 10, after the op" in out
    assert "1 file(s), 1 finding(s)" in out


def test_fixed_form_is_clean(capsys):
    assert lint.main([str(FIXED)]) == 0
    assert "1 file(s), 0 finding(s)" in capsys.readouterr().out


def test_directory_and_json(capsys):
    assert lint.main([str(FIXTURES), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["files"]) == 2
    assert [(Path(f["file"]).name, f["line"], f["tile"], f["op"]) for f in data["findings"]] == [
        ("seed002_bare_tile.cpp", 9, "v21", "TROWEXPANDMUL")]


def test_python_m_hardware_lint_pto():
    run = subprocess.run([sys.executable, "-m", "hardware", "lint-pto", str(BARE)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "pto-bare-tile-validshape" in run.stdout


@pytest.mark.parametrize("code, flagged", [
    # SetValidShape before the op gives the bare tile a valid shape.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1> v1;\n"
     "v1.SetValidShape(a, b);\nTROWEXPANDMUL(v1, v2, v3);\n", False),
    # A static valid shape in the type needs no constructor.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, 16, 256> v1;\nTROWEXPANDMUL(v1, v2, v3);\n", False),
    # Dynamic valid dims, bare, written by a column-expand op: flagged.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, 256> v1;\nTCOLEXPANDMUL(v1, v2, v3);\n", True),
    # Through a type alias.
    ("using T = Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512>;\n"
     "T v1;\nTASSIGN(v1, 0);\nTROWEXPANDADD(v1, v2, v3);\n", True),
    # Constructed by assignment after a bare declaration.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1> v1;\n"
     "v1 = Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1>(16, 256);\nTROWEXPANDMUL(v1, v2, v3);\n",
     False),
    # A bare tile as a source only, or written by an op that does not read dst's shape: not this rule.
    ("Tile<..., -1, -1> v1;\nTROWEXPANDMUL(v4, v1, v3);\nTMUL(v1, v2, v3);\n", False),
    # Constructed with arguments directly.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1> v1(16, 256);\nTROWEXPANDMUL(v1, v2, v3);\n",
     False),
])
def test_rule(code, flagged):
    assert bool(lint.lint_text(code, "x.cpp")) == flagged


def test_extra_op():
    code = "Tile<..., -1, -1> v1;\nTMUL(v1, v2, v3);\n"
    assert not lint.lint_text(code)
    assert lint.lint_text(code, extra_ops=["TMUL"])[0].op == "TMUL"


def test_bad_input_is_a_clear_message(tmp_path, capsys):
    assert lint.main([str(tmp_path / "nope")]) == 2
    assert f"{tmp_path / 'nope'}: no such file or directory" in capsys.readouterr().err
    assert lint.main([str(tmp_path)]) == 2
    assert "no C++ files" in capsys.readouterr().err
    bad = tmp_path / "k.cpp"
    bad.write_bytes(b"Tile<\xff\xfe> v1;\n")
    assert lint.main([str(bad)]) == 2
    assert f"{bad}: not UTF-8 text" in capsys.readouterr().err


@pytest.fixture
def lint_suite(pytester):
    pytester.makeconftest('pytest_plugins = ["hardware.plugin"]')
    pytester.makepyfile(test_tiles=(REPO / "tests" / "test_rowexpandmul_fillpad.py").read_text())
    return pytester


@pytest.mark.parametrize("fixture, outcome", [(BARE, "failed"), (FIXED, "passed")], ids=["bare", "fixed"])
def test_pto_cpp_option(lint_suite, fixture, outcome):
    # "--pto-cpp=PATH": with a separate value, pytest's early parse takes the path for a test path
    # and collects conftests along it (harmless from the repo root, not from a pytester folder).
    res = lint_suite.runpytest("--hw", "emu", f"--pto-cpp={fixture}", "-k", "test_ptoas_codegen_lint",
                               "--report-dir", str(lint_suite.path / "reports"))
    res.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        res.stdout.fnmatch_lines(["*seed002_bare_tile.cpp:9: pto-bare-tile-validshape: tile v21*"])


def test_pto_cpp_absent_is_a_skip_with_the_reason(lint_suite):
    res = lint_suite.runpytest("--hw", "emu", "-k", "test_ptoas_codegen_lint", "-rs")
    res.assert_outcomes(skipped=1)
    res.stdout.fnmatch_lines(["*pass --pto-cpp DIR*"])
