"""The ptoas codegen lint (hardware/backends/pypto/lint.py): seed 002's excerpt is flagged, its fix is clean."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.backends.pypto import lint

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[4]
FIXTURES = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "ptoas"
BARE = FIXTURES / "seed002_bare_tile.cpp"
FIXED = FIXTURES / "seed002_fixed.cpp"
SPLIT = FIXTURES / "seed002_bare_tile_split.cpp"
REAL = REPO / "tests" / "selftest" / "fixtures" / "real" / "pto"


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


def test_seed_form_split_over_lines_is_flagged():
    # clang-format puts the type and the variable on separate lines: a line reader saw no declaration.
    (f,) = lint.lint_paths([SPLIT])[0]
    assert (f.line, f.tile, f.op, f.declared_line, f.set_later_line) == (14, "v21", "TROWEXPANDMUL", 10, 16)


def test_directory_and_json(capsys):
    assert lint.main([str(FIXTURES), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert len(data["files"]) == 3
    assert [(Path(f["file"]).name, f["line"], f["tile"], f["op"]) for f in data["findings"]] == [
        ("seed002_bare_tile.cpp", 9, "v21", "TROWEXPANDMUL"),
        ("seed002_bare_tile_split.cpp", 14, "v21", "TROWEXPANDMUL")]


def test_real_kernels_have_no_findings():
    """Excerpts of real ptoas output and hand-written kernels (fixtures/real/pto/README.md): the
    previous lint flagged the hand-written ones (named constants, template parameters, omitted
    valid dims) although pto-isa makes all of them static."""
    real = sorted(p for p in REAL.glob("*.cpp") if not p.name.startswith("derived_"))
    assert len(real) == 5
    findings, files = lint.lint_paths(real)
    assert len(files) == 5 and findings == []


def test_seed_form_in_real_ptoas_layout_is_flagged():
    (f,) = lint.lint_paths([REAL / "derived_seed002_form_from_comb_sinkhorn.cpp"])[0]
    assert (f.line, f.tile, f.op, f.declared_line, f.set_later_line) == (14, "v100", "TROWEXPANDMUL", 7, 15)


def test_whole_upstream_corpus():
    """0 findings over real checkouts (ACCEL_PTO_CORPUS=dir[:dir...]; README in fixtures/real/pto)."""
    dirs = [d for d in os.environ.get("ACCEL_PTO_CORPUS", "").split(os.pathsep) if d]
    if not dirs:
        pytest.skip("ACCEL_PTO_CORPUS is not set: name checkouts of hw-native-sys/pto-isa, simpler, PTOAS, "
                    "pypto-lib to lint them whole")
    findings, files = lint.lint_paths(dirs)
    assert files
    assert findings == [], "\n".join(f.describe() for f in findings[:20])


def test_python_m_hardware_lint_pto():
    run = subprocess.run([sys.executable, "-m", "accel_regress", "lint-pto", str(BARE)], cwd=REPO,
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
    # Valid dims omitted: they default to Rows / Cols (pto-isa pto_tile.hpp:1392), static.
    ("Tile<TileType::Vec, float, 16, 256> v1;\nTROWEXPANDMUL(v1, v2, v3);\n", False),
    ("using T = Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor>;\nT v1;\nTROWEXPANDMUL(v1, v2, v3);\n", False),
    # Named constants and template parameters are compile-time values: static.
    ("constexpr int kR = 16;\nTile<TileType::Vec, float, kR, 256, BLayout::RowMajor, kR, kC> v1;\n"
     "TROWEXPANDMUL(v1, v2, v3);\n", False),
    # ... unless the constant is -1 / DYNAMIC.
    ("constexpr int kV = -1;\nTile<TileType::Vec, float, 16, 256, BLayout::RowMajor, kV, 256> v1;\n"
     "TROWEXPANDMUL(v1, v2, v3);\n", True),
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, DYNAMIC, pto::DYNAMIC> v1;\n"
     "TROWEXPANDMUL(v1, v2, v3);\n", True),
    # SetValidShape static_asserts DYNAMIC dims (pto_tile.hpp:1634): a tile that gets one is dynamic.
    ("template <int VR> void k() {\nTile<TileType::Vec, float, 16, 256, BLayout::RowMajor, VR, VR> v1;\n"
     "TROWEXPANDMUL(v1, v2, v3);\nv1.SetValidShape(a, b);\n}\n", True),
    # A comment is not code.
    ("Tile<TileType::Vec, float, 16, 256, BLayout::RowMajor, -1, -1> v1;\n// TROWEXPANDMUL(v1, v2, v3);\n", False),
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
