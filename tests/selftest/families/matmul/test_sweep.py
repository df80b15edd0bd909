"""``python -m accel_regress sweep`` and repros/matmul_2432_sweep.py on emu, with and without seed 003's faults."""
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.families.matmul import golden as mm
from accel_regress.golden.case import Case
from accel_regress import CompileError, Hang
from accel_regress.families.matmul import sweep
from accel_regress.families.matmul import emu as emu_mm

REPO = Path(__file__).resolve().parents[4]
K_FAULT = Path(__file__).parents[2] / "fixtures" / "matmul" / "k_remainder_fault.py"


def _table(out: str) -> dict:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if line.startswith("# ") and len(parts) >= 5 and parts[1].isdigit():
            rows[tuple(int(p) for p in parts[1:4])] = parts[4]
    return rows


def _seed_hangs(dims):
    small, odd = dims
    return {s: ("HANG" if s[2] == odd and s[0] != odd else "PASS") for s in mm.cube(dims)}


def test_herd_hang_over_the_small_cube_prints_the_seed_table_and_rule(capsys):
    code = sweep.main(["--op", "matmul", "--hw", "emu", "--dims", "512,640", "--fault", "aie-matmul-4x2-herd-hang"])
    out = capsys.readouterr().out
    assert code == 1
    assert _table(out) == _seed_hangs((512, 640))
    assert out.rstrip().splitlines()[-1] == "rule: HANG iff N == 640 and M != 640"


@pytest.mark.large
def test_herd_hang_over_the_2432_cube(capsys):
    code = sweep.main(["--hw", "emu", "--dims", "2048,2432", "--fault", "aie-matmul-4x2-herd-hang"])
    out = capsys.readouterr().out
    assert code == 1
    assert _table(out) == _seed_hangs((2048, 2432))
    assert out.rstrip().splitlines()[-1] == "rule: HANG iff N == 2432 and M != 2432"


def test_clean_sweep_passes(capsys):
    assert sweep.main(["--hw", "emu", "--dims", "512,640"]) == 0
    out = capsys.readouterr().out
    assert set(_table(out).values()) == {"PASS"} and len(_table(out)) == 8
    assert "rule: every shape passes (8 shapes)" in out


@pytest.mark.parametrize("lhs, dims, hangs", [
    ("bf16", (2048, 2048, 2432), True), ("bf16", (2048, 2432, 2432), True), ("bf16", (2432, 2048, 2432), False),
    ("bf16", (512, 512, 640), True), ("bf16", (640, 640, 640), False), ("bf16", (512, 640, 512), False),
    # Seed: "with float32 operands the test passes in the above cases ... M = 256 K = 256 N = 320 hangs".
    ("f32", (512, 512, 640), False), ("f32", (2048, 2048, 2432), False), ("f32", (256, 256, 320), True)])
def test_herd_hang_condition_matches_every_seed_observation(lhs, dims, hangs):
    M, K, N = dims
    case = Case.make("matmul", "x", mm.MatmulConfig(M, K, N, lhs=lhs, rhs=lhs).params())
    if hangs:
        with pytest.raises(Hang, match="4x2 herd"):
            emu_mm.herd_hang(case, {})
    else:
        assert emu_mm.herd_hang(case, {"out": None}) == {"out": None}


@pytest.mark.parametrize("d, passname, words", [
    (2304, "airrt-to-ipu", "Currently do not support remainder tiles"),
    (2432, "air-label-scf-for-to-ping-pong", "block with no terminator")])
def test_remainder_compile_gives_the_seed_diagnostics(d, passname, words):
    case = mm.make_case(mm.MatmulConfig(d, d, d))
    with pytest.raises(CompileError) as info:
        emu_mm.remainder_compile(case, {})
    assert info.value.stage == "compile" and info.value.detail["pass"] == passname
    assert words in info.value.detail["diagnostic"]
    assert emu_mm.remainder_compile(mm.make_case(mm.MatmulConfig(2048, 2048, 2048)), {}) == {}


def test_remainder_compile_sweep_names_the_odd_size(capsys):
    code = sweep.main(["--hw", "emu", "--dims", "512,640", "--fault", "aie-matmul-remainder-compile"])
    out = capsys.readouterr().out
    assert code == 1
    assert _table(out) == {s: ("COMPILE_ERROR" if 640 in s else "PASS") for s in mm.cube((512, 640))}
    assert "rule: COMPILE_ERROR iff M == 640 or K == 640 or N == 640" in out
    assert "    | error: block with no terminator" in out


@pytest.mark.large
def test_remainder_compile_on_the_seed_squares(capsys):
    args = ["--hw", "emu", "--fault", "aie-matmul-remainder-compile"]
    for d in mm.SEED_SQUARES:
        args += ["--shape", f"{d}x{d}x{d}"]
    assert sweep.main(args) == 1
    out = capsys.readouterr().out
    assert _table(out) == {(2048,) * 3: "PASS", (2304,) * 3: "COMPILE_ERROR", (2432,) * 3: "COMPILE_ERROR"}
    assert "Currently do not support remainder tiles" in out and "block with no terminator" in out


def test_wrong_numbers_are_fail_with_where(capsys):
    code = sweep.main(["--hw", "emu", "--shape", "1x101x1", "--shape", "1x64x1", "--shape", "4x128x4",
                       "--fault", f"{K_FAULT}:fault"])
    out = capsys.readouterr().out
    assert code == 1
    assert _table(out) == {(1, 101, 1): "FAIL", (1, 64, 1): "PASS", (4, 128, 4): "PASS"}
    assert "1x101x1: FAIL at stage compare: 1 of 1 elements over tolerance" in out


@pytest.mark.parametrize("argv, words", [
    (["--dims", "0,5"], "positive integers"), (["--shape", "2x3"], "MxKxN"), (["--op", "conv"], "invalid choice")])
def test_bad_arguments_exit_2(argv, words, capsys):
    with pytest.raises(SystemExit) as info:
        sweep.main(argv)
    assert info.value.code == 2 and words in capsys.readouterr().err


def test_unknown_backend_and_fault_exit_2(capsys):
    assert sweep.main(["--hw", "tpu"]) == 2
    assert "unknown backend 'tpu'" in capsys.readouterr().err
    assert sweep.main(["--hw", "emu", "--fault", "no-such-fault"]) == 2
    assert "not a built-in fault" in capsys.readouterr().err


def test_repro_script_prints_table_and_rule_and_exits_1():
    proc = subprocess.run([sys.executable, str(REPO / "repros" / "matmul_2432_sweep.py"), "--hw", "emu",
                           "--dims", "512,640", "--fault", "aie-matmul-4x2-herd-hang"],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 1, proc.stderr
    assert _table(proc.stdout) == _seed_hangs((512, 640))
    assert "rule: HANG iff N == 640 and M != 640" in proc.stdout
