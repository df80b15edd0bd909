"""``--shard I/N``: the shards are disjoint and cover the selection (so `merge` of their results
is the whole run), whatever the runners' histories hold and in whichever order they start (issue 34
item 1); balanced by a durations snapshot file they finish together where a split by count would
not; `merge` and `gate` refuse shards that do not tile their selection; an absurd N is a usage
error at once (item 9). On SQLite and on a real PostgreSQL server."""
from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.results import record
from accel_regress.results.history import shard
import suite_in_process


def test_parse():
    assert shard.parse("2/4") == (2, 4)
    assert shard.parse(" 1 / 1000 ") == (1, 1000)
    for bad in ("0/2", "3/2", "1/0", "a/b", "2", "", "1/1001", "1/99999999999999999999", "\u0662/\u0663", "1/2/3"):
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


# test_case[emu-N] takes N/10 s: a split by the durations differs from a split by count.
TESTS = """
import time
import pytest
pytestmark = pytest.mark.family("gemm_partition_n")

@pytest.mark.parametrize("n", range(6))
def test_case(hw, n):
    time.sleep(n / 10)
"""
ALL = [f"test_demo.py::test_case[emu-{n}]" for n in range(6)]


def _pytest(root: Path, *argv: str, subprocess_: bool = False) -> suite_in_process.Session:
    if subprocess_:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                               *argv], cwd=root, capture_output=True, text=True, timeout=300)
        return suite_in_process.Session(proc.returncode, proc.stdout + proc.stderr, None)
    return suite_in_process.run(root, "-p", "no:hypothesispytest", *argv)


def _collect(root: Path, spec: str, *argv: str) -> list[str]:
    session = _pytest(root, "--collect-only", "-q", "--hw", "emu", "--shard", spec, *argv, "test_demo.py")
    assert session.rc == 0, session.out
    return [ln for ln in session.out.splitlines() if "::" in ln]


def _run(root: Path, name: str, history: str, *argv: str, subprocess_: bool = False) -> Path:
    """The sessions run in this process (issue 51), but in each tiling test one shard runs in a
    process of its own: a split that depends on something of its process (str hashes, a pid) must show."""
    report = root / name
    session = _pytest(root, "-q", "--hw", "emu", "--isolation", "none", "--report-dir", str(report),
                      "--history", history, *argv, "test_demo.py", subprocess_=subprocess_)
    assert session.rc == 0, session.out
    assert history == "none" or "history: run" in session.out, session.out
    return report / "results.json"


def _ran(path: Path) -> list[str]:
    return [c["nodeid"] for c in record.load(path)["cases"]]


def _merge(capsys, *argv) -> tuple[int, str]:
    from accel_regress.results import merge
    code = merge.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def _gate(capsys, *argv) -> tuple[int, str]:
    from accel_regress.results import gate
    code = gate.main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def _history(kind: str, request, tmp_path: Path, name: str) -> str:
    if kind == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    return request.getfixturevalue("postgres").create_database()


def _tiles_and_ships(tmp_path, capsys, one: Path, two: Path) -> None:
    a, b = _ran(one), _ran(two)
    assert sorted(a + b) == ALL, (a, b)          # every test once: none lost, none twice
    for path, i in ((one, 1), (two, 2)):
        session = record.load(path)["session"]
        assert session["shard"] == [i, 2] and session["selection"]["tests"] == 6
    merged = tmp_path / "merged" / "results.json"
    snapshot = tmp_path / shard.DURATIONS_FILE
    code, out = _merge(capsys, one, two, "-o", merged, "--write-durations", snapshot)
    assert code == 0, out
    code, out = _gate(capsys, merged)
    assert code == 0 and out.startswith("SHIP"), out
    # The merge's durations are the next runs' snapshot (pytest-split's format): the slow tests
    # now go to different shards, and the split is a new one (its digest says so).
    seconds, _ = shard.load_durations(snapshot)
    assert sorted(seconds) == ALL and seconds[ALL[5]] >= 0.5 > seconds[ALL[0]]
    nxt = _collect(tmp_path, "1/2", "--history", "none")
    assert nxt != a and (ALL[5] in nxt) != (ALL[4] in nxt), nxt


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_shards_one_after_the_other_against_one_history_tile_the_selection(kind, request, tmp_path, capsys):
    """Shard 2/2 stores its durations in the history before shard 1/2 starts: the split must not
    move (on main e6e33d9 shard 1/2 ran test_case 1, 3, 5 again and 0, 2, 4 never ran)."""
    (tmp_path / "test_demo.py").write_text(TESTS)
    history = _history(kind, request, tmp_path, "shared")
    two = _run(tmp_path, "shard2", history, "--shard", "2/2")
    one = _run(tmp_path, "shard1", history, "--shard", "1/2", subprocess_=True)
    _tiles_and_ships(tmp_path, capsys, one, two)


def test_shards_against_two_separate_histories_tile_the_selection(request, tmp_path, capsys):
    """Each runner its own history (a fresh SQLite file; a PostgreSQL server that already holds a
    whole run's durations), one of them under xdist: the same split all the same."""
    (tmp_path / "test_demo.py").write_text(TESTS)
    server = _history("postgresql", request, tmp_path, "b")
    _run(tmp_path, "earlier", server)
    one = _run(tmp_path, "shard1", _history("sqlite", request, tmp_path, "a"), "--shard", "1/2", subprocess_=True)
    two = _run(tmp_path, "shard2", server, "--shard", "2/2", "-n", "2")     # under xdist: the workers split
    _tiles_and_ships(tmp_path, capsys, one, two)


