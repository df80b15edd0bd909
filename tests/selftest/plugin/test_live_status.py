"""The live status (hardware/plugin/live_status.py, issue 48): on a terminal, a test that keeps the
run quiet for seconds gets a status at the end of pytest's line (done of total, what runs and for
how long, what compiles ahead, the time left), erased before pytest writes again; nothing under -q, as
pytest's own live "collecting ..." line; in a log (not a terminal) a line of its own, only after a
quiet interval (--accel-progress-every, 60 s) and at most one per interval. Failed on
60769d1: a cold default run waited two minutes between 16% and 17% with pytest's dots only.

The terminal is a real pseudo-terminal (pty), as tmux gives one; a fault file that sleeps in the
isolated run makes the one case slow, without any stand-in of the plugin's own code."""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

import accel_regress
from accel_regress.plugin import live_status

REPO = Path(accel_regress.__file__).resolve().parents[1]
CASE = "tests/test_f32_reduction.py::test_f32_reduction[emu-row_sum-64x128-v-vlen256-normal]"
SLOW_S = live_status.QUIET_S + 3 * live_status.REFRESH_S


def test_the_status_says_what_runs_what_compiles_and_what_is_left_within_its_width():
    now = 1000.0
    text = live_status.describe(now, now - 100, 10, 50, {"t.py::test_x[emu-a]": now - 42, "t.py::test_y[b]": now - 7},
                                (3, 12, ["iree-cpu matmul-M512-K512-N512"]), width=200)
    assert text == ("(10/50 done; running 42s: test_x[emu-a]; about 6m40s left; compiling ahead 3/12: "
                    "iree-cpu matmul-M512-K512-N512)"), text
    ids = {"tests/test_f32_reduction.py::test_f32_reduction[iree-cpu-rmsnorm-4x33-v-vlen256-normal]": now - 10}
    compiling = (3, 12, ["iree-cpu matmul-M512-K512-N512"])
    assert live_status.describe(now, now - 100, 10, 50, ids, compiling, 110) == \
        "(10/50 done; running 10s: [iree-cpu-rmsnorm-4x33-v-vlen256-normal]; about 6m40s left; compiling ahead 3/12)"
    assert live_status.describe(now, now - 100, 10, 50, ids, compiling, 75) == \
        "(10/50 done; running 10s: [iree-cpu-rmsnorm-4x33-v-vlen256-normal])"
    for width in (40, 73, 120):
        narrow = live_status.describe(now, now - 100, 10, 50, {"t.py::test_" + "z" * 200: now - 1},
                                      (3, 12, ["iree-cpu " + "m" * 50]), width)
        assert len(narrow) <= width and narrow.startswith("(10/50 d"), (width, narrow)
        if width >= 40:     # the test's name goes before the compiles and the estimate
            assert narrow.startswith("(10/50 done; running 1s: test_"), (width, narrow)
    odd = live_status.describe(now, now, 0, 5, {"t.py::test[\x1b[2Jé]": now}, None, 80)
    assert "\x1b" not in odd and odd.isascii(), odd


def _run(tmp_path: Path, *args: str, tty: bool) -> bytes:
    fault = tmp_path / "slow.py"
    fault.write_text(f"import time\n\ndef slow(case, outputs):\n    time.sleep({SLOW_S})\n    return outputs\n")
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", CASE, "--hw", "emu", "--history", "none",
           "--inject-fault", f"{fault}:slow", "--report-dir", str(tmp_path / "rep"), *args]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["ACCEL_CACHE_DIR"] = str(tmp_path / "cache")
    if not tty:
        return subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=300).stdout
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))    # rows, columns: as tmux sets them
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    out = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:         # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(leader)
    proc.wait(timeout=30)
    return out


def test_on_a_terminal_a_quiet_wait_shows_the_status_and_erases_it(tmp_path):
    out = _run(tmp_path, tty=True)
    assert b"passed" in out, out.decode(errors="replace")[-2000:]
    at = out.find(b" (0/1 done; running ")
    assert at > 0, out.decode(errors="replace")[-2000:]
    shown = out[at:out.index(b")", at) + 1]
    assert b"test_f32_reduction[emu-row_sum-64x128-v-vlen256-normal]" in shown, shown
    erase = b"\b" * len(shown) + b" " * len(shown) + b"\b" * len(shown)
    assert erase in out[at:], out[at:at + 400]
    # pytest's own line is whole: its dot follows the erased status, and its percentage the dot.
    assert out.rindex(erase) < out.index(b"[100%]"), out[at:at + 400]


@pytest.mark.parametrize("args, tty", [((), False), (("-q",), True), (("-q", "--accel-progress-every", "1"), False)],
                         ids=["log-quiet-less-than-a-minute", "quiet", "quiet-log"])
def test_no_status_when_quiet_or_a_log_was_quiet_less_than_its_interval(tmp_path, args, tty):
    out = _run(tmp_path, *args, tty=tty)
    assert b"passed" in out, out.decode(errors="replace")[-2000:]
    assert b"done; running" not in out and b"\b" not in out, out.decode(errors="replace")[-2000:]


def test_a_log_gets_a_whole_line_per_quiet_interval_and_pytest_row_goes_on_below(tmp_path):
    every = 2       # the case is quiet SLOW_S (6 s) or more: lines every 2 s of it, never one a second
    out = _run(tmp_path, "--accel-progress-every", str(every), tty=False).decode(errors="replace")
    assert "passed" in out, out[-2000:]
    lines = [line for line in out.splitlines() if line.startswith(live_status.LOG_LINE)]
    assert lines, out[-2000:]
    assert all(line.startswith(live_status.LOG_LINE + "(0/1 done; running ") and
               "test_f32_reduction[emu-row_sum-64x128-v-vlen256-normal]" in line for line in lines), lines
    # at most one per interval, by the case's own clock in the lines (a loaded machine makes it longer)
    ran = [int(line.split("running ", 1)[1].split("s:", 1)[0]) for line in lines]
    assert all(b - a >= every for a, b in zip(ran, ran[1:])), lines
    assert "\b" not in out, out[-2000:]
    # pytest's row: its file name before the first line, its dot and percentage on a row after the last
    after = out[out.rindex(live_status.LOG_LINE):].splitlines()[1]
    assert after.startswith(".") and after.rstrip().endswith("[100%]"), out[-2000:]
