"""Delta reduction of a failing program (``accel-regress upstream``): the smallest program that
still gives the same wrong value, so the bug report shows only what the bug needs.

Works on the programs the suite generates (toolchains/iree/program.py: one op per line in each
``linalg.generic`` body, ``ins(%a, %b : T1, T2)``, one ``affine_map`` per operand) and tries, until
nothing more goes:
  - drop an op of a generic's body by forwarding one of its own operands of the result's type in
    its place (``%y = arith.select %in, %p, %pad : f32`` -> uses of ``%y`` read ``%p``): kept only
    when the oracle still sees the wrong value;
  - drop what then is dead: body ops whose result nothing reads (pure arith / math / linalg.index);
  - drop inputs the body no longer reads: the ``ins`` operand, its type, its indexing map, its block
    argument, and the function argument (with the bundle's input) when nothing else reads it.
Forwarding an operand adds no arithmetic, so the value the reduced program must give at the wrong
element is the one it computes from the same inputs through the ops it keeps. Every candidate is
parsed by MLIR (IREE's bindings) before the oracle runs it; one that does not parse is dropped.
The case's shape is reduced before (the family's ``shrink``: one element where it knows how).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

_DEF = re.compile(r"^(\s*)(%[\w.$-]+) = ([\w.]+)\s*(.*)$")
_VALUE = re.compile(r"%[\w.$-]+")
_BB = re.compile(r"^(\s*)\^bb0\((.*)\):\s*$")
_INS = re.compile(r"ins\(([^:]*?)\s*:\s*([^)]*)\)")
_MAPS = re.compile(r"indexing_maps = \[(.*?)\], iterator_types")
_MAP = re.compile(r"affine_map<\([^)]*\)\s*->\s*\([^)]*\)>")
_FUNC = re.compile(r"^(\s*func\.func @[\w.$-]+)\((.*)\)(\s*->.*)$")
_PURE = ("arith.", "math.", "linalg.index")


@dataclass
class Reduced:
    mlir: str
    inputs: list[str]                   # the function's arguments left, in order
    steps: list[str] = field(default_factory=list)


def _uses(name: str, text: str) -> bool:
    return re.search(re.escape(name) + r"(?![\w.$-])", text) is not None


def _sub(text: str, old: str, new: str) -> str:
    return re.sub(re.escape(old) + r"(?![\w.$-])", new, text)


def _result_type(op: str, rest: str) -> Optional[str]:
    if op in ("arith.cmpf", "arith.cmpi"):
        return "i1"
    if op == "linalg.index":
        return "index"
    if ":" not in rest:
        return None
    tail = rest.rsplit(":", 1)[1].strip()
    return tail.rsplit(" to ", 1)[1].strip() if " to " in tail else tail


def _operands(rest: str) -> list[str]:
    return _VALUE.findall(rest.rsplit(":", 1)[0])


def _bodies(lines: list[str]) -> list[tuple[int, int]]:
    """(index of the ^bb0 line, index of the linalg.yield line) of each generic body."""
    out, start = [], None
    for i, line in enumerate(lines):
        if _BB.match(line):
            start = i
        elif start is not None and "linalg.yield" in line:
            out.append((start, i))
            start = None
    return out


def _block_args(line: str) -> list[tuple[str, str]]:
    m = _BB.match(line)
    return [(a.split(":")[0].strip(), a.split(":", 1)[1].strip()) for a in m.group(2).split(",")] if m else []


def _generic_line(lines: list[str], bb: int) -> int:
    return max(i for i in range(bb) if "linalg.generic" in lines[i])


def forwardings(text: str) -> list[tuple[str, str]]:
    """(description, candidate text) of every single-op drop by forwarding one of its operands."""
    lines = text.splitlines()
    out = []
    for bb, yld in _bodies(lines):
        types = dict(_block_args(lines[bb]))
        for k in range(bb + 1, yld):
            m = _DEF.match(lines[k])
            if not m:
                continue
            name, op, rest = m.group(2), m.group(3), m.group(4)
            rtype = _result_type(op, rest)
            if rtype is None:
                continue
            for operand in dict.fromkeys(_operands(rest)):
                if types.get(operand) == rtype:
                    new = lines[:k] + [_sub(x, name, operand) for x in lines[k + 1:]]
                    out.append((f"drop {op} ({name}): its uses read {operand}", "\n".join(new) + "\n"))
            types[name] = rtype
    return out


def drop_dead(text: str) -> tuple[str, list[str]]:
    """Remove body ops whose result nothing reads (pure ops only), until none is left."""
    lines, dropped = text.splitlines(), []
    changed = True
    while changed:
        changed = False
        for bb, yld in _bodies(lines):
            for k in range(yld - 1, bb, -1):
                m = _DEF.match(lines[k])
                if m and m.group(3).startswith(_PURE) and not _uses(m.group(2), "\n".join(lines[k + 1:yld + 1])):
                    dropped.append(f"drop dead {m.group(3)} ({m.group(2)})")
                    del lines[k]
                    changed = True
                    break
            if changed:
                break
    return "\n".join(lines) + "\n", dropped


def drop_unused_inputs(text: str) -> tuple[str, list[str]]:
    """Remove the generic inputs whose block argument the body does not read, and the function
    arguments nothing reads any more."""
    lines, dropped = text.splitlines(), []
    for bb, yld in reversed(_bodies(lines)):
        g = _generic_line(lines, bb)
        ins, maps = _INS.search(lines[g]), _MAPS.search(lines[g])
        if not ins or not maps:
            continue
        operands = [v.strip() for v in ins.group(1).split(",")]
        types = [t.strip() for t in ins.group(2).split(",")]
        amaps = _MAP.findall(maps.group(1))
        args = _block_args(lines[bb])
        body = "\n".join(lines[bb + 1:yld + 1])
        if len(operands) != len(types) or len(amaps) < len(operands) or len(args) < len(operands):
            continue
        keep = [i for i in range(len(operands)) if _uses(args[i][0], body)]
        if len(keep) == len(operands) or not keep:
            continue
        dropped += [f"drop unused input {operands[i]}" for i in range(len(operands)) if i not in keep]
        new_ins = f"ins({', '.join(operands[i] for i in keep)} : {', '.join(types[i] for i in keep)})"
        new_maps = [amaps[i] for i in keep] + amaps[len(operands):]
        line = lines[g][:ins.start()] + new_ins + lines[g][ins.end():]
        m2 = _MAPS.search(line)
        lines[g] = line[:m2.start(1)] + ", ".join(new_maps) + line[m2.end(1):]
        kept_args = [args[i] for i in keep] + args[len(operands):]
        indent = _BB.match(lines[bb]).group(1)
        lines[bb] = f"{indent}^bb0({', '.join(f'{n}: {t}' for n, t in kept_args)}):"
    for i, line in enumerate(lines):
        f = _FUNC.match(line)
        if not f:
            continue
        rest = "\n".join(lines[i + 1:])
        params = [p.strip() for p in f.group(2).split(",") if p.strip()]
        kept = [p for p in params if _uses(p.split(":")[0].strip(), rest)]
        if len(kept) != len(params):
            dropped += [f"drop unused argument {p.split(':')[0].strip()}" for p in params if p not in kept]
            lines[i] = f"{f.group(1)}({', '.join(kept)}){f.group(3)}"
    return "\n".join(lines) + "\n", dropped


def arguments(text: str) -> list[str]:
    """The names (without %) of the first function's arguments, in order."""
    for line in text.splitlines():
        f = _FUNC.match(line)
        if f:
            return [p.split(":")[0].strip().lstrip("%") for p in f.group(2).split(",") if p.strip()]
    return []


def parses(text: str) -> bool:
    from iree.compiler import ir
    try:
        with ir.Context():
            ir.Module.parse(text)
        return True
    except Exception:           # MLIRError and the bindings' others: not a program, not a candidate
        return False


def cleanup(text: str) -> tuple[str, list[str]]:
    text, a = drop_dead(text)
    text, b = drop_unused_inputs(text)
    return text, a + b


def reduce_program(text: str, still_wrong: Callable[[str, list[str]], bool],
                   check_parse: Callable[[str], bool] = parses) -> Reduced:
    """Greedy delta reduction: apply any single drop the oracle accepts, clean up, repeat.
    ``still_wrong(mlir, argument_names)`` compiles and runs a candidate on the named inputs."""
    current, steps = text, []
    cleaned, notes = cleanup(current)
    if cleaned != current and check_parse(cleaned) and still_wrong(cleaned, arguments(cleaned)):
        current, steps = cleaned, notes
    progress = True
    while progress:
        progress = False
        for what, candidate in forwardings(current):
            candidate, notes = cleanup(candidate)
            if check_parse(candidate) and still_wrong(candidate, arguments(candidate)):
                current, steps = candidate, steps + [what, *notes]
                progress = True
                break
    return Reduced(current, arguments(current), steps)
