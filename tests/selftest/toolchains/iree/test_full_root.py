"""Issue 47 defect 2: a full cache disk was the device's CRASH (OSError: No space left on device on
the claim) and COMPILE_ERROR (iree-compile's "No space left on device"), and ``expectations
update`` proposed them as known bugs, rewriting a real entry FAIL -> CRASH. ENOSPC of the
harness's own files is the harness's error: a FAIL at stage ``harness`` the gate blocks as such,
which ``expectations update`` leaves out. The disk is full for real: a 1 MiB tmpfs (as root),
filled to the byte count each test leaves free."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from accel_regress.core.errors import HarnessError
from accel_regress.toolchains.iree import compiler

pytestmark = pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability()))
pytest_plugins = ["pytester"]

ADD = "func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {\n" \
      "  %0 = arith.addf %a, %b : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"


def _flags():
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    return HOST_FLAGS


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs; ``fill(free)`` leaves ``free`` bytes of it (tmpfs counts whole pages)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"no tmpfs can be mounted here: {proc.stderr.strip() or 'not root'}")

    def fill(free: int) -> None:
        filler = mnt / "filler"
        filler.unlink(missing_ok=True)
        st = os.statvfs(mnt)
        filler.write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - free))
        st = os.statvfs(mnt)
        assert st.f_bavail * st.f_frsize == free
    yield mnt, fill
    subprocess.run(["umount", "-l", str(mnt)], check=True)


@pytest.fixture
def cache(small_disk, tmp_path, monkeypatch):
    mnt, fill = small_disk
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.delenv("ACCEL_GOLDEN_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(mnt / "cache"))
    (mnt / "cache" / "iree").mkdir(parents=True)
    _new_process()
    yield mnt / "cache", fill
    _new_process()


def _new_process():
    compiler._verified.clear()
    for memo in ("_states", "_scratch_built"):
        getattr(compiler, memo, {}).clear()
    from accel_regress.core import build_seal
    build_seal._said.clear()


@pytest.mark.parametrize("free, who", [(0, "IREE compile cache"), (4096, "IREE compile cache"),
                                       (8192, "iree-compile could not write")],
                         ids=["no-room-for-the-claim", "no-room-for-the-program", "no-room-for-the-module"])
def test_a_full_root_is_the_harness_error(cache, free, who):
    root, fill = cache
    fill(free)
    with pytest.raises(HarnessError) as raised:
        compiler.compile_cached(ADD, _flags(), name="add")
    assert raised.value.message.startswith(who) and "No space left on device" in raised.value.message
    # A claim whose holder's pid could not be written is not left behind, held: a waiter would wait it out.
    assert not list((root / "iree").glob(".claim-*"))
    fill(48 * 4096)
    assert compiler.compile_cached(ADD, _flags(), name="add").vmfb.is_file()


CASES = textwrap.dedent("""
    import pytest
    from accel_regress.golden import assert_close
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.plugin.ahead import case_fixture

    pytestmark = pytest.mark.family(R.OP)

    @pytest.fixture(scope="module")
    def cfg(request):
        return request.param

    @case_fixture
    def case(cfg, golden_seed):
        return R.make_case(cfg[0], cfg[1], "v", 256, golden_seed)

    @pytest.mark.parametrize("cfg", [("row_sum", (4, 33)), ("softmax", (4, 33))], indirect=True, ids=str)
    def test_reduction(hw, case):
        inputs = R.make_inputs(case)
        got, ref = hw.run(case, inputs), R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        for name in R.output_names(case.params["kind"]):
            assert_close(got[name], ref[name], tol=tol[name], name=name, zero_sign=R.zero_sign(case))
""")

# A real entry (a FAIL it knows) that a full disk must not rewrite, for the first case.
KNOWN = textwrap.dedent("""
    [[expect]]
    test = "test_reductions.py::test_reduction[('row_sum', (4, 33))]"
    verdict = "FAIL"
    reason = "a known wrong row sum"
    issue = "https://example.invalid/1"
""")


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "accel_regress", *args], capture_output=True, text=True, cwd=cwd)


def test_a_session_on_a_full_root_is_blocked_and_never_a_known_bug(cache, pytester):
    root, fill = cache
    pytester.makepyfile(test_reductions=CASES)
    (pytester.path / "expectations").mkdir()
    (pytester.path / "expectations" / "iree-cpu.toml").write_text(KNOWN)
    fill(0)
    reports = pytester.path / "reports"
    pytester.runpytest_subprocess("--hw", "iree-cpu", "--accel-compile-ahead", "2", "--report-dir", str(reports))
    data = json.loads((reports / "results.json").read_text())
    verdicts = sorted((c["verdict"], c["stage"]) for c in data["cases"])
    assert verdicts == [("FAIL", "harness")] * 2, verdicts
    assert all("No space left on device" in c["message"] for c in data["cases"])

    gate = _cli("gate", str(reports / "results.json"), cwd=pytester.path)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "2 case(s) got no verdict on the device: the suite's own files or a family's code failed" in gate.stdout
    assert "CRASH" not in gate.stdout and "known-bug list" not in gate.stdout

    update = _cli("expectations", "update", str(reports / "results.json"), "--dir", "expectations",
                  "--prune-stale", cwd=pytester.path)
    assert update.returncode == 0, update.stdout + update.stderr
    assert "already match this run" in update.stdout
    assert "2 case(s) got no verdict on the device (the suite's files or a family's code failed), left out" \
        in update.stdout
    assert (pytester.path / "expectations" / "iree-cpu.toml").read_text() == KNOWN
