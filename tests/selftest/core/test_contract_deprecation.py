"""A contract's previous signature (core/contracts.py DEPRECATED): accepted with one warning naming
the change until the version it names, then refused with what to change (issue 48)."""
import types
import warnings

import accel_regress
from accel_regress.core import contracts


def _old_family():
    m = types.ModuleType("team_ops.old_golden")
    m.OP = "old"
    m.make_inputs = lambda case: {}
    m.reference = lambda inputs: {}         # contract 1
    m.tolerances = lambda case, inputs, ref: {}
    return m


def test_previous_reference_warns_once_then_is_refused(monkeypatch):
    monkeypatch.setattr(contracts, "_warned", set())
    module = _old_family()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert contracts.problems("family", module) == []
        assert contracts.problems("family", module) == []
    assert [w.category for w in caught] == [contracts.AccelRegressDeprecationWarning]
    assert "reference(inputs) became reference(case, inputs)" in str(caught[0].message)
    monkeypatch.setattr(accel_regress, "__version__", "0.3.0")
    assert contracts.problems("family", module) == [
        "reference has the signature accel-regress 0.3.0 no longer accepts: reference(inputs) became "
        "reference(case, inputs) in contract 2 (accel-regress 0.1.0): add the case as its first parameter"]


def test_a_signature_that_was_never_the_contract_is_refused(monkeypatch):
    module = _old_family()
    module.reference = lambda: {}
    assert contracts.problems("family", module) == ["<lambda>() cannot be called as reference(case, inputs)"]
