"""``gate --baseline history``: the gate's baseline and known-flaky cases from the history.

The baseline of each device is its previous run in the history of the same project and branch,
with the evidence's provenance below (the gated run itself and later runs left out); with none,
there is no baseline and the gate's note says so. A failure is *known flaky* when its outcome flipped at least twice, at a rate above
the policy's bound (``[flaky] bound``, over the last ``[flaky] window`` runs of its evidence); the gate then
reports it with its rate and the evidence it is from, and does not block on it unless ``[flaky]
blocks``. A HANG or CRASH is never downgraded (a flaky hang still stops a release). A known-bug
expectation still wins: such a case is XFAIL in the run, not a failure. Evidence is only the
same project's and branch's sessions on the device (questions.gate_inputs); imports count with
``--flaky-imports``; fault runs count only when the gated run is itself a fault run gated with
``--allow-fault`` (the selftests' stand-in for a flaky device), never for a clean run.
"""
from __future__ import annotations

from typing import Optional

from accel_regress.core import verdicts
from accel_regress.results.history import questions as Q
from accel_regress.results.history.location import HistoryError, resolve
from accel_regress.results.history.store import History, _reason
from accel_regress.results.keys import device_of, test_key


NEVER_FLAKY = (verdicts.HANG, verdicts.CRASH)      # never downgraded to "known flaky"


def from_history(data: dict, location: Optional[str], failures: tuple, bound: float, window: int,
                 with_faults: bool, with_imports: bool = False) -> tuple[Optional[dict], dict, str]:
    """(baseline results dict, {(test key, device): why it is known flaky}, a note for the gate)."""
    where = resolve(location)
    if where is None:
        raise HistoryError("--baseline history with --history none: there is no history to compare with")
    failing = sorted({(test_key(c["nodeid"], c.get("backend")), device_of(c, data))
                      for c in data.get("cases") or []
                      if c.get("verdict") in failures and c.get("verdict") not in NEVER_FLAKY})
    history = History(where, create=False)
    try:
        found = Q.gate_inputs(history, data, failing, window=window, with_faults=with_faults,
                              with_imports=with_imports)
    except Exception as exc:      # a database error mid-query: the gate's one line, no traceback
        raise HistoryError(f"history {history.where}: {_reason(exc)}") from None
    finally:
        history.close()
    # Two flips at least, as `history flaky` asks: a failure that followed passes and stayed is a
    # regression however short the window, not a flake.
    known = {k: f"{f.describe()}; {f.evidence()}" for k, f in found.rates.items()
             if (f.flips >= 2 or f.repeat_flaky) and f.rate > bound}
    return found.baseline, known, found.note
