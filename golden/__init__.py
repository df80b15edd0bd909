"""What is right: cases, input generators, references, comparison and tolerance policy.

Nothing in this package knows about devices or backends.
"""
from accel_regress.golden.case import Case
from accel_regress.golden.compare import Census, Mismatch, assert_close, census

__all__ = ["Case", "Census", "Mismatch", "assert_close", "census"]
