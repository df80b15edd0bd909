"""What the golden store (golden/store.py) refuses to trust: a stale key, rewritten entries, planted
links, a folder others can write. Each test is an attack that the store before issue 24 fell for
(a broken device then PASSes, or the run writes where the attacker points)."""
import contextlib
import json
import os
import stat
import time
import warnings

import numpy as np
import pytest

from accel_regress.golden import store
from accel_regress.golden.case import Case
from accel_regress.golden.tolerance import ErrorModel

pytest_plugins = ["pytester"]


@pytest.fixture
def where(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "config" / "golden-store.key"))
    monkeypatch.delenv("ACCEL_GOLDEN_CACHE_SHARED", raising=False)
    store.configure(root=tmp_path / "golden")
    store.problems.clear()
    yield tmp_path / "golden"
    store.configure()


def _case(i=0):
    return Case.make("op", f"id{i}", {"n": i})


def _slow(value):
    def fn():
        time.sleep(store.MIN_SECONDS)
        return value
    return fn


def _entry(where):
    (entry,) = [p for p in where.glob("??/*") if not p.name.startswith(".")]
    return entry


@contextlib.contextmanager
def _reported():
    """The block's own checks first (the value served), then: the store said what it found."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        yield
    assert any("corrupt" in str(w.message) for w in seen), [str(w.message) for w in seen]


def _fresh(value):
    """What a new process sees: this process's memo forgotten."""
    store.clear_memo()
    return value


# --- item 2: the store trusts what is in it --------------------------------------------------------

def test_rewritten_data_and_checksum_are_not_served(where):
    good = np.arange(6, dtype=np.float32)
    store.cached("expected", _case(), _slow(good))
    entry = _entry(where)
    forged = good * 2                          # the reference a broken (doubling) device matches
    np.save(entry / "0.npy", forged, allow_pickle=False)
    meta = json.loads((entry / store.MANIFEST).read_text())
    meta["files"][0]["sha256"] = store._digest(forged)
    (entry / store.MANIFEST).write_text(json.dumps(meta))
    _fresh(None)
    with _reported():
        got = store.cached("expected", _case(), _slow(good))
        assert got.tobytes() == good.tobytes()


def test_a_manifest_edit_cannot_switch_the_statistics_off(where):
    model = ErrorModel(np.full(4, 0.5), "rounding", dtype="bf16")
    store.cached("expected", _case(), _slow((np.ones(4), model)))
    entry = _entry(where)
    meta = json.loads((entry / store.MANIFEST).read_text())
    items = meta["tree"]["items"][1]["items"]
    for item in items:
        if item[0] == "kind":
            item[1] = {"t": "scalar", "v": None}    # kind None: no statistical check
    (entry / store.MANIFEST).write_text(json.dumps(meta))
    _fresh(None)
    with _reported():
        _, again = store.cached("expected", _case(), _slow((np.ones(4), model)))
        assert again.kind == "rounding"


def test_an_entry_moved_under_another_key_is_not_served(where):
    store.cached("expected", _case(0), _slow(np.zeros(3)))
    a = _entry(where)
    b_key = store.key_of("expected", _case(1))
    (where / b_key[:2]).mkdir(exist_ok=True)
    a.rename(where / b_key[:2] / b_key)
    _fresh(None)
    with _reported():
        got = store.cached("expected", _case(1), _slow(np.ones(3)))
        assert got.tolist() == [1.0, 1.0, 1.0]


def test_a_symlink_planted_in_locks_creates_nothing(where, tmp_path):
    target = tmp_path / "planted-target"
    key = store.key_of("expected", _case())
    (where / "locks").mkdir(parents=True, mode=0o700)
    os.chmod(where, 0o700)
    os.symlink(target, where / "locks" / f"{key}.lock")
    got = store.cached("expected", _case(), _slow(np.ones(3)))
    assert got.tolist() == [1.0, 1.0, 1.0]
    assert not target.exists() and not target.is_symlink()


