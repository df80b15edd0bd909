"""The FireSim log classifier (issue 5 item 7) on logs in seed 004's real shapes and on bad input."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress.backends.firesim import uart
from accel_regress.backends.firesim.__main__ import classify_main
from accel_regress.backends.firesim.classify import VERDICTS, classify_files, classify_text

LOGS = Path(__file__).parents[2] / "fixtures" / "firesim" / "logs"

# fixture -> (verdict, words the detail must hold)
EXPECTED = {
    # seed 004's corrected table, one row per log shape
    "seed_rsqrt_64xf32_pass.uartlog": ("pass", "5 bench iteration(s) completed"),
    "seed_mm_i8_narrow_m_warmup.uartlog": ("warmup", "1 warmup iteration(s) completed"),
    "seed_mm_i8_64x128_progress.uartlog": ("progress", "main_dispatch_1_reduction_64x128x128_i8xi32"),
    "seed_vit_d1_layernorm_hang.uartlog": ("hang", "main_dispatch_1_reduction_64x128_f32) wg=0"),
    # the seed's table says HANG, but its log just ends: no bound's evidence, so not a hang (issue 13)
    "seed_softmax_64x64_stopped.uartlog": ("stopped", "softmax_64x64xf32_dispatch_tensor_store"),
    "seed_bmm_4x64x64_hang_iteration_text.uartlog": ("hang", "reduction_256x64x32_f32"),
    "seed_matmul_64x128_opu_llm_early.uartlog": ("early", "no [dn] printed"),
    # FireSim's driver lines (simulation.cc:153-163)
    "driver_passed.uartlog": ("pass", "PASSED after 1234567 cycles"),
    "driver_failed_code.uartlog": ("fail", "FAILED (code = 3)"),
    "driver_failed_before_dispatch.uartlog": ("early", "FAILED (code = 1)"),
    "driver_timed_out_hang.uartlog": ("hang", "simulation timed out after 100000000 cycles"),
    # damaged and odd logs
    "truncated_mid_dispatch.uartlog": ("pass", "1 bench iteration(s) completed"),
    "truncated_mid_out.uartlog": ("pass", "no driver end line"),
    "truncated_seed_progress.uartlog": ("progress", "no driver end line"),
    "noise_interleaved_hang.uartlog": ("hang", "d=1 wg=2"),
    "carriage_returns_pass.uartlog": ("pass", "[done] printed"),
    "carriage_returns_redraw_pass.uartlog": ("pass", "1 bench iteration(s) completed"),
    "noise_interleaved_pass.uartlog": ("pass", "[done] printed; 1 dispatch(es) completed"),
    "empty.uartlog": ("early", "empty log"),
    "binary_noise_stopped.uartlog": ("stopped", "d=1 wg=2"),
    "metasim_pass/uartlog": ("pass", "PASSED"),
    "metasim_timeout_hang/uartlog": ("hang", "timed out after 200000 cycles"),
}


def _classify(name):
    path = LOGS / name
    return classify_files(path, path.parent / "metasim_stderr.out" if path.name == "uartlog" else None)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_verdict(name):
    verdict, words = EXPECTED[name]
    c = _classify(name)
    assert c.verdict == verdict, c.detail
    assert words in c.detail


def test_every_verdict_has_a_fixture():
    assert {v for v, _ in EXPECTED.values()} == set(VERDICTS)


def test_every_fixture_is_covered():
    files = {p.relative_to(LOGS).as_posix() for p in LOGS.rglob("*") if p.is_file()}
    files -= {"metasim_pass/metasim_stderr.out", "metasim_timeout_hang/metasim_stderr.out", "binary.bin"}
    assert files == set(EXPECTED)


def test_binary_file_is_an_error_naming_the_file():
    with pytest.raises(uart.LogError, match=r"binary\.bin: not a text log"):
        classify_files(LOGS / "binary.bin")


def test_missing_file_and_directory_are_errors():
    with pytest.raises(uart.LogError, match="no-such.uartlog: cannot read"):
        classify_files(LOGS / "no-such.uartlog")
    with pytest.raises(uart.LogError, match="is a directory"):
        classify_files(LOGS)


def test_the_seed_parser_bug_is_impossible():
    """The old parser grepped 'Iteration 1'; a run with finished bench iterations and no such
    words is a pass, and a hung run that happens to print those words is still a hang."""
    good = "Bench iter 1/10\n[dn] d=0 wg=1\n[dc] d=0 cyc=3200\nBench iter 2/10\n[dn] d=0 wg=1\n"
    assert "Iteration 1" not in good
    assert classify_text(good).verdict == "pass"
    hung = "Iteration 1\nIteration 1 done\n[dn] d=0 wg=0\n*** FAILED *** simulation timed out after 900 cycles\n"
    assert classify_text(hung).verdict == "hang"


TIMEOUT = "*** FAILED *** simulation timed out after 100000000 cycles\n"


def test_progress_is_never_a_hang():
    """A dispatch that completed workgroups before the stop is advancing, whatever the stop."""
    log = "".join(f"[dn] d1 wg={w}\n[dc] d1 wg={w} cyc=41000\n" for w in range(10)) + "[dn] d1 wg=10\n"
    for tail in ("", TIMEOUT):
        assert classify_text(log + tail).verdict == "progress"
    # the same log without the completed workgroups, stopped by the cycle bound, is a hang
    assert classify_text("[dn] d1 wg=0\n" + TIMEOUT).verdict == "hang"


def test_a_log_that_just_ends_in_a_dispatch_is_not_a_hang():
    """Seed 004's mistake: no end line, no cycle count -- a slow dispatch looks the same (issue 13)."""
    c = classify_text("Bench iter 1/1\n[dn] d=0 wg=4\n[dc] d=0 cyc=1200\n[dn] d=1 wg=2\n")
    assert (c.verdict, c.hang_evidence) == ("stopped", None)
    assert "no evidence of a hang" in c.detail
    # with the bound's evidence it is one, and the detail says which
    for tail, evidence in ((TIMEOUT, "timeout"),
                           ("*** FAILED *** +max_cycles specified timeout after 5000 cycles\n", "timeout"),
                           ("Simulator deadlock detected at target cycle 77. Terminating.\n"
                            "*** FAILED *** (code = 1) after 77 cycles\n", "deadlock")):
        c = classify_text("Bench iter 1/1\n[dn] d=0 wg=4\n[dc] d=0 cyc=1200\n[dn] d=1 wg=2\n" + tail)
        assert (c.verdict, c.hang_evidence) == ("hang", evidence), c.detail


