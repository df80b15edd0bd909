"""Issue 47 defect 11: a session killed mid-compile (SIGKILL) left its ``iree-compile`` children
running and their temporary folders in the cache root forever. A compile's child now dies with
the thread that started it (PR_SET_PDEATHSIG, set by util/children.run), and a build's temporary
folder that no live build owns (its key's claim not held, nothing written into it for
compiler.STALE_S) is swept when a process first uses the root. The kill is a real SIGKILL of a
process running children.run; the child stands in for iree-compile by sleeping (what the kernel
does to it does not depend on what it runs); the claim is held by util-linux flock."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accel_regress.toolchains.iree import compiler

from test_read_only_root import ADD, _flags, _new_process, cache  # noqa: F401  (cache: the fixture)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")      # a zombie no one reaped is dead all the same


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_compile_dies_with_the_process_that_started_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = textwrap.dedent(f"""
        import sys
        from accel_regress.util import children
        children.run([sys.executable, "-c", "import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                      "time.sleep(300)"], timeout=600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    child = None
    try:
        deadline = time.monotonic() + 120
        while not (pidfile.is_file() and pidfile.read_text()):
            assert parent.poll() is None and time.monotonic() < deadline, "the child never started"
            time.sleep(0.05)
        child = int(pidfile.read_text())
        assert not _gone(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 30
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), f"pid {child} outlived the process that started it"
    finally:
        parent.kill()
        if child is not None and not _gone(child):
            os.kill(child, signal.SIGKILL)


def test_stale_temporary_folders_are_swept_live_ones_kept(cache, tmp_path):
    warm = compiler.compile_cached(ADD, _flags(), name="add")        # makes the root, signed
    root = warm.dir.parent
    old = time.time() - 2 * compiler.STALE_S

    def planted(name: str, age: float) -> Path:
        folder = root / name
        folder.mkdir()
        (folder / "module.vmfb").write_bytes(b"half a module")
        os.utime(folder, (age, age))
        return folder

    killed = planted(".0123456789abcdef-k1ll3d", old)
    aside = planted(".bad-0123456789abcdef-x9", old)
    recent = planted(".1111111111111111-fresh", time.time())
    held_key = "2222222222222222" + "3" * 48
    held = planted(f".{held_key[:16]}-building", old)
    (root / f".claim-{held_key}").write_text("")
    holder = subprocess.Popen(["flock", str(root / f".claim-{held_key}"), "sleep", "120"])
    try:
        deadline = time.monotonic() + 30
        while not compiler._claim_held(root, held_key):
            assert holder.poll() is None and time.monotonic() < deadline, "flock never held the claim"
            time.sleep(0.05)
        _new_process()
        again = compiler.compile_cached(ADD, _flags(), name="add")
        assert again.cached and again.dir == warm.dir
        assert not killed.exists() and not aside.exists()
        assert recent.is_dir() and held.is_dir()
    finally:
        holder.kill()
        holder.wait()
    shutil.rmtree(recent)
