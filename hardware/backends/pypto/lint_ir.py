"""The seed 002 lint over PTO IR (``.pto``, MLIR's ``pto`` dialect as PTOAS defines it).

Seed 002's kernel is wrong already in the IR pypto hands to ptoas:

    %h_chunk_raw__tile = pto.alloc_tile addr = 0 valid_row = 16 valid_col = 256 ... pad=0
    pto.trowexpandmul ins(%gated__tile, %scale_col__tile) outs(%h_chunk_raw__tile)
    pto.set_validshape %h_chunk_raw__tile, 1, 256

The op's output tile has a dynamic valid shape, the op reads that valid shape, and the only
``set_validshape`` on the tile comes after the op. ptoas then declares the tile bare (no
constructor) and the op runs over uninitialized extents (hardware/backends/pypto/lint.py, the
C++ form of the same rule, ``pto-bare-tile-validshape``).

The rule: a tile defined by ``pto.alloc_tile`` / ``pto.declare_tile`` (or a ``pto.tassign``
rebinding of one) whose type has a dynamic valid shape, written (``outs``) by an op that reads
its destination's valid shape (``pto.trowexpand*``, ``pto.tcolexpand*`` and any ``--op``) while
no ``pto.set_validshape`` on it came before, is a finding when a ``pto.set_validshape`` on it
follows the op. Without any set_validshape ptoas constructs the tile with its alloc's valid_row /
valid_col, so that form is not flagged. Order is the text's order (ptoas emits C++ in it; a
set_validshape in a loop body after the op still leaves the first iteration unset).

The IR facts this relies on, with the source lines that define them (hw-native-sys/PTOAS
@a56b18c32af33ac92347611aedb5306d067832c0 unless said otherwise):
- ``%t = pto.alloc_tile (addr = %a)? (valid_row = %r)? (valid_col = %c)? attr-dict :
  !pto.tile_buf<...>``: include/PTO/IR/PTOOps.td:222-238. ``valid_row`` is present exactly when
  the type's v_row is ``?`` (valid_col likewise): lib/PTO/IR/PTO.cpp:1353-1384
  (AllocTileOp::verify). So a bug report's excerpt that elides the type (``...``) is dynamic
  iff it names both operands.
- ``%t = pto.declare_tile attr-dict -> type``: PTOOps.td:1786-1794. ``%r = pto.tassign %t, %addr :
  type -> type`` rebinds the same handle: PTOOps.td:1796-1812.
- ``!pto.tile_buf`` is spelled ``<loc=vec, dtype=f32, rows=16, cols=256, v_row=?, v_col=?, ...>``
  (fields in that order: lib/PTO/IR/PTOTypeDefs.cpp:265-286; a valid dim is ``?`` or -1 for
  dynamic, else an integer: 105-123) or ``<vec, 16x256xf32, valid=?x?, ...>`` (288-356; valid
  omitted means rows x cols: 309), chosen by the first token (499-524). A dynamic valid shape
  means both dims dynamic: include/PTO/IR/PTOTypeDefs.td:190-193 (hasDynamicValid).
- ``pto.set_validshape %t, %row, %col : type`` updates the valid shape in place, only on a
  locally bound tile with a dynamic valid shape: PTOOps.td:316-341, PTO.cpp:7164-7183.
- ``pto.trowexpandmul ins(%src0, %src1[, %tmp] : types) outs(%dst : type)``, dst the DPS init
  (the last operand, PTOOps.td:4698-4724): PTO.cpp:7464-7514 (parseTRowExpandBinaryLikeOp, shared
  by the trowexpand* ops); the ops: trowexpand* PTOOps.td:4635-4870, tcolexpand* 2781-3010.
- Each reads its destination's valid shape first (hw-native-sys/pto-isa @3186c381
  include/pto/npu/a2a3/TRowExpandMul.hpp:45-46, TRowExpandSub.hpp:59-60, TRowExpand.hpp:97-98,
  TColExpand.hpp:58-59, TColExpandBinOp.hpp:105-106).
- ptoas drops the constructor of a tile forced dynamic that has a set_validshape user, wherever
  that user is: lib/PTO/Transforms/PTOViewToMemref.cpp:1356-1378 (declare_tile ->
  force_dynamic_valid_shape), lib/PTO/Transforms/PTOToEmitC.cpp:9323-9343. Seed 002 (ptoas v0.36)
  shows the same for an op-output ``alloc_tile``.
- pypto writes the IR next to the C++, ``<build>/ptoas/<unit>.pto`` (hw-native-sys/pypto @e2d0f78a
  python/pypto/backend/pto_backend.py:1210-1215), and may end each op with ``loc(...)``
  (pto_backend.py:60-75); it emits every alloc_tile in the dynamic form
  (include/pypto/codegen/pto/pto_codegen.h:767-784), which is why a dynamic tile alone is not
  a finding.

Malformed input (unbalanced brackets, an alloc without a result or a tile_buf type, a tile_buf
type without its valid dims, a set_validshape or DPS op without its operands) raises
IRParseError naming the line and what is wrong.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Iterable, Optional

from accel_regress.backends.pypto.brackets import angle_end, split_top
from accel_regress.backends.pypto.finding import Finding

SUFFIXES = (".pto",)
READS_DST_VALID_SHAPE = re.compile(r"^pto\.t(?:row|col)expand\w*$")

# An op starts a line: optional results, then dialect.op (the generic form quotes it).
# (A dotted key of an attribute dict continued on its own line is followed by '=': not an op.)
_OP_START = re.compile(r"^[ \t]*(?:(%[\w$.\-#:]+(?:\s*,\s*%[\w$.\-#:]+)*)\s*=\s*)?(\"?)([A-Za-z_]\w*\.[\w.$]+)\2"
                       r"(?!\s*=)", re.M)
_GENERIC_NAME = re.compile(r'"[A-Za-z_]\w*\.[\w.$]+"')
_SSA = re.compile(r"%[\w$.\-]+")
_TYPE_ALIAS = re.compile(r"^[ \t]*!([\w.$\-]+)\s*=\s*(!pto\.tile_buf\s*<)", re.M)
_TILE_BUF = re.compile(r"!pto\.tile_buf\s*<")
_ALIAS_USE = re.compile(r"!([\w.$\-]+)")


class IRParseError(ValueError):
    """A .pto text that is not PTO IR the lint can read: says where and what."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


