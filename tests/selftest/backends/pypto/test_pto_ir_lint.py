"""The PTO IR lint (hardware/backends/pypto/lint_ir.py): seed 002's .pto is flagged, real PTO IR is
clean, and ``lint-pto`` takes .pto files beside C++ with the same exit codes and findings."""
import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from accel_regress.backends.pypto import lint, lint_ir

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[4]
SEED = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "pto_ir"
EXCERPT = SEED / "seed002_excerpt.pto"
HOISTED = SEED / "seed002_hoisted.pto"
REAL = REPO / "tests" / "selftest" / "fixtures" / "real" / "pto_ir"
DERIVED = REAL / "derived_seed002_form_qwen3_decode_incore_6_a3.pto"
BARE_CPP = REPO / "tests" / "selftest" / "fixtures" / "pypto" / "ptoas" / "seed002_bare_tile.cpp"

TB = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=256, v_row={r}, v_col={c}, blayout=row_major, " \
     "slayout=none_box, fractal=512, pad=0>"
DYN = TB.format(r="?", c="?")
STATIC = TB.format(r=16, c=256)
COL = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, blayout=col_major, " \
      "slayout=none_box, fractal=512, pad=0>"


def _flagged(path):
    return [(f.line, f.tile, f.op, f.declared_line, f.set_later_line) for f in lint.lint_paths([path])[0]]


def test_seed_excerpt_is_flagged(capsys):
    assert lint.main([str(EXCERPT)]) == 1
    out = capsys.readouterr().out
    assert (f"{EXCERPT}:2: pto-bare-tile-validshape: tile %h_chunk_raw__tile allocated at line 1 "
            "with a dynamic valid shape") in out
    assert "written by pto.trowexpandmul" in out
    assert "its pto.set_validshape comes only at line 3, after the op" in out
    assert "1 file(s), 1 finding(s)" in out


def test_seed_excerpt_with_the_set_hoisted_is_clean():
    # The seed's second proposed fix: set_validshape before the producing op.
    assert _flagged(HOISTED) == []


def test_real_ir_has_no_findings():
    real = sorted(p for p in REAL.glob("*.pto") if not p.name.startswith("derived_"))
    assert len(real) == 6
    findings, files = lint.lint_paths(real)
    assert files == real and findings == []


def test_real_ir_with_the_seed_form_reintroduced_is_flagged():
    """PROVENANCE.md states the edit: %t__tile made dynamic and given a set_validshape after its
    trowexpandsub (the op at line 49)."""
    assert _flagged(DERIVED) == [(49, "%t__tile", "pto.trowexpandsub", 48, 50)]


def test_the_derived_file_differs_from_the_real_one_only_by_the_stated_edit():
    real = (REAL / "ptoas_qwen3_decode_incore_6_a3.pto").read_text().splitlines()
    derived = DERIVED.read_text().splitlines()
    assert derived[:47] == real[:47] and derived[52:] == real[51:]
    assert derived[49].lstrip().startswith("pto.set_validshape %t__tile, %c8_index, %9 :")
    # Without the inserted set_validshape ptoas constructs the dynamic tile: not flagged.
    without_set = "\n".join(derived[:49] + derived[50:])
    assert lint_ir.lint_text(without_set, "x.pto") == []


def _k(*lines):
    return "func.func @k() {\n" + "\n".join(lines) + "\nreturn\n}\n"


ALLOC = f"%t = pto.alloc_tile addr = %a valid_row = %r valid_col = %c : {DYN}"
OP = f"pto.trowexpandmul ins(%x, %s : {STATIC}, {COL}) outs(%t : {DYN})"
SET = f"pto.set_validshape %t, %one, %c256 : {DYN}"


