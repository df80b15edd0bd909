"""A codegen lint over ptoas-emitted C++: op-output tiles used before they have a valid shape.

Seed 002: ptoas emitted the trowexpandmul output tile as a bare default-constructed
``Tile<...> v21;``. pto::Tile's default constructor leaves the valid-row/valid-col masks
uninitialized, and TROWEXPANDMUL_IMPL reads ``dst.GetValidRow()/GetValidCol()`` up front, so the
op ran over garbage extents (wrong data on the board, SIGSEGV in a2a3sim); the
``v21.SetValidShape(...)`` that followed fixed only the metadata. (PTOAS drops the constructor
when a tile is forced dynamic and a set_validshape follows: lib/PTO/Transforms/PTOToEmitC.cpp
9324-9343 @a56b18c.)

The rule: a tile variable declared bare (``Tile<...> vN;`` or ``Alias vN;`` for a ``using Alias =
Tile<...>``) whose valid shape is set at run time must not be the destination (first argument) of
an op that reads the destination's valid shape (TROWEXPAND*, TCOLEXPAND* and any ``--op`` added)
before a constructor (``vN = Tile<...>(r, c)``), an assignment or ``vN.SetValidShape(...)`` gave
it one.

Which valid shapes are set at run time follows pto-isa's Tile (include/pto/common/pto_tile.hpp
@3186c38): the 6th and 7th template arguments default to Rows and Cols (line 1392), any value
but ``DYNAMIC`` (-1, line 28) is a compile-time constant that GetValidRow/GetValidCol return
themselves (lines 1592-1609), so only ``-1`` / ``DYNAMIC`` (or a constant the file defines as
-1) leaves a mask to the constructor. SetValidShape/SetValidRow/SetValidCol static_assert a
DYNAMIC dimension (lines 1618, 1626, 1634), so a tile that gets one is dynamic whatever its
type says; the elided arguments of a bug report's excerpt (``Tile<..., 512, ...>``) count as
dynamic. The text is read as C++ statements, not lines: clang-format splits ptoas's long
declarations over several lines.

``python -m accel_regress lint-pto DIR|FILE ...``: exit 0 clean, 1 findings, 2 bad input. A
``.pto`` file (PTO IR, the input ptoas compiles) goes to lint_ir.py, the same rule one step
earlier; the rest is read as C++.
"""
from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from accel_regress.backends.pypto import lint_ir
from accel_regress.backends.pypto.brackets import angle_end, split_top
from accel_regress.backends.pypto.finding import Finding

READS_DST_VALID_SHAPE = re.compile(r"^T(?:ROW|COL)EXPAND\w*$")
SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp")

_TILE = re.compile(r"(?<![\w.])(?:pto::)?Tile\s*<")
_ALIAS = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*(?:typename\s+)?")
_AFTER_TYPE = re.compile(r"\s*&?\s*([A-Za-z_]\w*)\s*(;|=|\(|\{|,|\))")
_CONST = re.compile(r"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:int|int32_t|int64_t|auto)\s+"
                    r"([A-Za-z_]\w*)\s*=\s*([^;]+);")
