"""Issue 47 defect 5: a claim on a cache entry held by another process (util-linux `flock` on the
real claim file, as `flock <root>/iree/.claim-<key> sleep 75 &` did) made the case that needs
the entry a HANG: it waited for the claim up to the compile's own bound, past the case's. The
wait is bounded by half of what is left of the case's bound (core/case_bound.py), the claim and
its holder are named, and the case compiles unclaimed; a compile-ahead thread the session told
to stop stops waiting at once."""
import shutil
import subprocess
import textwrap
import threading
import time

import pytest

from accel_regress.toolchains.iree import compiler

pytestmark = [pytest.mark.skipif(compiler.availability() is not None, reason=str(compiler.availability())),
              pytest.mark.skipif(shutil.which("flock") is None, reason="util-linux flock is not installed")]
pytest_plugins = ["pytester"]

ONE_REDUCTION = textwrap.dedent("""
    import pytest
    from accel_regress.golden import assert_close
    from accel_regress.families.f32_reduction import golden as R

    pytestmark = pytest.mark.family(R.OP)

    def test_row_sum(hw, golden_seed):
        case = R.make_case("row_sum", (4, 33), "v", 256, golden_seed)
        inputs = R.make_inputs(case)
        got, ref = hw.run(case, inputs), R.reference(case, inputs)
        tol = R.tolerances(case, inputs, ref)
        assert_close(got["sum"], ref["sum"], tol=tol["sum"], name="sum")
""")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "outside" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_IREE_CACHE", raising=False)
    monkeypatch.setenv("ACCEL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _held(path) -> subprocess.Popen:
    """util-linux flock holding ``path`` until killed; returns once the lock is taken."""
    holder = subprocess.Popen(["flock", str(path), "sleep", "600"])
    for _ in range(600):
        if subprocess.run(["flock", "-n", str(path), "true"]).returncode != 0:
            return holder
        time.sleep(0.05)
    holder.kill()
    pytest.fail("flock never took the claim")


def _key_of_the_row_sum():
    from accel_regress.backends.iree_cpu import IreeCpuBackend
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.toolchains.iree.program import program_for
    program = program_for(R.make_case("row_sum", (4, 33), "v", 256, 0))
    return compiler._key(program.mlir, IreeCpuBackend()._flags(program), compiler.VMFB, None)


def test_a_claim_held_by_another_process_is_not_the_cases_hang(cache, pytester):
    pytester.makepyfile(test_one=ONE_REDUCTION)
    root = cache / "iree"
    root.mkdir(parents=True)
    holder = _held(root / f".claim-{_key_of_the_row_sum()}")
    try:
        res = pytester.runpytest("--hw", "iree-cpu", "--accel-compile-ahead", "0", "--case-timeout", "40")
    finally:
        holder.kill()
        holder.wait()
    assert "HANG" not in res.stdout.str()
    res.assert_outcomes(passed=1)


def test_a_stopped_ahead_thread_stops_waiting_for_a_claim(cache):
    """The session's end tells compile-ahead threads to stop (util/children.stop): one waiting
    for another process's claim goes on at once instead of holding the session's end."""
    from accel_regress.util import children
    root = compiler.cache_root()
    root.mkdir(parents=True)
    holder = _held(root / ".claim-k")
    got = {}

    def wait():
        with compiler.claim(root, "k", wait_s=600) as held:
            got["held"] = held
    try:
        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.3)
        children.stop({t.ident})
        t.join(timeout=60)
        alive = t.is_alive()
    finally:
        holder.kill()
        holder.wait()
        children._stopped.discard(t.ident)      # what the thread's forget() would have done
    assert not alive and got == {"held": False}
