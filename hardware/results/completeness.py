"""Is a results record a whole, finished run, written by the session it describes? The gate says
SHIP only for one that is (issue 26, items 2, 3 and 6): each answer here is a blocking reason.

- no session: nothing says which run the file describes (and so whether it finished);
- ``in_progress``: the mark a session writes over results.json when it starts
  (hardware/results/record.py); still there means the session is running, or was killed before its
  end (SIGKILL, a lost runner), and the cases it finished are only in its results.jsonl;
- no cases: nothing was tested (an empty selection, a collection that found nothing);
- a pytest exit status that says a test failed while no case in the record did: the record lost
  the failure (a crashed xdist worker's case, before it was recorded);
- ``complete: false``: the session stopped early (``-x``, ``--maxfail``) and says so;
- one shard of a ``--shard`` split alone, or a merge whose shards do not tile their selection
  (missing shards, a shard twice, shards of different splits: hardware/results/tiling.py).
"""
from __future__ import annotations

from accel_regress.core import verdicts
from accel_regress.results import tiling

# pytest's exit statuses (pytest.ExitCode) without importing pytest into the commands.
_EXIT_WORDS = {1: "tests failed", 2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}
FAILED = (verdicts.FAIL, verdicts.FLAKY, verdicts.HANG, verdicts.CRASH, verdicts.COMPILE_ERROR,
          verdicts.INTERRUPTED, verdicts.XPASS)


def refusals(data: dict) -> list[str]:
    session = data.get("session")
    cases = data.get("cases") or []
    if not isinstance(session, dict) or not session:
        return ["the results file has no session: it does not say which run it describes, nor that it finished"]
    out = []
    if session.get("in_progress"):
        out.append("the session that writes this record never finished (it is still running, or it was killed "
                   "before its end): the record is incomplete; its finished cases are in results.jsonl")
        return out
    if not cases:
        out.append("the record has no cases: nothing was tested (an empty selection?)")
    status = session.get("exit_status")
    if isinstance(status, int) and status not in (0, 2) and status != 5 and cases \
            and not any(c.get("verdict") in FAILED for c in cases):
        out.append(f"pytest exited with status {status} ({_EXIT_WORDS.get(status, 'failure')}) but no case in the "
                   f"record failed: a failure was not recorded, the record is incomplete")
    if session.get("complete") is False and not session.get("interrupted"):
        out.append(f"the session stopped early ({session.get('stop_reason') or 'not every selected test ran'}): "
                   f"its results are incomplete")
    lone = tiling.lone_shard(session)
    if lone:
        out.append(lone)
    sources = [s for s in session.get("merged_from") or [] if isinstance(s, dict)]
    # What each shard holds, counted from the merged record's cases (merge keeps each one's source).
    held: dict = {}
    for c in cases:
        held.setdefault(c.get("source"), []).append(c.get("nodeid"))
    held = {s.get("file"): held.get(s.get("file"), []) for s in sources if tiling.shard_of(s)}
    out += [f"the merged shards do not tile their selection: {p}" for p in tiling.problems(sources, held)]
    return out