_CALL = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*(?:<[^;(){}]*>)?\s*\(\s*([A-Za-z_]\w*)")
_SETVALID = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\.|->)\s*SetValid(?:Shape|Row|Col)\s*\(")
_ASSIGN = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*=(?!=)")
_DYNAMIC_WORDS = {"-1", "DYNAMIC", "pto::DYNAMIC"}


@dataclass
class _Tile:
    declared_line: int
    declaration: str
    dynamic: bool
    valid: bool
    pending: list = field(default_factory=list)    # findings waiting for a later SetValidShape


def strip_comments(text: str) -> str:
    """Comments become spaces (newlines kept, so offsets keep their line); literals are kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif ch == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:j]))
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _dim_is_dynamic(arg: str, constants: dict[str, str]) -> bool:
    a = re.sub(r"\s+", "", arg)
    while a.startswith("(") and a.endswith(")"):
        a = a[1:-1]
    a = re.sub(r"^static_cast<\w+>\((.*)\)$", r"\1", a)
    if a in _DYNAMIC_WORDS:
        return True
    seen = set()
    while a in constants and a not in seen:      # a named constant: dynamic only if it is -1
        seen.add(a)
        a = re.sub(r"\s+", "", constants[a])
        if a in _DYNAMIC_WORDS:
            return True
    return False


def dynamic_valid_shape(template: str, constants: Optional[dict[str, str]] = None) -> bool:
    """Tile<Loc, DType, Rows, Cols, BLayout, ValidRow = Rows, ValidCol = Cols, ...>: is a valid
    dimension set at run time? Omitted ones default to the (static) tile size."""
    args = [a.strip() for a in split_top(template[template.index("<") + 1:-1], ",")]
    if any("..." in a for a in args[:7]):
        return True
    return any(_dim_is_dynamic(a, constants or {}) for a in args[5:7])


def _squash(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def lint_text(text: str, file: str = "<text>", extra_ops: Iterable[str] = ()) -> list[Finding]:
    extra = set(extra_ops)
    code = strip_comments(text)
    newlines = [i for i, c in enumerate(code) if c == "\n"]

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos - 1) + 1

    constants = {m.group(1): m.group(2) for m in _CONST.finditer(code)}
    alias_defs: list[tuple[int, str, str]] = []     # (position, name, Tile<...> text)
    alias_spans = []
    for m in _ALIAS.finditer(code):
        t = _TILE.match(code, m.end())
        if t:
            end = angle_end(code, t.end() - 1, stop=";{}")
            if end is not None:
                alias_defs.append((m.start(), m.group(1), code[t.start():end]))
                alias_spans.append((t.start(), end))
        else:                                      # using B = A; for an alias A of a Tile
            name = re.match(r"([A-Za-z_]\w*)\s*;", code[m.end():])
            if name:
                prior = [d for d in alias_defs if d[1] == name.group(1)]
                if prior:
                    alias_defs.append((m.start(), m.group(1), prior[-1][2]))
    alias_starts = {s for s, _ in alias_spans}

    def alias_text(name: str, pos: int) -> Optional[str]:
        found = None
        for p, n, t in alias_defs:
            if p < pos and n == name:
                found = t
        return found

    # Events in text order: ("decl", pos, name, type text, bare, statement) / ("set", ...) / ...
    events = []
    for m in _TILE.finditer(code):
        if m.start() in alias_starts:
            continue
        end = angle_end(code, m.end() - 1, stop=";{}")
        if end is None:
            continue
        d = _AFTER_TYPE.match(code, end)
        if d:
            stmt_end = code.find(";", end)
            events.append(("decl", m.start(), d.group(1), code[m.start():end], d.group(2),
                           code[m.start():stmt_end + 1 if stmt_end >= 0 else d.end()]))
    names = sorted({n for _, n, _ in alias_defs}, key=len, reverse=True)
    if names:
        alias_use = re.compile(r"(?<![\w.:])(" + "|".join(map(re.escape, names)) + r")\s*&?\s*([A-Za-z_]\w*)\s*(;|=|\(|\{|,|\))")
        for m in alias_use.finditer(code):
            ttext = alias_text(m.group(1), m.start())
            if ttext is not None and m.group(2) not in ("operator",):
                stmt_end = code.find(";", m.start())
                events.append(("decl", m.start(), m.group(2), ttext, m.group(3),
                               code[m.start():stmt_end + 1 if stmt_end >= 0 else m.end()]))
    for m in _SETVALID.finditer(code):
        events.append(("set", m.start(), m.group(1)))
    for m in _ASSIGN.finditer(code):
        events.append(("assign", m.start(), m.group(1)))
    for m in _CALL.finditer(code):
        events.append(("call", m.start(1), m.group(2), m.group(1)))
    events.sort(key=lambda e: (e[1], e[0] != "decl"))

    # A tile that gets SetValidShape before it is declared again is dynamic (the static_assert).
    set_after: dict[int, bool] = {}
    last_decl: dict[str, int] = {}
    for i, e in enumerate(events):
        if e[0] == "decl":
            last_decl[e[2]] = i
        elif e[0] == "set" and e[2] in last_decl:
            set_after[last_decl[e[2]]] = True

    tiles: dict[str, _Tile] = {}
    findings: list[Finding] = []
    for i, e in enumerate(events):
        kind, pos, name = e[0], e[1], e[2]
        if kind == "decl":
            ttext, term, stmt = e[3], e[4], e[5]
            dynamic = dynamic_valid_shape(ttext, constants) or set_after.get(i, False)
            # ';' bare; '(' '{' '=' constructed or copied; ',' ')' a parameter: it arrives constructed.
            tiles[name] = _Tile(line_of(pos), _squash(stmt), dynamic, valid=term != ";")
            continue
        t = tiles.get(name)
        if t is None:
            continue
        if kind == "set":
            for f in t.pending:
                f.set_later_line = line_of(pos)
            t.pending.clear()
            t.valid = True
        elif kind == "assign":
            t.valid = True
        elif kind == "call":
            op = e[3]
            if not (READS_DST_VALID_SHAPE.match(op) or op in extra) or t.valid or not t.dynamic:
                continue
            f = Finding(file, line_of(pos), name, op, t.declared_line, t.declaration)
            t.pending.append(f)
            findings.append(f)
    return findings


class LintInputError(Exception):
    """A path that is missing, unreadable or holds no C++."""


def _files(paths: Iterable) -> list[Path]:
    wanted = SUFFIXES + lint_ir.SUFFIXES
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.is_file() and q.suffix in wanted))
        elif p.is_file():
            out.append(p)
        else:
            raise LintInputError(f"{p}: no such file or directory")
    return out


def lint_paths(paths: Iterable, extra_ops: Iterable[str] = ()) -> tuple[list[Finding], list[Path]]:
    """C++ and PTO IR (``.pto``, by suffix) under ``paths``; bad input raises LintInputError."""
    files = _files(paths)
    findings: list[Finding] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise LintInputError(f"{f}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise LintInputError(f"{f}: cannot read: {exc.strerror}") from None
        if f.suffix in lint_ir.SUFFIXES:
            try:
                findings.extend(lint_ir.lint_text(text, str(f), extra_ops))
            except lint_ir.IRParseError as exc:
                raise LintInputError(f"{f}:{exc.line}: malformed PTO IR: {exc.message}") from None
        else:
            findings.extend(lint_text(text, str(f), extra_ops))
    return findings, files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accel_regress lint-pto",
                                 description="Flag op-output tiles declared bare (C++) or given their dynamic "
                                             "valid shape only after the op (PTO IR) and written by an op "
                                             "that reads the destination's valid shape (seed 002).")
    ap.add_argument("paths", nargs="+", metavar="DIR|FILE",
                    help="ptoas-emitted C++ and/or the .pto IR it was compiled from (a build folder or files)")
    ap.add_argument("--op", action="append", default=[], metavar="NAME",
                    help="another op that reads its destination's valid shape (repeatable; TMUL in C++ is "
                         "pto.tmul in the IR)")
    ap.add_argument("--json", action="store_true", help="print findings as JSON")
    args = ap.parse_args(argv)
    try:
        findings, files = lint_paths(args.paths, args.op)
    except LintInputError as exc:
        print(f"lint-pto: {exc}", file=sys.stderr)
        return 2
    if not files:
        print(f"lint-pto: no C++ files ({', '.join(SUFFIXES)}) or PTO IR files (.pto) under "
              f"{', '.join(args.paths)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"files": [str(f) for f in files], "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f.describe())
        print(f"lint-pto: {len(files)} file(s), {len(findings)} finding(s)")
    return 1 if findings else 0