@pytest.mark.parametrize("text, flagged", [
    pytest.param(_k(ALLOC, OP, SET), True, id="seed-form"),
    pytest.param(_k(ALLOC, SET, OP), False, id="set-before-op"),
    # Set before the op and narrowed again after it: the op saw a valid shape.
    pytest.param(_k(ALLOC, SET, OP, SET), False, id="set-op-set"),
    # No set_validshape at all: ptoas constructs the tile with valid_row/valid_col.
    pytest.param(_k(ALLOC, OP), False, id="dynamic-without-set"),
    pytest.param(_k(f"%t = pto.alloc_tile addr = %a : {STATIC}", OP.replace(DYN, STATIC)), False, id="static"),
    # Only both dims dynamic is a dynamic valid shape (PTOTypeDefs.td:190-193).
    pytest.param(_k(f"%t = pto.alloc_tile valid_row = %r : {TB.format(r='?', c=256)}", OP, SET), False,
                 id="one-dim-dynamic"),
    pytest.param(_k(f"%t = pto.alloc_tile valid_row = %r valid_col = %c : {TB.format(r=-1, c=-1)}", OP, SET),
                 True, id="minus-one"),
    # The compact spelling (PTOTypeDefs.cpp:288-356).
    pytest.param(_k("%t = pto.alloc_tile addr = %a valid_row = %r valid_col = %c {__pto.force_dynamic_valid_shape}"
                    " : !pto.tile_buf<vec, 16x256xf32, valid=?x?>",
                    "pto.trowexpandmul ins(%x, %s : !pto.tile_buf<vec, 16x256xf32>, !pto.tile_buf<vec, 16x1xf32, "
                    "blayout=col_major>) outs(%t : !pto.tile_buf<vec, 16x256xf32, valid=?x?>)",
                    "pto.set_validshape %t, %one, %c256 : !pto.tile_buf<vec, 16x256xf32, valid=?x?>"), True,
                 id="compact-dynamic"),
    pytest.param(_k("%t = pto.alloc_tile : !pto.tile_buf<vec, 16x256xf32, valid=16x256>",
                    "pto.trowexpandmul ins(%x, %s : !a, !b) outs(%t : !pto.tile_buf<vec, 16x256xf32>)"), False,
                 id="compact-static"),
    pytest.param(_k(f"%d = pto.declare_tile -> {DYN}", f"%t = pto.tassign %d, %addr : {DYN} -> {DYN}", OP, SET),
                 True, id="declare-tile-tassign"),
    pytest.param(_k(ALLOC, OP.replace("trowexpandmul", "tcolexpandadd"), SET), True, id="tcolexpand"),
    # Other ops do not read dst's valid shape first (pto-isa): not this rule.
    pytest.param(_k(ALLOC, OP.replace("trowexpandmul", "tmul"), SET), False, id="tmul"),
    # The set in a loop body after the op leaves the first iteration unset.
    pytest.param(_k(ALLOC, "scf.for %i = %c0 to %n step %c1 {", OP, SET, "}"), True, id="set-later-in-loop"),
    pytest.param(_k(ALLOC, OP, "// " + SET), False, id="commented-set"),
    pytest.param(_k(ALLOC, OP + ' loc("/src/moe.py":12:5)', SET + " loc(#loc3)"), True, id="loc-suffix"),
    pytest.param(f"!tb = {DYN}\n" + _k("%t = pto.alloc_tile valid_row = %r valid_col = %c : !tb",
                                       "pto.trowexpandmul ins(%x, %s : !a, !b) outs(%t : !tb)",
                                       "pto.set_validshape %t, %one, %c256 : !tb"), True, id="type-alias"),
    pytest.param(_k(ALLOC, '"pto.trowexpandmul"(%x, %s, %t) : (!a, !b, !c) -> ()', SET), True, id="generic-form"),
    # SSA names are per function: a set on another function's %t is not this tile's.
    pytest.param(_k(ALLOC, OP) + _k(ALLOC, SET), False, id="two-functions"),
])
def test_rule(text, flagged):
    assert bool(lint_ir.lint_text(text, "x.pto")) == flagged