def test_cycle_counts_far_past_the_same_dispatch_are_a_hang():
    """heartbeat / driver cycle counts: the open dispatch outlived its earlier completion by > HANG_FACTOR,
    after all [dc] cycles and a per-character console cost are accounted for."""
    from accel_regress.backends.firesim.classify import HANG_FACTOR
    log = "[dn] d=0 wg=4\n[dc] d=0 cyc=1000\n[dn] d=0 wg=4\n"
    chars = len(log)
    far = 1000 + chars * 10 + HANG_FACTOR * 1000
    c = classify_text(log, heartbeat_cycles=far, cycles_per_char=10)
    assert (c.verdict, c.hang_evidence, c.end_cycles) == ("hang", "cycles", far), c.detail
    assert classify_text(log, heartbeat_cycles=far - 1, cycles_per_char=10).verdict == "progress"
    # without a bound on what a console character costs, no cycle count can show a hang
    assert classify_text(log, heartbeat_cycles=far * 1000).verdict == "progress"


def test_deadlock_is_a_simulator_hang_not_a_target_failure():
    """heartbeat.cc:50-55 then (code = 1): FireSim's simulator stopped, the target did not exit 1."""
    log = ("Bench iter 1/1\n[dn] d=0 wg=4\nSimulator deadlock detected at target cycle 1421084536. Terminating.\n"
           "\nSimulation complete.\n*** FAILED *** (code = 1) after 1421084536 cycles\n")
    c = classify_text(log)
    assert (c.verdict, c.hang_evidence, c.driver_code) == ("hang", "deadlock", 1)
    assert "simulator hang" in c.detail and "not a hang of the design" in c.detail
    # before the first dispatch too: never "early" (a crash of the target)
    assert classify_text("boot\nSimulator deadlock detected at target cycle 0. Terminating.\n"
                         "*** FAILED *** (code = 1) after 0 cycles\n").verdict == "hang"