@dataclass
class IRFinding(Finding):
    def describe(self) -> str:
        later = (f"; its pto.set_validshape comes only at line {self.set_later_line}, after the op"
                 if self.set_later_line else "")
        return (f"{self.file}:{self.line}: {self.rule}: tile {self.tile} allocated at line "
                f"{self.declared_line} with a dynamic valid shape ({self.declaration}) is written by "
                f"{self.op}, which reads the destination's valid shape, before any pto.set_validshape"
                f"{later}; ptoas declares such a tile bare. Set the valid shape before the op, or give "
                f"the op a tile with a static valid shape.")


def strip_comments(text: str) -> str:
    """``//`` comments become spaces (offsets keep their line); string literals are kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif ch == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _blank_strings(code: str) -> str:
    """String literals as spaces of the same length: their brackets and colons are not syntax.
    A generic-form op name (``"pto.tmul"(...)``) stays."""
    def blank(m):
        if _GENERIC_NAME.fullmatch(m.group(0)) and code.startswith("(", m.end()):
            return m.group(0)
        return '"' + " " * (len(m.group(0)) - 2) + '"'
    return re.sub(r'"(?:[^"\\\n]|\\.)*"', blank, code)


def _check_balance(code: str, line_of) -> None:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[tuple[str, int]] = []
    for i, ch in enumerate(code):
        if ch in "([{":
            stack.append((ch, i))
        elif ch in pairs:
            if not stack:
                raise IRParseError(line_of(i), f"'{ch}' closes nothing")
            if stack[-1][0] != pairs[ch]:
                op, at = stack[-1]
                raise IRParseError(line_of(at), f"'{op}' is never closed ('{ch}' at line {line_of(i)} "
                                                f"closes an outer bracket first)")
            stack.pop()
    if stack:
        ch, i = stack[-1]
        raise IRParseError(line_of(i), f"'{ch}' is never closed")


def _group(stmt: str, keyword: str) -> Optional[str]:
    """The inside of ``keyword(...)`` in an op's custom form, or None."""
    m = re.search(r"\b" + keyword + r"\s*\(", stmt)
    if not m:
        return None
    depth = 0
    for i in range(m.end() - 1, len(stmt)):
        if stmt[i] == "(":
            depth += 1
        elif stmt[i] == ")":
            depth -= 1
            if depth == 0:
                return stmt[m.end():i]
    return None


