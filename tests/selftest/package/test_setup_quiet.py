"""scripts/setup.sh is quiet unless it fails (issue 37 item 4): apt's and pip's output go to a log
file kept for reading; a failing step prints its command and the log's tail, and exits non-zero.

Run against stand-ins of dpkg-query, apt-get, id and python3 on PATH (each prints what the real
one prints in volume: ~240 lines of dpkg unpacking on a fresh machine). Failed on e6e33d9: every
line of apt-get reached the terminal."""
import os
import shutil
import subprocess
from pathlib import Path

import accel_regress

REPO = Path(accel_regress.__file__).resolve().parents[1]

NOISY = "#!/bin/sh\nfor i in $(seq 240); do echo \"Unpacking thing-$i ...\"; done\n"


def _tree(tmp_path: Path, apt_exit: int = 0) -> tuple[Path, dict]:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "constraints.txt").write_text("")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    stubs = {"dpkg-query": "#!/bin/sh\nexit 1\n",                  # nothing installed
             "id": "#!/bin/sh\necho 0\n",                           # as root
             "apt-get": NOISY + f"exit {apt_exit}\n",
             "python3": NOISY}
    for name, text in stubs.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_}{os.pathsep}{os.environ['PATH']}", ACCEL_SETUP_LOG=str(tmp_path / "setup.log"))
    return tmp_path, env


def test_setup_prints_a_line_and_keeps_the_whole_log(tmp_path):
    root, env = _tree(tmp_path)
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) <= 2 and "Unpacking" not in proc.stdout + proc.stderr, proc.stdout
    log = (root / "setup.log").read_text()
    assert log.count("Unpacking") == 3 * 240     # apt-get update, install, pip: all kept


def test_a_failing_step_says_which_and_shows_the_logs_tail(tmp_path):
    root, env = _tree(tmp_path, apt_exit=100)
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "setup: failed: apt-get update -qq" in proc.stderr and "Unpacking thing-240" in proc.stderr, proc.stderr
    assert str(root / "setup.log") in proc.stderr
