"""The run memo's bound: runs with outputs are held while they fit the budget and while their test
module runs, then only as long as something else (a fixture) holds them; verdict-only runs stay;
what a memo holds is read-only."""
import gc

import numpy as np
import pytest

from accel_regress.core.errors import Hang
from accel_regress.core.run_memo import RunMemo, outputs_nbytes
from accel_regress.core.runner import Run
from accel_regress.golden.case import Case


def _run(name: str, nbytes: int = 0, error=None) -> Run:
    run = Run("b", Case("op", name), "sha")
    run.error = error
    run._outputs = None if error else {"out": np.zeros(nbytes, np.uint8)}
    return run


def test_over_budget_the_least_recently_used_is_let_go_and_lives_while_a_fixture_holds_it():
    memo = RunMemo(budget_bytes=100)
    a = _run("a", 80)
    memo.put("a", a, "mod")
    memo.put("b", _run("b", 80), "mod")
    assert memo.held_bytes == 80                 # a let go: b alone fits
    assert memo.get("a") is a                    # still held by the caller (a module fixture)
    del a
    memo.put("c", _run("c", 80), "mod")          # a (held again) let go once more
    gc.collect()
    assert memo.get("a") is None
    memo.put("a", _run("a", 80), "mod")
    assert memo.reruns == 1 and memo.runs == 4


def test_a_remembered_run_cannot_be_changed_by_one_of_its_readers():
    memo = RunMemo(budget_bytes=1 << 20)
    run = _run("r", 8)
    memo.put("r", run, "mod")
    with pytest.raises(ValueError, match="read-only"):
        memo.get("r")["out"][0] = 1


def test_a_run_without_outputs_is_kept_whatever_the_budget():
    memo = RunMemo(budget_bytes=0)
    hang = _run("h", error=Hang("no completion"))
    memo.put("h", hang, "mod")
    memo.release("mod")
    del hang
    gc.collect()
    assert memo.get("h").verdict == "HANG"


def test_release_lets_go_of_what_only_that_module_used():
    memo = RunMemo(budget_bytes=1 << 20)
    memo.put("x", _run("x", 10), "m1")
    memo.put("y", _run("y", 10), "m1")
    assert memo.get("y", "m2") is not None       # m2 uses y too
    memo.release("m1")
    gc.collect()
    assert memo.get("x") is None and memo.get("y") is not None
    assert outputs_nbytes(memo.get("y")) == 10
