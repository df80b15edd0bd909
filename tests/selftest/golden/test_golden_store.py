"""The golden store (golden/store.py): kept across processes, checked, bounded, bypassable."""
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from accel_regress.golden import store
from accel_regress.golden.case import Case

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def where(tmp_path):
    store.configure(root=tmp_path / "golden")
    store.problems.clear()
    yield tmp_path / "golden"
    store.configure()


def _case(i=0, seed=None):
    c = Case.make("op", f"id{i}", {"n": i})
    return c if seed is None else Case(c.op, c.id, c.params, seed)


def _slow(value, calls):
    def fn():
        calls.append(1)
        time.sleep(store.MIN_SECONDS)
        return value
    return fn


def _value():
    return ({"A": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.ones(5, ml_dtypes.bfloat16)},
            [np.int8(3).item(), 1.5, float("inf"), "text", None], np.array(2.0))


def _same(a, b):
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b and type(a) is type(b)


def test_second_process_reads_what_the_first_computed(where):
    calls = []
    first = store.cached("inputs", _case(), _slow(_value(), calls))
    store.clear_memo()                       # as a new process would start
    second = store.cached("inputs", _case(), _slow(_value(), calls))
    assert len(calls) == 1
    _same(first, second)
    assert [p.name for p in where.rglob("*.npy")] and not list(where.rglob("*.pkl"))


def test_within_a_process_a_golden_is_computed_once_even_without_the_disk(where):
    store.configure(enabled=False, root=where)
    calls = []
    for _ in range(3):
        store.cached("expected", _case(), _slow(_value(), calls))
    assert len(calls) == 1
    assert not where.exists()


def test_key_covers_kind_params_and_seed(where):
    calls = []
    for kind, case in [("inputs", _case(0)), ("expected", _case(0)), ("inputs", _case(1)),
                       ("inputs", _case(0, seed=12345))]:
        store.cached(kind, case, _slow(np.zeros(1), calls))
    assert len(calls) == 4


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest"])
def test_corrupt_entry_is_reported_once_and_recomputed(where, damage):
    calls = []
    good = store.cached("inputs", _case(), _slow(_value(), calls))
    (entry,) = [p for p in where.glob("??/*") if not p.name.startswith(".")]
    npy = entry / "0.npy"
    if damage == "truncate":
        npy.write_bytes(npy.read_bytes()[:-7])
    elif damage == "flip":
        data = bytearray(npy.read_bytes())
        data[-1] ^= 0x40
        npy.write_bytes(bytes(data))
    else:
        (entry / store.MANIFEST).write_text("{not json")
    store.clear_memo()
    with pytest.warns(store.GoldenStoreWarning, match="corrupt"):
        again = store.cached("inputs", _case(), _slow(_value(), calls))
    assert len(calls) == 2
    _same(good, again)
    assert len(store.problems) == 1
    store.clear_memo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # the recomputed entry is whole again: no second report
        store.cached("inputs", _case(), _slow(_value(), calls))
    assert len(calls) == 2


def test_least_recently_used_entries_are_evicted(where, monkeypatch):
    calls = []
    big = np.zeros(1 << 16)                  # 512 KiB each
    for i in range(3):
        store.cached("inputs", _case(i), _slow(big, calls))
        os.utime(next(where.glob(f"??/{store.key_of('inputs', _case(i))}")) / store.MANIFEST, (i, i))
    store.clear_memo()
    store.cached("inputs", _case(0), _slow(big, calls))        # a hit: case 0 is now the newest
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_BYTES", str(2 * big.nbytes + 4096))
    store.cached("inputs", _case(3), _slow(big, calls))        # a write evicts down to the bound
    kept = {p.name for p in where.glob("??/*") if not p.name.startswith(".")}
    assert kept == {store.key_of("inputs", _case(i)) for i in (0, 3)}


def test_error_model_round_trips(where):
    from accel_regress.golden.tolerance import ErrorModel
    calls = []
    model = ErrorModel(np.full((2, 3), 0.5, np.float32), "accumulation", k=7.0, lib=np.float32(0.25))
    store.cached("expected", _case(), _slow((np.ones((2, 3)), model), calls))
    store.clear_memo()
    ref, again = store.cached("expected", _case(), _slow(None, calls))
    assert len(calls) == 1 and isinstance(again, ErrorModel)
    assert (again.kind, again.k, again.rows_correlated) == ("accumulation", 7.0, False)
    _same(model.tol, again.tol)
    assert again.lib.shape == (2, 3) and float(again.lib[1, 2]) == 0.25