def test_a_symlinked_shard_is_not_written_through(where, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    key = store.key_of("expected", _case())
    where.mkdir(mode=0o700)
    os.symlink(outside, where / key[:2])
    store.cached("expected", _case(), _slow(np.ones(3)))
    assert list(outside.iterdir()) == []


def test_the_store_folder_is_created_private(where):
    store.cached("expected", _case(), _slow(np.ones(3)))
    assert stat.S_IMODE(where.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in where.rglob("*"))


@pytest.mark.parametrize("mode", [0o770, 0o777, 0o1777])
def test_a_store_others_can_write_is_refused_unless_shared(where, monkeypatch, mode):
    where.mkdir()
    os.chmod(where, mode)
    with pytest.raises(Exception) as err:
        store.cached("expected", _case(), _slow(np.ones(3)))
    assert "refused" in str(err.value) and str(where) in str(err.value) and f"{mode:04o}" in str(err.value)
    assert "--golden-cache-shared" in str(err.value)
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_SHARED", "1")
    store.clear_memo()
    assert store.cached("expected", _case(), _slow(np.ones(3))).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder owned by another user needs root")
def test_a_store_owned_by_another_user_is_refused(where):
    where.mkdir(mode=0o700)
    os.chown(where, 65534, 65534)
    with pytest.raises(Exception) as err:
        store.cached("expected", _case(), _slow(np.ones(3)))
    assert "refused" in str(err.value) and "owned by uid 65534" in str(err.value)


# --- item 1: a stale golden --------------------------------------------------------------------------

def _outside_family(site, scale, version="1.0"):
    """An operator team's package as pip installs it: its golden module registered by entry point."""
    pkg = site / "team_ops"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "golden.py").write_text(f'OP = "double"\nSCALE = {scale}\n')
    (pkg / "emu.py").write_text("def run(case, inputs):\n    return {}\n")
    for old in site.glob("team_ops-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = site / f"team_ops-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: team-ops\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[accel_regress.families]\ndouble = team_ops.golden\n\n"
                                           "[accel_regress.emu_models]\ndouble = team_ops.emu\n")


def test_an_outside_family_whose_golden_changes_gets_a_fresh_golden(where, tmp_path, monkeypatch):
    site = tmp_path / "site"
    _outside_family(site, scale=1)
    monkeypatch.syspath_prepend(str(site))
    case = Case.make("double", "n4", {"n": 4})
    store.configure(root=where)
    assert store.cached("expected", case, _slow(np.full(4, 1.0))).tolist() == [1.0] * 4
    _outside_family(site, scale=2)            # the team doubles its reference on purpose
    store.configure(root=where)               # a new session, the store warm
    assert store.cached("expected", case, _slow(np.full(4, 2.0))).tolist() == [2.0] * 4


def test_the_key_holds_the_outside_distribution_version_and_not_its_device_side(where, tmp_path, monkeypatch):
    site = tmp_path / "site"
    _outside_family(site, scale=1)
    monkeypatch.syspath_prepend(str(site))
    case = Case.make("double", "n4", {"n": 4})
    store.configure(root=where)
    first = store.key_of("expected", case)
    (site / "team_ops" / "emu.py").write_text("def run(case, inputs):\n    return {'y': 1}\n")
    store.configure(root=where)
    assert store.key_of("expected", case) == first      # its emu model computes no golden: still warm
    _outside_family(site, scale=1, version="1.1")
    store.configure(root=where)
    assert store.key_of("expected", case) != first


def test_verify_golden_fails_loudly_naming_the_stale_entry(where):
    store.cached("expected", _case(), _slow(np.ones(4)))
    entry = _entry(where)
    store.configure(root=where, verify=1.0)   # what computes the golden changed outside the key
    with pytest.raises(AssertionError) as err:
        store.cached("expected", _case(), _slow(np.full(4, 2.0)))
    assert str(entry) in str(err.value) and "expected of op id0" in str(err.value)
    assert not entry.exists()                 # the next session computes it afresh
    store.clear_memo()
    assert store.cached("expected", _case(), _slow(np.full(4, 2.0))).tolist() == [2.0] * 4


def test_verify_golden_recomputes_the_asked_share(where):
    for i in range(40):
        store.cached("expected", _case(i), _slow(np.full(2, float(i))))
    store.configure(root=where, verify=0.25)
    store._random.seed(1)
    before = store.stats["verified"]
    for i in range(40):
        assert store.cached("expected", _case(i), _slow(np.full(2, float(i)))).tolist() == [float(i)] * 2
    assert 3 <= store.stats["verified"] - before <= 20


# --- through the plugin: an outside team's session ---------------------------------------------------

TEAM_GOLDEN = '''
import time
from pathlib import Path
import numpy as np
from accel_regress.golden.case import Case
OP = "double"
SCALE = {scale}
def make_case(n):
    return Case.make(OP, f"n{{n}}", {{"n": n}})
def make_inputs(case):
    return {{"x": np.arange(case.params["n"], dtype=np.float64)}}
def tolerances(case, inputs, ref):
    from accel_regress.golden.tolerance import exact_model
    return {{"y": exact_model(np.shape(ref["y"]))}}
def reference(case, inputs):
    time.sleep(0.05)                          # worth keeping in the store
    extra = float(Path({extra!r}).read_text())   # a file outside the package: not in the store's key
    return SCALE * inputs["x"] + extra
'''

