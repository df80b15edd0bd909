"""repros/matmul_2432_sweep.py says what pytest says for the same case and fault (issue 29): a
shape of the sweep is tests/test_matmul.py::test_matmul of the same config, with its verdict,
its census (Where, the greatest difference) in pytest's words, and the same known bugs (the real
expectations/iree-amd-aie.toml, as emu's aie-matmul-4x2-herd-hang fault models that compiler)."""
import shutil
import textwrap

from repro_vs_pytest import REPO, run_pytest, run_repro, where

SCRIPT = "matmul_2432_sweep.py"
NODE = "tests/test_matmul.py::test_matmul[cube-M512-K512-N640-bf16xbf16-f32-exact]"
# Two rows of a column block off by one: wrong in a way the bit-for-bit comparison must place.
FAULT = textwrap.dedent('''
    def rows_off(case, outputs):
        out = dict(outputs)
        out["out"] = out["out"].copy()
        out["out"][3:5, 100:120] += 1.0
        return out
''')


def _greatest(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("Greatest absolute difference")]


def test_a_wrong_result_is_reported_as_pytest_reports_it(tmp_path):
    (tmp_path / "faults.py").write_text(FAULT)
    fault = f"{tmp_path / 'faults.py'}:rows_off"
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--shape", "512x512x640", "--fault", fault)
    case = run_pytest(tmp_path, "test_matmul.py", "cube-M512-K512-N640-bf16xbf16-f32-exact", "--hw", "emu",
                      "--inject-fault", fault)[NODE]
    assert case["verdict"] == "FAIL"
    assert where(out) == where(case["message"]) == ["Where: rows 3-4, cols 100-119: 40 elements"], out
    assert _greatest(out) == _greatest(case["message"]) != [], out
    assert "512x512x640: FAIL" in out and rc == 1, out


def test_a_known_hang_is_xfail_in_both(tmp_path):
    known = tmp_path / "expectations"
    known.mkdir()
    shutil.copy(REPO / "expectations" / "iree-amd-aie.toml", known / "emu.toml")
    fault = "aie-matmul-4x2-herd-hang"
    rc, out = run_repro(SCRIPT, "--hw", "emu", "--shape", "512x512x640", "--shape", "512x512x512",
                        "--fault", fault, "--expectations", str(known))
    cases = run_pytest(tmp_path, "test_matmul.py", "cube-M512-K512-N640-bf16xbf16-f32-exact or "
                       "cube-M512-K512-N512-bf16xbf16-f32-exact", "--hw", "emu", "--inject-fault", fault,
                       "--expectations", str(known), "--run-known-hangs")
    assert cases[NODE]["verdict"] == "XFAIL" and cases[NODE.replace("N640", "N512")]["verdict"] == "PASS"
    assert f"512x512x640: XFAIL (known HANG ({known / 'emu.toml'}): bf16 x bf16 -> f32 over {{512,640}}^3" in out, out
    assert "512x512x512: " not in out.split("judges the same cases:")[-1]
    assert rc == 0, out
