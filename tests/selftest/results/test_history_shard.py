"""``--shard I/N``: the shards are disjoint and cover the selection (so `merge` of their results
is the whole run), and with the history's durations they finish together where a split by count
would not."""
from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.results.history import shard
from accel_regress.results.history.store import History

from test_history_store import make_results


def test_parse():
    assert shard.parse("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "1/0", "a/b", "2", ""):
        with pytest.raises(ValueError):
            shard.parse(bad)


def _best(costs, n):
    return min(max(sum(c for c, s in zip(costs, split) if s == j) for j in range(n))
               for split in itertools.product(range(n), repeat=len(costs)))


def test_assign_is_a_partition_within_four_thirds_of_the_best():
    rnd = random.Random(7)
    for _ in range(40):
        n = rnd.randint(2, 3)
        costs = [round(rnd.expovariate(1.0), 3) for _ in range(rnd.randint(1, 8))]
        keys = [f"t{i}" for i in range(len(costs))]
        shards = shard.assign(keys, costs, n)
        assert all(0 <= s < n for s in shards)
        assert max(shard.loads(costs, shards, n)) <= 4 / 3 * _best(costs, n) + 1e-9
        assert shard.assign(list(reversed(keys)), list(reversed(costs)), n) == list(reversed(shards))


def test_unknown_durations_count_as_the_median():
    assert shard.loads([4.0, None, 2.0], [0, 1, 1], 2) == [4.0, 5.0]
    assert shard.loads([None, None], [0, 1], 2) == [1.0, 1.0]


TESTS = '''
import pytest
pytestmark = pytest.mark.family("gemm_partition_n")

@pytest.mark.parametrize("n", range(6))
def test_case(hw, n):
    pass
'''


def _collect(root: Path, history: str, spec: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--hw", "emu", "--history", history, "--shard", spec, "test_demo.py"],
                          cwd=root, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [ln for ln in proc.stdout.splitlines() if "::" in ln]


def test_shards_by_the_historys_durations(tmp_path):
    (tmp_path / "test_demo.py").write_text(TESTS)
    history = str(tmp_path / "history.sqlite")
    # The history knows test_case[emu-0] takes 10 s and the others 1 s: a count split (3 + 3)
    # would give one runner 12 s and the other 3 s; the balanced split is 10 s against 5 s.
    data = make_results(1, {str(n): "PASS" for n in range(6)})
    data["session"]["argv"] = ["test_demo.py"]
    for c in data["cases"]:
        c["nodeid"] = c["nodeid"].replace("tests/test_demo.py::test_x", "test_demo.py::test_case")
        c["duration_s"] = 10.0 if c["nodeid"].endswith("[emu-0]") else 1.0
    History(history).ingest(data)
    one, two = _collect(tmp_path, history, "1/2"), _collect(tmp_path, history, "2/2")
    assert sorted(one + two) == sorted(f"test_demo.py::test_case[emu-{n}]" for n in range(6))
    assert not set(one) & set(two)
    alone = one if "test_demo.py::test_case[emu-0]" in one else two
    assert alone == ["test_demo.py::test_case[emu-0]"], (one, two)


def test_bad_shard_is_a_usage_error(tmp_path):
    (tmp_path / "test_demo.py").write_text(TESTS)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "--history", "none", "--shard", "3/2", "test_demo.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4 and "--shard: '3/2': the shard I must be between 1 and N" in proc.stderr