TEAM_TEST = '''
import numpy as np
import pytest
from accel_regress.golden import assert_close, store
from team_ops import golden
pytestmark = pytest.mark.family("double")

@pytest.fixture
def case(request):
    return golden.make_case(request.param)

@pytest.fixture
def inputs(case):
    return store.cached("inputs", case, lambda: golden.make_inputs(case))

@pytest.fixture
def expected(case, inputs):
    return store.cached("expected", case, lambda: golden.reference(case, inputs))

@pytest.mark.parametrize("case", [4, 8], indirect=True)
def test_double(hw, case, inputs, expected):
    assert_close(hw.run(case, inputs)["y"], expected, tol=np.zeros(len(expected)), name="y")
'''


@pytest.fixture
def team_session(pytester, tmp_path, monkeypatch):
    site, extra = tmp_path / "site", tmp_path / "extra.txt"
    extra.write_text("0")
    pkg = site / "team_ops"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "emu.py").write_text("def run(case, inputs):\n    return {'y': 2 * inputs['x']}\n")
    info = site / "team_ops-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: team-ops\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[accel_regress.families]\ndouble = team_ops.golden\n\n"
                                           "[accel_regress.emu_models]\ndouble = team_ops.emu\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE", str(tmp_path / "store"))
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_KEY_FILE", str(tmp_path / "store.key"))
    pytester.makepyfile(test_double=TEAM_TEST)         # the plugin: its installed pytest11 entry point

    def run(scale, *args):
        (pkg / "golden.py").write_text(TEAM_GOLDEN.format(scale=scale, extra=str(extra)))
        return pytester.runpytest_subprocess("--hw", "emu", "--isolation", "none", "-p", "no:cacheprovider", *args)
    run.extra = extra
    return run


def test_an_outside_golden_doubled_on_purpose_fails_with_the_store_warm(team_session):
    team_session(2).assert_outcomes(passed=2)
    team_session(4).assert_outcomes(failed=2)     # before issue 24: 2 passed, from the user cache


def test_verify_golden_catches_what_the_key_cannot_see(team_session):
    team_session(2).assert_outcomes(passed=2)
    team_session.extra.write_text("1")            # the reference changes through a file the key cannot name
    team_session(2).assert_outcomes(passed=2)     # served from the store: the blind spot --verify-golden covers
    res = team_session(2, "--verify-golden")
    res.assert_outcomes(errors=2)
    res.stdout.fnmatch_lines(["*GoldenStoreMismatch: golden store: expected of double n4: the stored entry *"
                              "differs from a fresh computation (array 0 (float64 (4,)): the values differ)*"])


@pytest.mark.parametrize("args, ini, error", [
    (("--verify-golden=2",), None, "--verify-golden: '2' is not a fraction between 0 and 1"),
    ((), "accel_verify_golden = half", "accel_verify_golden (ini file *): could not convert string to float: 'half'"),
])
def test_verify_golden_takes_a_fraction(team_session, pytester, args, ini, error):
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    res = team_session(2, *args)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"*{error}*"])



# --- the signing key ---------------------------------------------------------------------------------

def test_the_signing_key_lives_outside_the_store_and_is_private(where, tmp_path):
    store.cached("expected", _case(), _slow(np.ones(3)))
    key = tmp_path / "config" / "golden-store.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert not any(p.name == key.name for p in where.rglob("*"))


def test_a_loose_signing_key_is_refused(where, tmp_path):
    key = tmp_path / "config" / "golden-store.key"
    key.parent.mkdir()
    key.write_bytes(os.urandom(32))
    os.chmod(key, 0o644)
    with pytest.raises(store.GoldenStoreError, match="signing key .* is readable by others"):
        store.cached("expected", _case(), _slow(np.ones(3)))


def test_an_entry_signed_with_another_key_is_recomputed_quietly(where, tmp_path):
    """A store copied from another machine (or a CI cache) is not ours: recomputed, not reported."""
    store.cached("expected", _case(), _slow(np.ones(3)))
    store.configure(root=where, key_file=tmp_path / "other.key")
    before = store.stats["foreign"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.cached("expected", _case(), _slow(np.full(3, 2.0))).tolist() == [2.0] * 3
    assert store.stats["foreign"] == before + 1
