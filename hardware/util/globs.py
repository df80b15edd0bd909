"""Test-id patterns of the expectation files, matched in linear time.

``*`` matches any run of characters and ``{a,b}`` either alternative; everything else, brackets
included, is literal, so a pytest node id pastes in as it is. A regular expression built from such
a pattern (``.*a.*a.*a...``) backtracks polynomially, with the exponent the number of stars, so a
hostile or careless pattern could stall a run: here the braces are expanded (a bounded number of
alternatives) and each alternative is matched by its literal pieces, leftmost first, which is
optimal for ``*``-only globs and costs O(len(text) + len(pattern)) per alternative.
"""
from __future__ import annotations

MAX_LENGTH = 1024          # characters in one pattern
MAX_ALTERNATIVES = 512     # brace expansions of one pattern


class PatternError(ValueError):
    pass


def _expand(pattern: str) -> list[str]:
    alts = [""]
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "{":
            end = pattern.find("}", i)
            if end < 0:
                raise PatternError(f"unclosed '{{' at position {i}")
            inner = pattern[i + 1:end]
            if "{" in inner:
                raise PatternError(f"nested '{{' at position {i + 1 + inner.index('{')}")
            choices = inner.split(",")
            if len(alts) * len(choices) > MAX_ALTERNATIVES:
                raise PatternError(f"more than {MAX_ALTERNATIVES} alternatives once the braces are expanded")
            alts = [a + c for a in alts for c in choices]
            i = end + 1
        else:
            alts = [a + ch for a in alts]
            i += 1
    return alts


def _pieces_match(pieces: list[str], text: str) -> bool:
    if len(pieces) == 1:
        return text == pieces[0]
    head, *middle, tail = pieces
    if len(head) + len(tail) > len(text) or not text.startswith(head) or not text.endswith(tail):
        return False
    pos, stop = len(head), len(text) - len(tail)
    for piece in middle:
        found = text.find(piece, pos, stop)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


class Glob:
    def __init__(self, pattern: str):
        if len(pattern) > MAX_LENGTH:
            raise PatternError(f"pattern is {len(pattern)} characters long, at most {MAX_LENGTH} allowed")
        self.pattern = pattern
        self._alternatives = [a.split("*") for a in dict.fromkeys(_expand(pattern))]

    @property
    def literal(self) -> bool:
        return "*" not in self.pattern and "{" not in self.pattern

    def match(self, text: str) -> bool:
        return any(_pieces_match(p, text) for p in self._alternatives)

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"
