"""Issue 19 items 3, 4 and 13, against the isolation layer itself (accel_regress.core.isolation.Isolation):

- 3: a run that starts a process in its own session (setsid), or a double-forked daemon, does not
  outlive its case, whether the run returns or hangs; with a cgroup and with the fallback sweep;
- 4: killing the fork server under a case is the suite's fault: the server is restarted and the
  case retried once, never a CRASH of the case;
- 13: every CRASH says what happened: a KeyboardInterrupt raised in the case (not "code 70"), the
  exit code and the last stderr lines, the signal.
"""
import os
import signal
import textwrap
import time

import numpy as np
import pytest

from accel_regress.golden.case import Case
from accel_regress.core.errors import Crash, Hang
from accel_regress.core.isolation import Bounds, Isolation
from accel_regress.core.isolation.reaping import alive
from accel_regress.core.runner import Job

PARAMS = dict(M=16, K=64, N=64, tile_m=16, tile_k=64, tile_n=64, num_aie_columns=1,
              b_col_maj=False, c_col_maj=False, partition_N=1)

FAULTS = textwrap.dedent('''
    import os, signal, subprocess, sys, time

    def _mark(name, text):
        path = os.path.join(os.environ["ATTACK_DIR"], name)
        with open(path + ".tmp", "w") as f:
            f.write(str(text))
        os.replace(path + ".tmp", path)

    def fault(case, outputs):
        kind = case.id
        if kind == "setsid_child":            # a child in its own session; the run returns
            p = subprocess.Popen(["sleep", "300"], start_new_session=True)
            _mark(kind, p.pid)
        elif kind == "daemon_then_hang":       # a double-forked daemon, then the run hangs
            out = subprocess.run(["sh", "-c", "setsid sleep 300 > /dev/null 2>&1 & echo $!"],
                                 capture_output=True, text=True).stdout.strip()
            _mark(kind, out)
            while True:
                time.sleep(1)
        elif kind == "kill_server_once":        # the suite's own machinery dies under the case
            flag = os.path.join(os.environ["ATTACK_DIR"], "server_killed")
            if not os.path.exists(flag):
                open(flag, "w").close()
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(30)
        elif kind == "keyboard_interrupt":
            def deeper():
                raise KeyboardInterrupt("pressed inside the kernel")
            deeper()
        elif kind == "last_words_exit":
            for i in range(60):
                print(f"stderr line {i}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        elif kind == "segv":
            import ctypes
            ctypes.string_at(0)
        return outputs
''')


def _job(tmp_path, kind, timeout_s=20.0):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, (16, 64)).astype(np.float32)
    b = rng.integers(0, 2, (64, 64)).astype(np.float32)
    return Job("emu", Case.make("gemm_partition_n", kind, PARAMS), {"A": a, "B": b},
               f"{tmp_path / 'attack_faults.py'}:fault", timeout_s)


def _gone(pid: int, wait_s: float = 5.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module", params=["cgroup", "sweep"])
def iso(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("attack")
    (folder / "attack_faults.py").write_text(FAULTS)
    old = os.environ.get("ACCEL_ISOLATION_CGROUP")
    os.environ["ACCEL_ISOLATION_CGROUP"] = "1" if request.param == "cgroup" else "0"
    os.environ["ATTACK_DIR"] = str(folder)
    isolation = Isolation(Bounds(stack_wait_s=0.5))
    if request.param == "cgroup" and "cgroup" not in isolation.reaping.split("(")[0]:
        pytest.skip(f"no writable cgroup here: {isolation.reaping}")
    yield isolation, folder
    isolation.close()
    os.environ.pop("ATTACK_DIR")
    if old is None:
        os.environ.pop("ACCEL_ISOLATION_CGROUP")
    else:
        os.environ["ACCEL_ISOLATION_CGROUP"] = old


def test_item3_setsid_child_of_a_finished_run_is_reaped(iso):
    isolation, folder = iso
    outputs = isolation.run(_job(folder, "setsid_child"))
    assert "C_0" in outputs
    pid = int((folder / "setsid_child").read_text())
    assert _gone(pid), f"sleep {pid}, started with setsid by the run, outlived its case"


def test_item3_daemon_of_a_hung_run_is_reaped_and_said(iso):
    isolation, folder = iso
    with pytest.raises(Hang) as err:
        isolation.run(_job(folder, "daemon_then_hang", timeout_s=3.0))
    pid = int((folder / "daemon_then_hang").read_text())
    assert _gone(pid), f"daemon {pid} outlived the hung case"
    detail = err.value.detail
    assert detail["reaping"] == isolation.reaping and "unreaped" not in detail, detail
    assert str(pid) in detail.get("reaped", ""), detail


def test_item4_a_killed_fork_server_is_restarted_and_the_case_retried(iso):
    isolation, folder = iso
    (folder / "server_killed").unlink(missing_ok=True)
    retries = isolation.stats["retries"]
    outputs = isolation.run(_job(folder, "kill_server_once"))        # not a CRASH of the case
    assert "C_0" in outputs and (folder / "server_killed").exists()
    assert isolation.stats["retries"] == retries + 1
    # Killed between cases, too: the next case runs on a fresh server, no verdict charged.
    os.kill(isolation._server.pid, signal.SIGKILL)
    isolation._server.wait()
    assert "C_0" in isolation.run(_job(folder, "ok"))


def test_item13_keyboard_interrupt_in_a_case_names_itself(iso):
    isolation, folder = iso
    with pytest.raises(Crash) as err:
        isolation.run(_job(folder, "keyboard_interrupt"))
    message, detail = err.value.message, err.value.detail
    assert "KeyboardInterrupt: pressed inside the kernel" in message and "code 70" not in message
    assert "in deeper" in detail["traceback"] and "attack_faults.py" in detail["traceback"]


def test_item13_exit_code_and_last_stderr_lines(iso):
    isolation, folder = iso
    with pytest.raises(Crash) as err:
        isolation.run(_job(folder, "last_words_exit"))
    detail = err.value.detail
    assert "exited with code 3" in err.value.message and detail["exit_code"] == 3
    assert "stderr line 59" in detail["output"] and "reaping" in detail
    with pytest.raises(Crash) as err:
        isolation.run(_job(folder, "segv"))
    assert err.value.detail["signal"] == "SIGSEGV" and "Segmentation fault" in err.value.detail["output"]