def test_manifest_naming_other_code_is_corrupt(where):
    calls = []
    store.cached("inputs", _case(), _slow({"a": np.ones(2)}, calls))
    (entry,) = [p for p in where.glob("??/*") if not p.name.startswith(".")]
    meta = json.loads((entry / store.MANIFEST).read_text())
    meta["tree"] = {"t": "dataclass", "cls": "os:system", "items": [["command", {"t": "scalar", "v": "true"}]]}
    meta["mac"] = store._mac(store._signing_key(), entry.name, meta)   # even signed, no other code runs
    (entry / store.MANIFEST).write_text(json.dumps(meta))
    store.clear_memo()
    with pytest.warns(store.GoldenStoreWarning, match="not a golden class"):
        store.cached("inputs", _case(), _slow({"a": np.ones(2)}, calls))
    assert len(calls) == 2


def test_unstorable_value_is_computed_and_not_written(where):
    calls = []
    store.cached("expected", _case(), _slow({"cfg": object()}, calls))
    store.clear_memo()
    store.cached("expected", _case(), _slow({"cfg": object()}, calls))
    assert len(calls) == 2 and not list(where.rglob("*.npy"))


def test_cheap_golden_is_not_written(where):
    store.cached("inputs", _case(), lambda: np.zeros(3))
    assert not list(where.rglob("*.npy"))


_WORKER = """
import sys, time
from pathlib import Path
import numpy as np
from accel_regress.golden import store
from accel_regress.golden.case import Case
store.configure(root=Path(sys.argv[1]))
def fn():
    with open(sys.argv[2], "a") as f:
        f.write("x")
    time.sleep(0.5)
    return np.arange(1 << 18, dtype=np.float32)
v = store.cached("inputs", Case.make("op", "shared", {}), fn)
assert v.tobytes() == np.arange(1 << 18, dtype=np.float32).tobytes()
"""


def test_parallel_processes_compute_a_golden_once(where, tmp_path):
    counter = tmp_path / "calls"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(where), str(counter)], env=env)
             for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert counter.read_text() == "x"
    assert len([p for p in where.glob("??/*") if not p.name.startswith(".")]) == 1


def test_default_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("ACCEL_GOLDEN_CACHE", raising=False)
    monkeypatch.delenv("ACCEL_CACHE_DIR", raising=False)     # the one root, when a CI job sets it
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert store.default_root() == tmp_path / "accel-regress" / "golden"
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE", str(tmp_path / "elsewhere"))
    assert store.default_root() == tmp_path / "elsewhere"


_COUNTING_TEST = """
import time
import numpy as np
import pytest
from accel_regress.golden import store
from accel_regress.golden.case import Case

@pytest.mark.parametrize("i", [0, 1])
def test_golden(i, tmp_path_factory):
    def fn():
        with open({counter!r}, "a") as f:
            f.write("x")
        time.sleep(store.MIN_SECONDS)
        return np.full(4, i)
    assert store.cached("inputs", Case.make("op", f"c{{i}}", {{}}), fn).tolist() == [i] * 4
"""


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_no_golden_cache_bypasses_the_store(pytester, tmp_path, monkeypatch, how):
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE", str(tmp_path / "golden"))
    counter = tmp_path / "calls"
    pytester.makepyfile(test_counting=_COUNTING_TEST.format(counter=str(counter)))
    for _ in range(2):
        pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    assert counter.read_text() == "xx"           # the second session read both from the store
    if how == "ini":
        pytester.makeini("[pytest]\naccel_no_golden_cache = true\n")
        args = ()
    else:
        args = ("--no-golden-cache",)
    pytester.runpytest("-p", "no:cacheprovider", *args).assert_outcomes(passed=2)
    assert counter.read_text() == "xxxx"


def test_lock_files_do_not_accumulate(where):
    calls = []
    for i in range(5):
        store.cached("inputs", _case(i), _slow(np.ones(3), calls))
    assert len(calls) == 5
    assert list((where / "locks").iterdir()) == []


def test_writes_do_not_walk_the_store_each_time(where, monkeypatch):
    walks = []
    entries = store.entries
    monkeypatch.setattr(store, "entries", lambda *a: walks.append(1) or entries(*a))
    calls = []
    for i in range(8):
        store.cached("inputs", _case(i), _slow(np.ones(4), calls))
    assert len(calls) == 8 and len(walks) == 1
    monkeypatch.setenv("ACCEL_GOLDEN_CACHE_BYTES", "1")     # now every write passes the bound
    store.cached("inputs", _case(8), _slow(np.ones(4), calls))
    assert len(walks) > 1
    assert [p for p in where.glob("??/*") if not p.name.startswith(".")] == []
