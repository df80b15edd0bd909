"""A codegen lint over ptoas-emitted C++: op-output tiles used before they have a valid shape.

Seed 002: ptoas emitted the trowexpandmul output tile as a bare default-constructed
``Tile<...> v21;``. pto::Tile's default constructor leaves the valid-row/valid-col masks
uninitialized, and TROWEXPANDMUL_IMPL reads ``dst.GetValidRow()/GetValidCol()`` up front, so the
op ran over garbage extents (wrong data on the board, SIGSEGV in a2a3sim); the
``v21.SetValidShape(...)`` that followed fixed only the metadata.

The rule: a tile variable declared bare (``Tile<...> vN;`` or ``Alias vN;`` for a ``using Alias =
Tile<...>``), whose valid shape is not static in its type, must not be the destination (first
argument) of an op that reads the destination's valid shape (TROWEXPAND*, TCOLEXPAND* and any
``--op`` added) before a constructor (``vN = Tile<...>(r, c)``) or ``vN.SetValidShape(...)``
gave it one. A tile type whose 6th and 7th template arguments (valid row, valid col) are both
integer literals other than -1 has a static valid shape and is never flagged; elided (``...``)
arguments count as dynamic.

``python -m hardware lint-pto DIR|FILE ...``: exit 0 clean, 1 findings, 2 bad input.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Optional

RULE = "pto-bare-tile-validshape"
READS_DST_VALID_SHAPE = re.compile(r"^T(?:ROW|COL)EXPAND\w*$")
SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp")

_IDENT = re.compile(r"[A-Za-z_]\w*")
_CALL = re.compile(r"\b([A-Z][A-Z0-9_]*)\s*\(\s*([A-Za-z_]\w*)")
_SETVALID = re.compile(r"\b([A-Za-z_]\w*)\s*(?:\.|->)\s*SetValidShape\s*\(")
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*([A-Za-z_][\w:]*)\s*(<|\()")


@dataclass
class Finding:
    file: str
    line: int
    tile: str
    op: str
    declared_line: int
    declaration: str
    set_later_line: Optional[int] = None
    rule: str = RULE

    def describe(self) -> str:
        later = (f"; its SetValidShape comes only at line {self.set_later_line}, after the op"
                 if self.set_later_line else "")
        return (f"{self.file}:{self.line}: {self.rule}: tile {self.tile} declared bare at line "
                f"{self.declared_line} ({self.declaration.strip()}) is written by {self.op}, which reads "
                f"the destination's valid shape, before any constructor or SetValidShape gave it one"
                f"{later}. Construct it with its shape (Tile<...>(rows, cols)) or set the valid shape "
                f"before the op.")


@dataclass
class _Tile:
    declared_line: int
    declaration: str
    static_valid: bool
    valid: bool = False
    pending: list = field(default_factory=list)    # findings waiting for a later SetValidShape


def _template_span(text: str, start: int) -> Optional[int]:
    """Index just past the '>' that closes the '<' at ``start`` (balanced), or None."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch in ";{}":
            return None
        i += 1
    return None


def _top_level_args(inner: str) -> list[str]:
    args, depth, cur = [], 0, []
    for ch in inner:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    args.append("".join(cur).strip())
    return args


def _static_valid(template: str) -> bool:
    """Tile<Type, DType, Rows, Cols, BLayout, ValidRow, ValidCol, ...>: both valid dims literal."""
    args = _top_level_args(template[template.index("<") + 1:-1])
    if any("..." in a for a in args[:7]) or len(args) < 7:
        return False
    try:
        return all(int(a) != -1 for a in args[5:7])
    except ValueError:
        return False