def test_driver_line_from_metasim_stderr_is_used():
    uart_text = "Bench iter 1/1\n[dn] d=0 wg=1\n[dc] d=0 cyc=5\n[out] name=y dtype=i8 shape=1 hex=07\n[done]\n"
    c = classify_text(uart_text, "*** FAILED *** (code = 9) after 77 cycles\n")
    assert (c.verdict, c.driver_code) == ("fail", 9)


def test_cli_prints_one_tab_separated_line_per_file(capsys):
    names = [str(LOGS / n) for n in ("seed_vit_d1_layernorm_hang.uartlog", "empty.uartlog", "binary.bin")]
    status = classify_main(names)
    lines = capsys.readouterr().out.splitlines()
    assert status == 2
    assert [line.split("\t")[:2] for line in lines] == [[names[0], "hang"], [names[1], "early"], [names[2], "error"]]
    assert all(len(line.split("\t")) == 3 for line in lines)


def test_cli_as_a_module():
    root = Path(__file__).resolve().parents[4]
    done = subprocess.run([sys.executable, "-m", "accel_regress.backends.firesim", "classify",
                           str(LOGS / "seed_mm_i8_64x128_progress.uartlog"), str(LOGS / "metasim_pass")],
                          capture_output=True, text=True, cwd=root, timeout=60)
    assert done.returncode == 0, done.stderr
    verdicts = [line.split("\t")[1] for line in done.stdout.splitlines()]
    assert verdicts == ["progress", "pass"]


def test_out_lines_round_trip_and_name_what_is_wrong():
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5, "b": np.array([-1, 127], np.int8),
              "c": np.array([[1.0e300]], np.float64), "d": np.array([-(2**40)], np.int64),
              "e": np.array([7, -7], np.int32)}
    text = "\n".join(uart.format_out(k, v) for k, v in arrays.items()) + "\n[done]\n"
    got = uart.outputs(uart.markers(uart.split_lines(text)), "x.uartlog")
    assert set(got) == set(arrays)
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v)
    line = uart.format_out("a", arrays["a"])
    bad = {line[:-2]: "hex has 46 characters", line.replace("dtype=f32", "dtype=f16"): "dtype 'f16'",
           line.replace("shape=2x3", "shape=2,3"): "shape '2,3'", line.replace(" hex=", " data="): "missing hex",
           line[:-1] + "G": "non-hex character 'G'", line.replace("name=a", "name="): "empty name"}
    for text, words in bad.items():
        with pytest.raises(uart.LogError, match=r"x\.uartlog line 1: bad \[out\] line") as info:
            uart.outputs(uart.markers([text]), "x.uartlog")
        assert words in str(info.value)
    with pytest.raises(uart.LogError, match="printed twice"):
        uart.outputs(uart.markers([line, line]), "x.uartlog")


def test_cli_reads_heartbeat_beside_the_uartlog(tmp_path, capsys):
    job = tmp_path / "job0"
    job.mkdir()
    (job / "uartlog").write_text("[dn] d=0 wg=4\n[dc] d=0 cyc=1000\n[dn] d=0 wg=4\n")
    (job / "heartbeat.csv").write_text("Target Cycle (fastest), Seconds Since Start\n0, 0\n500000000, 10\n9000")
    assert classify_main([str(job)]) == 0
    assert capsys.readouterr().out.split("\t")[1] == "progress"      # console cost unknown: no judgement
    assert classify_main([str(job)], fesvr_step_size=128) == 0
    out = capsys.readouterr().out.split("\t")
    assert out[1] == "hang" and "end at cycle 500000000" in out[2]   # the cut last row "9000" is dropped