def test_extra_op_names_the_cpp_or_ir_spelling():
    text = _k(ALLOC, OP.replace("trowexpandmul", "tmul"), SET)
    assert [f.op for f in lint_ir.lint_text(text, extra_ops=["TMUL"])] == ["pto.tmul"]
    assert [f.op for f in lint_ir.lint_text(text, extra_ops=["pto.tmul"])] == ["pto.tmul"]


@pytest.mark.parametrize("text, where, what", [
    (_k(ALLOC, OP.replace("outs(%t", "outs(%t ("), SET), 3, "'(' is never closed"),
    (_k("%t = pto.alloc_tile addr = %a", OP), 2, "pto.alloc_tile %t has no !pto.tile_buf result type"),
    (_k("%t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=256, blayout=row_major>", OP), 2,
     "without v_row / v_col"),
    (_k("pto.alloc_tile : " + DYN), 2, "pto.alloc_tile without its one result"),
    (_k(ALLOC, "pto.trowexpandmul ins(%x, %s : !a, !b)"), 3, "pto.trowexpandmul without outs(...)"),
    (_k(ALLOC, "pto.set_validshape"), 3, "pto.set_validshape without its tile operand"),
    ("// PTO Program: sinh_taylor\nfunc @f(%x: !pto.memref<gm,...,f32>) {\n  %t = alloc_tile : "
     "!pto.tile<32x128xf32>\n  return\n}\n", 1, "no MLIR operation"),
], ids=["unclosed-paren", "alloc-no-type", "type-no-valid", "alloc-no-result", "op-no-outs", "set-no-operand",
        "pre-mlir-pto-as"])
def test_malformed_ir_names_the_file_line_and_problem(tmp_path, capsys, text, where, what):
    bad = tmp_path / "k.pto"
    bad.write_text(text)
    assert lint.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"lint-pto: {bad}:{where}: malformed PTO IR: " in err and what in err, err


def test_non_utf8_pto_is_bad_input(tmp_path, capsys):
    bad = tmp_path / "k.pto"
    bad.write_bytes(b"%t = pto.alloc_tile \xff\n")
    assert lint.main([str(bad)]) == 2
    assert f"{bad}: not UTF-8 text" in capsys.readouterr().err


