"""Bracket scanning shared by the two PTO linters: C++ templates (lint.py) and PTO IR types (lint_ir.py).

'->' is never a bracket: it is C++'s member access and trailing return type, and MLIR's function arrow.
"""
from __future__ import annotations

from typing import Optional

OPEN, CLOSE = "([{<", ")]}>"


def _closes(text: str, i: int) -> bool:
    ch = text[i]
    return ch in ")]}" or (ch == ">" and (i == 0 or text[i - 1] != "-"))


def angle_end(text: str, start: int, stop: str = "") -> Optional[int]:
    """Index just past the '>' that closes the '<' at ``start`` (balanced), or None when a character of
    ``stop`` comes first (C++: ``;{}`` end a statement before any template does)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch in stop:
            return None
    return None


def split_top(text: str, sep: str) -> list[str]:
    """``text`` split on ``sep`` outside (), [], {} and <>."""
    parts, depth, cur = [], 0, []
    for i, ch in enumerate(text):
        if ch in OPEN:
            depth += 1
        elif _closes(text, i):
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts
