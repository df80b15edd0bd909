"""RVV codegen scan of the assembly IREE dumps per dispatch (``--iree-hal-dump-executable-files-to``).

For every dispatch function of every ``*.s`` file: how many ``vfredusum`` (unordered) and
``vfredosum`` (ordered) reductions it has, and whether seed 004's hang signature appears:
``vfmacc.vf`` and ``vslidedown.vi`` in the same loop with one of them executing under
``vsetivli zero, 1, e32, mf2`` (single-lane FMA at fractional LMUL interleaved with slides,
the pattern Saturn did not retire).

A loop is a backward branch: the blocks from its target label to the branch. The vector
configuration an instruction runs under is the last ``vsetvli`` / ``vsetivli`` before it in the
block order of the loop (the first instructions of a loop may inherit the configuration of the
loop's preheader, which is what the linear order gives them too, since the preheader precedes
the loop body in the file).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

_FUNC = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_LABEL = re.compile(r"^(\.L[\w.$]+):")
_BRANCH = re.compile(r"^\s*(?:b[a-z]*|j)\s+(?:[^,]+,\s*)*(\.L[\w.$]+)\s*$")
_VSET = re.compile(r"^\s*vseti?vli\s+(\w+),\s*([\w]+),\s*(e\d+),\s*(m\w+)")
SIGNATURE_VTYPE = ("1", "e32", "mf2")


@dataclass
class DispatchScan:
    function: str
    file: str
    vfredusum: int = 0
    vfredosum: int = 0
    vfmacc_vf: int = 0
    vslidedown_vi: int = 0
    vl1_mf2: int = 0                 # vsetivli zero, 1, e32, mf2 count
    loops: int = 0
    signature: bool = False
    signature_loops: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def _functions(text: str) -> list[tuple[str, list[str]]]:
    out, name, body = [], None, []
    for line in text.splitlines():
        stripped = line.split("#")[0].rstrip()
        m = _FUNC.match(stripped)
        if m and not stripped.startswith(".L") and not stripped.startswith("."):
            if name is not None:
                out.append((name, body))
            name, body = m.group(1), []
            continue
        if name is not None:
            if stripped.strip().startswith(".Lfunc_end"):
                out.append((name, body))
                name, body = None, []
                continue
            body.append(stripped)
    if name is not None:
        out.append((name, body))
    return out


def _op(line: str) -> str:
    parts = line.split()
    return parts[0] if parts and not parts[0].endswith(":") and not parts[0].startswith(".") else ""


def scan_function(name: str, file: str, lines: list[str]) -> DispatchScan:
    s = DispatchScan(name, file)
    labels = {}
    for i, line in enumerate(lines):
        m = _LABEL.match(line.strip())
        if m:
            labels[m.group(1)] = i
    vtype_at = []            # the configuration each line runs under (linear order)
    current = None
    for line in lines:
        m = _VSET.match(line)
        if m:
            current = (m.group(2), m.group(3), m.group(4)) if m.group(1) == "zero" else (m.group(2), m.group(3), m.group(4))
            if line.split()[0] == "vsetivli" and (m.group(2), m.group(3), m.group(4)) == SIGNATURE_VTYPE:
                s.vl1_mf2 += 1
        vtype_at.append(current)
        op = _op(line)
        if op.startswith("vfredusum"):
            s.vfredusum += 1
        elif op.startswith("vfredosum"):
            s.vfredosum += 1
        elif op == "vfmacc.vf":
            s.vfmacc_vf += 1
        elif op == "vslidedown.vi":
            s.vslidedown_vi += 1
    for i, line in enumerate(lines):
        m = _BRANCH.match(line)
        if not m or m.group(1) not in labels or labels[m.group(1)] > i:
            continue
        s.loops += 1
        start = labels[m.group(1)]
        body = range(start, i + 1)
        ops = [(_op(lines[k]), vtype_at[k]) for k in body]
        has_fma = any(op == "vfmacc.vf" for op, _ in ops)
        has_slide = any(op == "vslidedown.vi" for op, _ in ops)
        under = any(op in ("vfmacc.vf", "vslidedown.vi") and vt == SIGNATURE_VTYPE for op, vt in ops)
        if has_fma and has_slide and under:
            s.signature = True
            s.signature_loops.append(m.group(1))
    return s


_TYPE_FUNC = re.compile(r"^\s*\.type\s+([\w.$]+),\s*@function")


def scan_text(text: str, file: str = "") -> list[DispatchScan]:
    """Scans of the dispatch functions (``.type NAME,@function`` with ``_dispatch_`` in NAME)."""
    funcs = set(_TYPE_FUNC.findall(text, re.M) if False else
                (m.group(1) for m in (_TYPE_FUNC.match(ln) for ln in text.splitlines()) if m))
    return [scan_function(name, file, body) for name, body in _functions(text)
            if name in funcs and "_dispatch_" in name and "library_query" not in name]


def scan_files(files: Iterable[Path]) -> list[DispatchScan]:
    out = []
    for f in sorted(files):
        out.extend(scan_text(Path(f).read_text(errors="replace"), Path(f).name))
    return out


def scan_dir(dump_dir: Path) -> list[dict]:
    """JSON-ready scan of every ``*.s`` in an IREE executable dump folder ([] when there is none)."""
    dump_dir = Path(dump_dir)
    if not dump_dir.is_dir():
        return []
    return [d.to_json() for d in scan_files(dump_dir.glob("*.s"))]


def summary(scans: list[dict]) -> str:
    parts = []
    for d in scans:
        sig = "SIGNATURE" if d["signature"] else "no signature"
        parts.append(f"{d['function']}: vfredusum={d['vfredusum']} vfredosum={d['vfredosum']} "
                     f"vl1_mf2={d['vl1_mf2']} {sig}")
    return "; ".join(parts) or "no dispatch assembly"
