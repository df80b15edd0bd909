"""Text from a run, made inert where a person reads it: Markdown (summary.md, pr-comment.md) and
CSV (the matrices).

Everything in a results file can be chosen by whoever wrote the run (a test id, a message, a
host name, a device label): on a pull request a message holding ``<img src=https://...>``, an
``@team`` mention or a line ``# SHIP`` must show as that text, not act. ``md_text`` backslash-escapes
the ASCII punctuation CommonMark and GitHub give a meaning to (a backslash may escape any ASCII
punctuation, so raw HTML, links, images, emphasis, headings, math and table pipes all become
literal), puts each run of line breaks on one line (no new block can start), and breaks ``@name``
with a word joiner (GitHub finds mentions in the rendered text, after the escapes are undone).
``md_code`` is an inline code span whose fence is longer than any backtick run inside.

On a terminal, text from a run must not drive the terminal: an escape sequence in a stored message
could colour, erase, retitle, or (OSC 8) hide a hyperlink behind innocent text. ``term_text``
shows every C0 / C1 control character and DEL as its Python escape (``\x1b``), and the
bidirectional overrides (Trojan Source, CVE-2021-42574) as ``\u202e``; the text stays readable.

A CSV cell that begins with ``= + - @``, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (CSV injection): ``csv_cell`` prefixes it with a single quote, as
OWASP's "CSV Injection" page says to (ASVS 1.2.10 adds a NUL), and the csv module quotes what
needs quoting.
"""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:&$])")
_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c]+")
WORD_JOINER = "\u2060"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\0")


_TERM_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def term_text(value, keep_newlines: bool = False) -> str:
    """``value`` as inert terminal text; ``keep_newlines``: line breaks stay (a block of lines)."""
    text = str(value if value is not None else "")

    def one(m):
        ch = m.group()
        return ch if keep_newlines and ch == "\n" else ascii(ch)[1:-1]
    return _TERM_UNSAFE.sub(one, text)


def md_text(value) -> str:
    """``value`` as literal inline Markdown text (also inside a table cell)."""
    text = _BREAKS.sub(" ", str(value if value is not None else ""))
    return _MD_SPECIAL.sub(r"\\\1", text).replace("@", "@" + WORD_JOINER)


def md_code(value, table: bool = False) -> str:
    """``value`` as an inline code span; ``table``: it sits in a table cell, where GFM splits at
    every ``|`` not escaped, even inside code."""
    text = _BREAKS.sub(" ", str(value if value is not None else ""))
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or not text.strip():
        text = f" {text} "
    if table:
        text = text.replace("|", "\\|")
    return f"{fence}{text}{fence}"


def csv_cell(value) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text
