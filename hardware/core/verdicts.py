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
