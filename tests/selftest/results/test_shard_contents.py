"""Issue 47 defect 8: shards were checked by what they claim. A shard record with cases removed
merged and the gate said SHIP (fewer recorded than selected); shards run with different
``--golden-seed``, or whose ``revision`` differs, merged and shipped. `merge` and `gate` now count
what each shard holds against its split's share, and seed, revision and fault are part of the split.
The shards are real ``--shard`` sessions; the edits are what a hand (or a lost upload) does to a file."""
from __future__ import annotations

import json

from accel_regress.results import record

from test_history_shard import TESTS, _gate, _merge, _run   # the same sessions as the tiling tests


def _edited(path, out, edit):
    data = json.loads(path.read_text())
    edit(data)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data))
    return out


def test_shards_are_checked_by_what_they_hold(tmp_path, capsys):
    (tmp_path / "test_demo.py").write_text(TESTS.replace("time.sleep(n / 10)", "pass"))
    one = _run(tmp_path, "shard1", "none", "--shard", "1/2")
    two = _run(tmp_path, "shard2", "none", "--shard", "2/2")
    seeded = _run(tmp_path, "seeded", "none", "--shard", "2/2", "--golden-seed", "7")
    merged = tmp_path / "merged" / "results.json"
    assert _merge(capsys, one, two, "-o", merged)[0] == 0 and _gate(capsys, merged)[0] == 0

    # A shard's record with a case removed: its share is 3 tests, it holds 2.
    cut = _edited(two, tmp_path / "cut" / "results.json", lambda d: d["cases"].pop(0))
    code, out = _merge(capsys, one, cut, "-o", merged)
    assert code == 2 and f"{cut} (shard 2/2) holds 2 test(s), its split gives it 3" in out, out
    # The same cut made in a merged record: the gate counts each shard's cases there.
    assert _merge(capsys, one, two, "-o", merged)[0] == 0
    _edited(merged, merged, lambda d: d["cases"].remove(next(c for c in d["cases"] if c["source"] == str(two))))
    code, out = _gate(capsys, merged)
    assert code == 1 and "the merged shards do not tile their selection" in out and "holds 2 test(s)" in out, out

    # Other inputs (--golden-seed 7), other code (a revision), another fault: not one run.
    code, out = _merge(capsys, one, seeded, "-o", merged)
    assert code == 2 and "shards of different golden seeds (--golden-seed)" in out, out
    for field_name, value, words in (("revision", "0123abcd", "revisions"), ("fault", "faults.py:stale", "injected faults")):
        other = _edited(two, tmp_path / field_name / "results.json",
                        lambda d: d["session"].__setitem__(field_name, value))
        code, out = _merge(capsys, one, other, "-o", merged)
        assert code == 2 and f"shards of different {words}" in out and value in out, out
    assert record.load(one)["session"]["golden_seed"] != record.load(seeded)["session"]["golden_seed"]