def _operands(group: str) -> list[str]:
    """SSA operands of an ``ins(...)`` / ``outs(...)`` group: those before its top-level ':'."""
    head = split_top(group, ":")[0]
    return [m.group(0) for m in _SSA.finditer(head)]


def tile_buf_valid(body: str) -> tuple[str, str]:
    """(v_row, v_col) of a ``!pto.tile_buf<body>``, as written ('?' / '-1' / a number)."""
    fields = [f.strip() for f in split_top(body, ",")]
    if not fields or not fields[0]:
        raise ValueError("an empty !pto.tile_buf<>")
    if fields[0].startswith("loc"):                  # legacy: key=value, v_row / v_col required
        kv = dict(f.split("=", 1) for f in fields if "=" in f)
        kv = {k.strip(): v.strip() for k, v in kv.items()}
        if "v_row" not in kv or "v_col" not in kv:
            raise ValueError("!pto.tile_buf<loc=...> without v_row / v_col")
        return kv["v_row"], kv["v_col"]
    if len(fields) < 2:
        raise ValueError(f"!pto.tile_buf<{body}> has no RxCxTYPE shape")
    shape = re.fullmatch(r"(\d+)x(\d+)x\w+", fields[1].replace(" ", ""))
    if not shape:
        raise ValueError(f"!pto.tile_buf<{body}>: {fields[1]!r} is not RxCxTYPE")
    for f in fields[2:]:
        if f.startswith("valid") and "=" in f:
            dims = f.split("=", 1)[1].strip().split("x")
            if len(dims) != 2:
                raise ValueError(f"!pto.tile_buf valid={f.split('=', 1)[1].strip()} is not RxC")
            return dims[0].strip(), dims[1].strip()
    return shape.group(1), shape.group(2)            # valid omitted: rows x cols


def _is_dynamic(dim: str) -> bool:
    return dim in ("?", "-1")


@dataclass
class _Op:
    line: int
    results: list
    name: str
    generic: bool
    text: str            # from the op name to the next op


@dataclass
class _Tile:
    name: str
    line: int
    declaration: str
    dynamic: bool
    set_seen: bool = False


def _ops(code: str, line_of) -> list[_Op]:
    starts = list(_OP_START.finditer(code))
    ops = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(code)
        results = _SSA.findall(m.group(1) or "")
        ops.append(_Op(line_of(m.start(3)), results, m.group(3), bool(m.group(2)),
                       code[m.end():end]))
    return ops


def _result_type(op: _Op, aliases: dict[str, str]) -> Optional[str]:
    """The body of the first ``!pto.tile_buf<...>`` (or alias of one) in an alloc_tile /
    declare_tile: they take no tile operand, so it is the result type."""
    text = op.text
    m = _TILE_BUF.search(text)
    if m:
        end = angle_end(text, m.end() - 1)
        if end is None:
            raise IRParseError(op.line, f"{op.name}: !pto.tile_buf< is never closed")
        return text[m.end():end - 1]
    for a in _ALIAS_USE.finditer(text):
        if a.group(1) in aliases:
            return aliases[a.group(1)]
    return None


def _squash(s: str, limit: int = 240) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= limit else s[:limit - 3] + "..."