def _declaration(line: str, aliases: dict[str, str]) -> Optional[tuple[str, str, bool]]:
    """(name, type text, bare) for a tile variable declaration on this line, else None."""
    s = line.strip()
    if s.startswith("using "):
        return None
    m = re.match(r"(?:(?:const|static|constexpr)\s+)*(?:pto::)?Tile\s*<", s)
    if m:
        end = _template_span(s, m.end() - 1)
        if end is None:
            return None
        ttext, rest = s[:end], s[end:]
    else:
        m = _IDENT.match(s)
        if not m or m.group(0) not in aliases:
            return None
        ttext, rest = aliases[m.group(0)], s[m.end():]
    m = re.match(r"\s*&?\s*([A-Za-z_]\w*)\s*(;|=|\(|\{)", rest)
    if not m:
        return None
    return m.group(1), ttext, m.group(2) == ";"


def lint_text(text: str, file: str = "<text>", extra_ops: Iterable[str] = ()) -> list[Finding]:
    extra = set(extra_ops)
    aliases: dict[str, str] = {}
    tiles: dict[str, _Tile] = {}
    findings: list[Finding] = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        um = re.match(r"\s*using\s+([A-Za-z_]\w*)\s*=\s*((?:pto::)?Tile\s*<)", code)
        if um:
            end = _template_span(code, um.end(2) - 1)
            if end is not None:
                aliases[um.group(1)] = code[um.start(2):end]
            continue
        decl = _declaration(code, aliases)
        if decl:
            name, ttext, bare = decl
            tiles[name] = _Tile(n, line, _static_valid(ttext), valid=not bare)
            continue
        am = _ASSIGN.match(code)
        if am and am.group(1) in tiles and ("Tile" in am.group(2) or am.group(2) in aliases):
            tiles[am.group(1)].valid = True
        for sm in _SETVALID.finditer(code):
            t = tiles.get(sm.group(1))
            if t is not None:
                for f in t.pending:
                    f.set_later_line = n
                t.pending.clear()
                t.valid = True
        for cm in _CALL.finditer(code):
            op, dst = cm.group(1), cm.group(2)
            if not (READS_DST_VALID_SHAPE.match(op) or op in extra):
                continue
            t = tiles.get(dst)
            if t is None or t.valid or t.static_valid:
                continue
            f = Finding(file, n, dst, op, t.declared_line, t.declaration)
            t.pending.append(f)
            findings.append(f)
    return findings


class LintInputError(Exception):
    """A path that is missing, unreadable or holds no C++."""


def _files(paths: Iterable) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*") if q.is_file() and q.suffix in SUFFIXES))
        elif p.is_file():
            out.append(p)
        else:
            raise LintInputError(f"{p}: no such file or directory")
    return out


def lint_paths(paths: Iterable, extra_ops: Iterable[str] = ()) -> tuple[list[Finding], list[Path]]:
    files = _files(paths)
    findings: list[Finding] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise LintInputError(f"{f}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except OSError as exc:
            raise LintInputError(f"{f}: cannot read: {exc.strerror}") from None
        findings.extend(lint_text(text, str(f), extra_ops))
    return findings, files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hardware lint-pto",
                                 description="Flag op-output tiles declared bare and then written by an op "
                                             "that reads the destination's valid shape (seed 002).")
    ap.add_argument("paths", nargs="+", metavar="DIR|FILE", help="ptoas-emitted C++ (a build folder or files)")
    ap.add_argument("--op", action="append", default=[], metavar="NAME",
                    help="another op that reads its destination's valid shape (repeatable)")
    ap.add_argument("--json", action="store_true", help="print findings as JSON")
    args = ap.parse_args(argv)
    try:
        findings, files = lint_paths(args.paths, args.op)
    except LintInputError as exc:
        print(f"lint-pto: {exc}", file=sys.stderr)
        return 2
    if not files:
        print(f"lint-pto: no C++ files ({', '.join(SUFFIXES)}) under {', '.join(args.paths)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"files": [str(f) for f in files], "findings": [asdict(f) for f in findings]}, indent=2))
    else:
        for f in findings:
            print(f.describe())
        print(f"lint-pto: {len(files)} file(s), {len(findings)} finding(s)")
    return 1 if findings else 0
