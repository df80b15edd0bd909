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

ALL = (PASS, FAIL, HANG, CRASH, COMPILE_ERROR, SKIP, XFAIL, XPASS, INTERRUPTED)
BAD = (FAIL, HANG, CRASH, COMPILE_ERROR, XPASS, INTERRUPTED)

STAGES = ("build", "compile", "run", "compare")