def test_a_shard_left_out_or_splits_mixed_are_refused_with_the_reason(tmp_path, capsys):
    (tmp_path / "test_demo.py").write_text(TESTS.replace("time.sleep(n / 10)", "pass"))
    one = _run(tmp_path, "shard1", "none", "--shard", "1/2")
    two = _run(tmp_path, "shard2", "none", "--shard", "2/2")
    again = _run(tmp_path, "again", "none", "--shard", "2/2")
    third = _run(tmp_path, "third", "none", "--shard", "2/3")
    out_file = tmp_path / "merged" / "results.json"
    # A lone shard: the gate refuses it as a release decision; merge refuses it as a whole run.
    code, out = _gate(capsys, one)
    assert code == 1 and "this record is shard 1/2 alone (3 of the selection's 6 tests): not a release decision" in out, out
    code, out = _merge(capsys, one, "-o", out_file)
    assert code == 2 and "shard(s) 2/2 missing: 3 of the selection's 6 tests never ran" in out, out
    assert not out_file.exists()
    # Shards of two splits (N = 2 and N = 3): named, with each file's split.
    code, out = _merge(capsys, one, third, "-o", out_file)
    assert code == 2 and "shards of different splits" in out and str(third) in out and str(one) in out, out
    # The same shard twice (a runner retried): named, and the tests that ran twice.
    code, out = _merge(capsys, one, two, again, "-o", out_file)
    assert code == 2 and "shard 2/2 given 2 times" in out and "3 test(s) ran in two shards" in out, out
    # A merged record that lost a shard (edited, or from an older merge): the gate refuses it.
    assert _merge(capsys, one, two, "-o", out_file)[0] == 0
    data = record.load(out_file)
    assert _gate(capsys, out_file)[0] == 0
    data["session"]["merged_from"] = [s for s in data["session"]["merged_from"] if s["shard"] == [1, 2]]
    data["cases"] = [c for c in data["cases"] if c["source"] == str(one)]
    out_file.write_text(json.dumps(data))
    code, out = _gate(capsys, out_file)
    assert code == 1 and "the merged shards do not tile their selection: on emu: shard(s) 2/2 missing" in out, out


def test_shards_by_the_durations_snapshot(tmp_path):
    """.test_durations (pytest-split's file) says test_case[emu-0] takes 10 s and the others 1 s: a
    count split (3 + 3) would give one runner 12 s and the other 3 s; the balanced one is 10 s
    against 5 s. A history that says otherwise changes nothing."""
    (tmp_path / "test_demo.py").write_text(TESTS)
    (tmp_path / shard.DURATIONS_FILE).write_text(json.dumps({n: 10.0 if n.endswith("[emu-0]") else 1.0 for n in ALL}))
    one, two = _collect(tmp_path, "1/2", "--history", "none"), _collect(tmp_path, "2/2", "--history", "none")
    assert sorted(one + two) == ALL and not set(one) & set(two)
    alone = one if "test_demo.py::test_case[emu-0]" in one else two
    assert alone == ["test_demo.py::test_case[emu-0]"], (one, two)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({n: 30.0 if n.endswith("[emu-5]") else 1.0 for n in ALL}))
    assert _collect(tmp_path, "1/2", "--shard-durations", str(other), "--history", "none") == \
        ["test_demo.py::test_case[emu-5]"]


@pytest.mark.parametrize("spec, words", [
    ("3/2", "--shard: '3/2': the shard I must be between 1 and N"),
    ("1/99999999999999999999", "--shard: '1/99999999999999999999': N must be between 1 and 1000"),
    ("1/100000", "N must be between 1 and 1000"),
])
def test_bad_shard_is_a_usage_error_at_once(tmp_path, spec, words):
    """Item 9: on main e6e33d9 --shard 1/99999999999999999999 allocated one heap entry per shard
    (minutes, then MemoryError). The child's address space is bounded here, so today's code
    fails fast instead of eating the machine's memory."""
    import resource

    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))     # 1.5 GiB: a collection needs < 1
    (tmp_path / "test_demo.py").write_text(TESTS)
    # A subprocess: the bound is on its address space.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "--collect-only", "-q", "--hw", "emu", "--history", "none", "--shard", spec, "test_demo.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=bounded)
    assert proc.returncode == 4 and words in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_a_bad_durations_snapshot_is_a_usage_error(tmp_path):
    (tmp_path / "test_demo.py").write_text(TESTS)
    for text, words in (("{", "not JSON"), ('{"a": -1}', "is not a number of seconds"), ("[1]", "not of [node id")):
        (tmp_path / "d.json").write_text(text)
        session = _pytest(tmp_path, "--collect-only", "-q", "--hw", "emu", "--history", "none", "--shard", "1/2",
                          "--shard-durations", "d.json", "test_demo.py")
        assert session.rc == 4 and "--shard-durations: d.json: " in session.out and words in session.out, \
            session.out[-2000:]
