"""The rule finder (hardware/results/rules.py) on seed 003's tables and on tables made to have no rule."""
import itertools

import pytest

from accel_regress.results import rules

# Seed 003, verbatim: bf16 operands, f32 result.
SEED_2432 = {(2048, 2048, 2048): "PASS", (2048, 2048, 2432): "HANG", (2048, 2432, 2048): "PASS",
             (2048, 2432, 2432): "HANG", (2432, 2048, 2048): "PASS", (2432, 2048, 2432): "PASS",
             (2432, 2432, 2048): "PASS", (2432, 2432, 2432): "PASS"}
SEED_640 = {(512, 512, 512): "PASS", (512, 512, 640): "HANG", (512, 640, 512): "PASS",
            (512, 640, 640): "HANG", (640, 512, 512): "PASS", (640, 512, 640): "PASS",
            (640, 640, 512): "PASS", (640, 640, 640): "PASS"}


def _cube(values):
    return list(itertools.product(values, repeat=3))


@pytest.mark.parametrize("table, text", [(SEED_640, "HANG iff N == 640 and M != 640"),
                                         (SEED_2432, "HANG iff N == 2432 and M != 2432")])
def test_seed_tables_give_the_seed_rule(table, text):
    finding = rules.find(table)
    assert [r.text for r in finding.rules] == [text]
    assert not finding.no_rule
    assert finding.lines() == [f"rule: {text}"]


@pytest.mark.parametrize("table", [SEED_640, SEED_2432])
def test_the_rule_reproduces_every_row(table):
    (rule,) = rules.find(table).rules
    assert all(rule.holds(dims) == (verdict == "HANG") for dims, verdict in table.items())


def test_all_pass_and_all_fail():
    passing = {d: "PASS" for d in _cube((512, 640))}
    assert rules.find(passing).lines() == ["rule: every shape passes (8 shapes)"]
    hanging = {d: "HANG" for d in _cube((512, 640))}
    assert [r.text for r in rules.find(hanging).rules] == ["every shape is HANG"]


def test_no_simple_rule_for_parity():
    # FAIL iff an odd number of dims is 640: needs four clauses, so no rule of <= 3 atoms fits.
    table = {d: "FAIL" if sum(x == 640 for x in d) % 2 else "PASS" for d in _cube((512, 640))}
    finding = rules.find(table)
    assert not finding.rules and finding.no_rule == {"FAIL": 4}
    assert "no simple rule fits FAIL (4 of 8 shapes" in finding.describe()


def test_disjunction_when_any_dimension_breaks():
    table = {d: "COMPILE_ERROR" if 640 in d else "PASS" for d in _cube((512, 640))}
    assert [r.text for r in rules.find(table).rules] == ["COMPILE_ERROR iff M == 640 or K == 640 or N == 640"]


def test_one_rule_per_bad_verdict():
    table = {d: ("COMPILE_ERROR" if d[1] == 640 else "HANG" if d[2] == 640 else "PASS") for d in _cube((512, 640))}
    texts = sorted(r.text for r in rules.find(table).rules)
    assert texts == ["COMPILE_ERROR iff K == 640", "HANG iff N == 640 and K != 640"]


def test_skips_say_nothing():
    table = dict(SEED_640)
    table[(640, 640, 640)] = "SKIP"
    finding = rules.find(table)
    assert [r.text for r in finding.rules] == ["HANG iff N == 640 and M != 640"]
    assert finding.rows == 7 and finding.skipped == 1


def test_divisibility_on_a_wide_table_beats_naming_one_value():
    # A K-remainder bug over many K: the rule names the tile, not one of the 40 values seen.
    table = {}
    for k in range(8, 328, 8):
        for m in (1, 33):
            table[(m, k, 16)] = "FAIL" if k % 64 and k > 100 else "PASS"
    (rule,) = rules.find(table).rules
    assert "K % 64 != 0" in rule.text and "K > " in rule.text
    assert all(rule.holds(d) == (v == "FAIL") for d, v in table.items())


def test_rows_must_match_the_names():
    with pytest.raises(ValueError, match="2 dimensions, expected 3"):
        rules.find({(1, 2): "PASS"})


def test_empty_table():
    assert rules.find({}).lines() == ["rule: nothing to explain (no shape ran)"]
