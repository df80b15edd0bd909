"""repros/rowexpandmul_fillpad.py says what pytest says for the same case and fault (issue 29):
each variant is test_tile and test_padded_region of the same seed case, with pytest's verdicts,
its failure message word for word (the census: Where, the failed statistics, the tile's findings),
and the same known bugs (a2a3's wrong fused tile, read from the real expectations/a2a3.toml, as
emu's pto-bare-tile-validshape fault models that board)."""
import shutil

from repro_vs_pytest import REPO, run_pytest, run_repro, statistics, where

SCRIPT = "rowexpandmul_fillpad.py"
FAULT = "pto-bare-tile-validshape"
ID = "seed-R16-C256-vr1-vc256-f32-padzero-fused-reuse-normal"
TILE = f"tests/test_rowexpandmul_fillpad.py::test_tile[{ID}]"
PADDED = f"tests/test_rowexpandmul_fillpad.py::test_padded_region[{ID}]"


def test_a_fault_is_reported_as_pytest_reports_it(tmp_path):
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--fault", FAULT, "--variant", "fused")
    cases = run_pytest(tmp_path, "test_rowexpandmul_fillpad.py", ID, "--hw", "emu", "--inject-fault", FAULT)
    tile, padded = cases[TILE], cases[PADDED]
    assert (tile["verdict"], padded["verdict"]) == ("FAIL", "PASS")
    body = "\n".join(line[4:] for line in out.splitlines())       # the repro indents a variant's lines
    assert where(tile["message"]) == where(body) == ["Where: row 0, cols 1-255: 255 elements"], out
    assert statistics(tile["message"]) == statistics(body) and len(statistics(body)) == 3
    assert tile["message"] in body, out
    assert f"test_tile: FAIL  [{TILE}]" in out and f"test_padded_region: PASS  [{PADDED}]" in out, out
    assert rc == 1


def test_a_known_bug_is_xfail_in_both(tmp_path):
    known = tmp_path / "expectations"
    known.mkdir()
    shutil.copy(REPO / "expectations" / "a2a3.toml", known / "emu.toml")
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--fault", FAULT, "--variant", "fused", "--expectations", str(known))
    cases = run_pytest(tmp_path, "test_rowexpandmul_fillpad.py", ID, "--hw", "emu", "--inject-fault", FAULT,
                       "--expectations", str(known))
    assert (cases[TILE]["verdict"], cases[PADDED]["verdict"]) == ("XFAIL", "PASS")
    assert f"test_tile: XFAIL (known FAIL ({known / 'emu.toml'}): the seed's [16, 256] f32 fused kernel" in out, out
    assert f"test_padded_region: PASS  [{PADDED}]" in out
    assert rc == 0, out
