"""The verdicts a case can end in, and the stages a failure is attributed to."""
PASS = "PASS"
FAIL = "FAIL"
HANG = "HANG"
CRASH = "CRASH"
COMPILE_ERROR = "COMPILE_ERROR"
SKIP = "SKIP"
XFAIL = "XFAIL"
XPASS = "XPASS"
INTERRUPTED = "INTERRUPTED"   # the session stopped while the case ran (results.json only)
FLAKY = "FLAKY"               # --repeat N gave mixed outcomes (detail['repeat'] has the rate k of N)
NOT_APPLICABLE = "NOT_APPLICABLE"   # the backend can never run the family (Backend.supports_op) or the case (errors.NotApplicable)

ALL = (PASS, FAIL, FLAKY, HANG, CRASH, COMPILE_ERROR, SKIP, NOT_APPLICABLE, XFAIL, XPASS, INTERRUPTED)
BAD = (FAIL, FLAKY, HANG, CRASH, COMPILE_ERROR, XPASS, INTERRUPTED)
NOT_RUN = (SKIP, NOT_APPLICABLE)

STAGES = ("build", "compile", "run", "compare")
# A FAIL at one of these stages says nothing about the device: the harness's own files or code
# (core/errors.py HarnessError; any other exception of the test), a family's own program that
# raised (a TypeError in its torch program), or an incomplete installation (SetupError). The gate
# blocks it as such; it is never proposed as a known bug.
NOT_THE_DEVICE = ("harness", "family", "setup")


def the_harness(case: dict) -> bool:
    """Whether a recorded case failed in the harness or its set-up, not on the device."""
    return case.get("verdict") == FAIL and case.get("stage") in NOT_THE_DEVICE

# Worse verdicts win when one (test, device) shows up twice (a rerun on a second runner, a record
# that holds a case twice): merge, gate and report judge by the worse.
_SEVERITY = {v: i for i, v in enumerate((NOT_APPLICABLE, SKIP, PASS, XFAIL, FLAKY, FAIL, COMPILE_ERROR, XPASS,
                                         INTERRUPTED, CRASH, HANG))}


def severity(verdict: str) -> int:
    return _SEVERITY.get(verdict, len(_SEVERITY))


def worst_by(cases, key) -> dict:
    """``key(case)`` -> the case with the worst verdict of those that share it (the first of equals)."""
    out: dict = {}
    for c in cases:
        k = key(c)
        if k not in out or severity(c["verdict"]) > severity(out[k]["verdict"]):
            out[k] = c
    return out