def test_a_build_folder_with_ir_and_cpp(tmp_path, capsys):
    """pypto's build layout: <build>/ptoas/<unit>.pto beside kernels/<core>/<kernel>.cpp."""
    (tmp_path / "ptoas").mkdir()
    (tmp_path / "kernels" / "aiv").mkdir(parents=True)
    shutil.copy(EXCERPT, tmp_path / "ptoas" / "k.pto")
    shutil.copy(BARE_CPP, tmp_path / "kernels" / "aiv" / "k.cpp")
    assert lint.main([str(tmp_path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [Path(f).name for f in data["files"]] == ["k.cpp", "k.pto"]
    assert [(Path(f["file"]).name, f["line"], f["tile"], f["op"], f["set_later_line"]) for f in data["findings"]] == [
        ("k.cpp", 9, "v21", "TROWEXPANDMUL", 10), ("k.pto", 2, "%h_chunk_raw__tile", "pto.trowexpandmul", 3)]
    # One finding format for both inputs.
    assert {tuple(f) for f in data["findings"]} == {tuple(asdict(lint.lint_paths([BARE_CPP])[0][0]))}


def test_python_m_accel_regress_lint_pto_takes_pto():
    run = subprocess.run([sys.executable, "-m", "accel_regress", "lint-pto", str(EXCERPT), str(REAL)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert run.stdout.count("pto-bare-tile-validshape") == 2      # the excerpt and the derived file
    assert "8 file(s), 2 finding(s)" in run.stdout


@pytest.fixture
def lint_suite(pytester):
    pytester.makepyfile(test_tiles=(REPO / "tests" / "test_rowexpandmul_fillpad.py").read_text())
    return pytester


@pytest.mark.parametrize("fixture, outcome", [(EXCERPT, "failed"), (HOISTED, "passed")], ids=["seed", "hoisted"])
def test_pto_cpp_option_lints_the_ir_too(lint_suite, fixture, outcome):
    res = lint_suite.runpytest("--hw", "emu", f"--pto-cpp={fixture}", "-k", "test_ptoas_codegen_lint",
                               "--report-dir", str(lint_suite.path / "reports"))
    res.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        res.stdout.fnmatch_lines(["*seed002_excerpt.pto:2: pto-bare-tile-validshape: tile %h_chunk_raw__tile*"])


# --- the a2a3 / a2a3sim backends lint the build a failed case left ---------------------------

def _program_folder(root, name, ir=None, cpp=None, age_s=0.0):
    """pypto's layout: <build>/<program>_<timestamp>/ptoas/<unit>.pto, kernels/aiv/<kernel>.cpp."""
    d = root / name
    (d / "ptoas").mkdir(parents=True)
    (d / "kernels" / "aiv").mkdir(parents=True)
    if ir:
        shutil.copy(ir, d / "ptoas" / "unit.pto")
    if cpp:
        shutil.copy(cpp, d / "kernels" / "aiv" / "kernel.cpp")
    if age_s:
        import os
        import time
        old = time.time() - age_s
        os.utime(d, (old, old))
    return d


def test_lint_build_reads_this_cases_ir_and_cpp(tmp_path):
    import time
    from accel_regress.backends.pypto.backend import lint_build
    since = time.time()
    _program_folder(tmp_path, "kernel_1_old", ir=EXCERPT, age_s=3600)     # another case's build
    _program_folder(tmp_path, "kernel_2_new", ir=EXCERPT, cpp=BARE_CPP)
    found = lint_build(tmp_path, since)
    assert len(found) == 2
    assert "kernel_2_new/kernels/aiv/kernel.cpp:9: pto-bare-tile-validshape: tile v21" in found[0]
    assert "kernel_2_new/ptoas/unit.pto:2: pto-bare-tile-validshape: tile %h_chunk_raw__tile" in found[1]
    assert lint_build(tmp_path / "absent", since) == []


def test_lint_build_turns_unreadable_ir_into_a_line(tmp_path):
    import time
    from accel_regress.backends.pypto.backend import lint_build
    since = time.time()
    d = _program_folder(tmp_path, "kernel_3")
    (d / "ptoas" / "unit.pto").write_text("func.func @k() {\n")
    (line,) = lint_build(tmp_path, since)
    assert line.startswith("lint-pto could not read the build: ") and "unit.pto:1: malformed PTO IR" in line


def test_a_crash_record_does_not_take_another_cases_build(monkeypatch, tmp_path):
    """Through the stand-in toolchain (fixtures/pypto/lib, test_pypto_backend.py): the crash keeps
    its build, and the lint reads only the folders this run wrote."""
    from accel_regress import Crash
    from accel_regress.backends.pypto.backend import A2a3SimBackend
    from accel_regress.families.rowexpandmul_fillpad import golden as tiles
    fixtures = REPO / "tests" / "selftest" / "fixtures" / "pypto"
    monkeypatch.setenv("PYPTO_LIB_ROOT", str(fixtures / "lib"))
    monkeypatch.setenv("PTOAS_ROOT", str(fixtures / "ptoas_root"))
    monkeypatch.delenv("PYPTO_PYTHON", raising=False)
    monkeypatch.setenv("ACCEL_PYPTO_STANDIN_BUG", "a2a3sim:segv")
    builds = tmp_path / "builds"
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(builds))
    _program_folder(builds, "kernel_0_earlier", ir=EXCERPT, age_s=3600)
    case = tiles.make_case(tiles.seed_config(1))
    with pytest.raises(Crash) as info:
        A2a3SimBackend().run(case, tiles.make_inputs(case))
    shutil.rmtree(info.value.detail["work_dir"], ignore_errors=True)
    assert len(list(builds.iterdir())) == 2               # the earlier build and this run's
    assert "pto_lint" not in info.value.detail             # this run's build holds no kernel files