def lint_text(text: str, file: str = "<text>", extra_ops: Iterable[str] = ()) -> list[IRFinding]:
    extra = {o if o.startswith("pto.") else "pto." + o.lower() for o in extra_ops}
    code = _blank_strings(strip_comments(text))
    newlines = [i for i, c in enumerate(code) if c == "\n"]

    def line_of(pos: int) -> int:
        return bisect.bisect_right(newlines, pos - 1) + 1

    _check_balance(code, line_of)
    aliases = {}
    for m in _TYPE_ALIAS.finditer(code):
        end = angle_end(code, m.end() - 1)
        if end is None:
            raise IRParseError(line_of(m.start()), f"type alias !{m.group(1)}: !pto.tile_buf< is never closed")
        aliases[m.group(1)] = code[m.end():end - 1]

    ops = _ops(code, line_of)
    if not ops:
        # E.g. the pre-MLIR PTO-AS text (``func @f``, ``%x = alloc_tile : !pto.tile<8x8xf32>``).
        raise IRParseError(1, "no MLIR operation (dialect.op, e.g. func.func, pto.alloc_tile): "
                              "not PTO IR as PTOAS reads it")
    tiles: dict[str, _Tile] = {}
    pending: dict[str, list[IRFinding]] = {}
    findings: list[IRFinding] = []
    for op in ops:
        name = op.name
        if name == "func.func":                       # SSA names are per function
            tiles.clear()
            pending.clear()
            continue
        if name in ("pto.alloc_tile", "pto.declare_tile"):
            if len(op.results) != 1:
                raise IRParseError(op.line, f"{name} without its one result (%name = {name} ...)")
            head = op.text.split("\n", 1)[0]
            body = _result_type(op, aliases)
            if body is None:
                if "..." not in head:
                    raise IRParseError(op.line, f"{name} {op.results[0]} has no !pto.tile_buf result type")
                # A bug report's excerpt with the type elided: the operands say (PTO.cpp:1353-1384).
                dynamic = bool(re.search(r"\bvalid_row\b", head) and re.search(r"\bvalid_col\b", head))
                decl = _squash(f"{op.results[0]} = {name}{head}")
            else:
                try:
                    vr, vc = tile_buf_valid(body)
                except ValueError as exc:
                    raise IRParseError(op.line, f"{name} {op.results[0]}: {exc}") from None
                dynamic = _is_dynamic(vr) and _is_dynamic(vc)
                decl = f"v_row={vr}, v_col={vc}"
            tiles[op.results[0]] = _Tile(op.results[0], op.line, decl, dynamic)
            continue
        if name == "pto.tassign":
            src = _SSA.findall(op.text.split(":", 1)[0])
            if op.results and src and src[0] in tiles:
                tiles[op.results[0]] = tiles[src[0]]     # the same handle, rebound
            continue
        if name == "pto.set_validshape":
            args = _SSA.findall(split_top(op.text, ":")[0]) if not op.generic else _SSA.findall(op.text)
            if not args:
                raise IRParseError(op.line, "pto.set_validshape without its tile operand")
            t = tiles.get(args[0])
            if t is not None:
                for f in pending.pop(t.name, []):
                    f.set_later_line = op.line
                    findings.append(f)
                t.set_seen = True
            continue
        if not (READS_DST_VALID_SHAPE.match(name) or name in extra):
            continue
        if op.generic:
            # "pto.op"(%src..., %dst): the DPS init (dst) is the last operand (PTOOps.td:4707-4712).
            close = op.text.find(")")
            dsts = _SSA.findall(op.text[:close])[-1:] if op.text.lstrip().startswith("(") and close > 0 else []
            if not dsts:
                raise IRParseError(op.line, f"{name}: generic form without its operands")
        else:
            outs = _group(op.text, "outs")
            if outs is None:
                raise IRParseError(op.line, f"{name} without outs(...)")
            dsts = _operands(outs)
            if not dsts and "..." not in outs:
                raise IRParseError(op.line, f"{name}: outs(...) names no tile")
        for d in dsts:
            t = tiles.get(d)
            if t is None or not t.dynamic or t.set_seen:
                continue
            pending.setdefault(t.name, []).append(
                IRFinding(file, op.line, t.name, name, t.line, t.declaration))
    findings.sort(key=lambda f: f.line)
    return findings
