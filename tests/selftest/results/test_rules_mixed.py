"""The rule finder (accel_regress/results/rules.py) finds three-atom rules mixing and / or, and
when no rule of at most three atoms fits, names the nearest one with the shapes it gets wrong
(issue 29 item 4)."""
import itertools

from accel_regress.results import rules


def _table(dims, hangs):
    return {d: "HANG" if hangs(*d) else "PASS" for d in itertools.product(*dims)}


def _explains(rule, table):
    return all(rule.holds(d) == (v == rule.verdict) for d, v in table.items())


def test_and_of_an_or():
    table = _table(((512, 640), (512, 1024, 2048), (512, 640)), lambda M, K, N: N == 640 and (M != 640 or K > 1024))
    (rule,) = rules.find(table).rules
    assert _explains(rule, table)
    assert rule.text == "HANG iff N == 640 and (M != 640 or K == 2048)"


def test_or_of_an_and():
    table = _table(((512, 640), (512, 640), (512, 640, 2048)), lambda M, K, N: N == 2048 or (M == 640 and K == 512))
    (rule,) = rules.find(table).rules
    assert _explains(rule, table)
    assert len([a for c in rule.clauses for a in c]) == 3


def test_seed_rule_stays_the_simplest():
    table = _table(((512, 640),) * 3, lambda M, K, N: N == 640 and M != 640)
    assert str(rules.find(table).rules[0]) == "HANG iff N == 640 and M != 640"


def test_no_rule_names_the_nearest_and_its_exceptions():
    table = _table(((512, 640, 2048, 2432),) * 3,
                   lambda M, K, N: N in (640, 2432) and M not in (640, 2432) and (K > 600 or M == 512))
    finding = rules.find(table)
    assert "HANG" in finding.no_rule and not finding.rules
    rule, wrong = finding.nearest["HANG"]
    assert len(wrong) == sum(rule.holds(d) != (v == "HANG") for d, v in table.items()) == 2
    text = finding.describe()
    assert f"nearest: {rule.text}, with 2 exception(s): 2048x512x640 PASS, 2048x512x2432 PASS" in text
