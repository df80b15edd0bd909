"""RVV codegen scan of RISC-V assembly: IREE's per-dispatch dumps (``--iree-hal-dump-executable-files-to``)
or any ``.s`` that LLVM wrote (``python -m accel_regress scan-rvv FILE.s``).

For every function: its floating-point reductions by kind and element width (``vfredusum``
unordered, ``vfredosum`` ordered, ``vfwred*`` widening), and whether seed 004's candidate hang
pattern appears: a loop whose ``vfmacc.vf`` itself runs single-lane at fractional LMUL (under
``vsetivli zero, 1, e32, mf2``) and that also holds a ``vslidedown.vi`` (at any configuration: the
seed's slides run at m1). In a loop any FMA and slide alternate, so that is the seed's "interleaved".
This is the listing seed 004 disassembled from its hanging ``mt_bmm`` dispatch
(``.LBB0_2``: ``vsetivli zero, 1, e32, mf2`` / ``vfmacc.vf`` / ``vsetivli zero, 1, e32, m1`` /
``vslidedown.vi`` / ...), which the seed itself calls an unconfirmed candidate (no PC trace): a hit
is a candidate, not a confirmed hang. A full-width ``vfmacc.vf`` (the exp polynomial at e32, m2) in
a loop whose only mf2 instruction is a one-element slide is not the pattern (IREE 3.13's +zvl512b
softmax, which the first version of this scan flagged).

The element width is the SEW of the vector configuration the instruction runs under: the last
``vsetvli`` / ``vsetivli`` (``e8``/``e16``/``e32``/``e64``) before it in the file's order; a
``vsetvl`` (vtype from a register) or no configuration yet in the function gives ``e?``. The same
``vfredosum.vs`` is an f16 reduction under e16 and an f64 one under e64 (RVV 1.0: the
instruction's width is SEW). The flat ``vfredosum`` / ``vfredusum`` counts are the f32 ones (SEW
32), the width seed 004 is about; ``reductions`` has them all.

A loop is a backward branch: the blocks from its target label to the branch. Linear order
approximates the configuration at a loop's head by its preheader's, which precedes the loop in
the file (LLVM's RISCVInsertVSETVLI keeps a configuration across blocks only when every
predecessor agrees).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from accel_regress.util.derived_cache import DerivedCache

_FUNC = re.compile(r"^([A-Za-z_.$][\w.$]*):")
_LABEL = re.compile(r"^(\.L[\w.$]+):")
_BRANCH = re.compile(r"^\s*(?:b[a-z]*|j)\s+(?:[^,]+,\s*)*(\.L[\w.$]+)\s*$")
_VSET = re.compile(r"^\s*(vsetvli|vsetivli)\s+(\w+),\s*(\w+),\s*(e\d+),\s*(mf?\d+)")
_VSETVL = re.compile(r"^\s*vsetvl\s")
_TYPE_FUNC = re.compile(r"^\s*\.type\s+([\w.$]+),\s*[@%]function")
SIGNATURE_VTYPE = ("1", "e32", "mf2")
UNKNOWN_VTYPE = ("?", "e?", "?")
REDUCTION_OPS = ("vfredusum", "vfredosum", "vfwredusum", "vfwredosum", "vfredmax", "vfredmin")


@dataclass
class DispatchScan:
    function: str
    file: str
    vfredusum: int = 0               # f32 (SEW 32) unordered reductions
    vfredosum: int = 0               # f32 (SEW 32) ordered reductions
    vfmacc_vf: int = 0
    vslidedown_vi: int = 0
    vl1_mf2: int = 0                 # vsetivli zero, 1, e32, mf2 count
    loops: int = 0
    signature: bool = False          # seed 004's candidate pattern (unconfirmed by the seed too)
    signature_loops: list = field(default_factory=list)
    reductions: dict = field(default_factory=dict)     # {"vfredosum": {"e16": 3, ...}, ...}

    def to_json(self) -> dict:
        return asdict(self)


def _functions(text: str, names: Optional[set]) -> list[tuple[str, list[str]]]:
    """(name, body lines) of each function: the labels named by ``.type NAME,@function`` or, in a
    file that has none (hand-written assembly), every global label."""
    out, name, body = [], None, []
    for line in text.splitlines():
        stripped = line.split("#")[0].rstrip()
        m = _FUNC.match(stripped)
        if m and not stripped.startswith(".") and (names is None or m.group(1) in names):
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
    vtype_at = []            # the configuration (AVL, SEW, LMUL) each line runs under (linear order)
    current = UNKNOWN_VTYPE
    for line in lines:
        m = _VSET.match(line)
        if m:
            current = (m.group(3), m.group(4), m.group(5))
            if m.group(1) == "vsetivli" and current == SIGNATURE_VTYPE:
                s.vl1_mf2 += 1
        elif _VSETVL.match(line):
            current = UNKNOWN_VTYPE
        vtype_at.append(current)
        op = _op(line)
        base = op.split(".")[0]
        if base in REDUCTION_OPS:
            sew = current[1]
            by = s.reductions.setdefault(base, {})
            by[sew] = by.get(sew, 0) + 1
            if sew == "e32" and base in ("vfredusum", "vfredosum"):
                setattr(s, base, getattr(s, base) + 1)
        elif op == "vfmacc.vf":
            s.vfmacc_vf += 1
        elif op == "vslidedown.vi":
            s.vslidedown_vi += 1
    for i, line in enumerate(lines):
        m = _BRANCH.match(line)
        if not m or m.group(1) not in labels or labels[m.group(1)] > i:
            continue
        s.loops += 1
        body = range(labels[m.group(1)], i + 1)
        ops = [(_op(lines[k]), vtype_at[k]) for k in body]
        single_lane_fma = any(op == "vfmacc.vf" and vt == SIGNATURE_VTYPE for op, vt in ops)
        has_slide = any(op == "vslidedown.vi" for op, _ in ops)
        if single_lane_fma and has_slide:
            s.signature = True
            s.signature_loops.append(m.group(1))
    return s


def scan_text(text: str, file: str = "", dispatch_only: bool = True) -> list[DispatchScan]:
    """Scans of the functions of one assembly text. ``dispatch_only``: IREE's dispatch functions
    (``_dispatch_`` in the name), not the library query or the runtime helpers it links in."""
    names = {m.group(1) for m in map(_TYPE_FUNC.match, text.splitlines()) if m} or None
    funcs = _functions(text, names)
    if dispatch_only:
        funcs = [(n, b) for n, b in funcs if "_dispatch_" in n and "library_query" not in n]
    return [scan_function(name, file, body) for name, body in funcs]


def scan_files(files: Iterable[Path], dispatch_only: bool = True) -> list[DispatchScan]:
    out = []
    for f in sorted(files):
        out.extend(scan_text(Path(f).read_text(errors="replace"), Path(f).name, dispatch_only))
    return out


# Scans by the digest of the assembly they read (and of this scanner): each compile's dump is parsed
# once per machine, not once per case (a dispatch file is ~10^4 lines; a run has ~100 RISC-V cases).
SCANS = DerivedCache("rvv-scan", "ACCEL_RVV_SCAN_CACHE", ".json", max_files=4096)
_scans: dict[str, str] = {}


def scan_dir(dump_dir: Path) -> list[dict]:
    """JSON-ready scan of every ``*.s`` in an IREE executable dump folder ([] when there is none)."""
    dump_dir = Path(dump_dir)
    if not dump_dir.is_dir():
        return []
    files = sorted(dump_dir.glob("*.s"))
    h = hashlib.sha256(_scanner_version().encode())
    for f in files:
        data = f.read_bytes()
        h.update(f"{f.name}\0{len(data)}\0".encode())
        h.update(data)
    key = h.hexdigest()
    text = _scans.get(key)
    if text is None:
        cached = SCANS.read(key)
        text = cached.decode() if cached is not None else None
        if text is None or not _looks_like_scans(text):
            text = json.dumps([d.to_json() for d in scan_files(files)])
            SCANS.write(key, text.encode())
        _scans[key] = text
    return json.loads(text)        # a fresh copy for every caller


def _looks_like_scans(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    fields = set(DispatchScan.__dataclass_fields__)
    return isinstance(data, list) and all(isinstance(d, dict) and set(d) == fields for d in data)


@lru_cache(maxsize=1)
def _scanner_version() -> str:
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _widths(d: dict) -> str:
    parts = [f"{op}[{','.join(f'{sew}:{n}' for sew, n in sorted(by.items()))}]"
             for op, by in sorted((d.get("reductions") or {}).items())]
    return " ".join(parts) or "no FP reductions"


def summary(scans: list[dict]) -> str:
    parts = []
    for d in scans:
        sig = "seed 004 CANDIDATE pattern" if d["signature"] else "no seed 004 candidate"
        parts.append(f"{d['function']}: f32 vfredusum={d['vfredusum']} vfredosum={d['vfredosum']} "
                     f"({_widths(d)}) vl1_mf2={d['vl1_mf2']} {sig}")
    return "; ".join(parts) or "no dispatch assembly"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accel_regress scan-rvv",
                                 description="RVV codegen scan of RISC-V assembly: FP reductions by element "
                                             "width and seed 004's candidate hang pattern, per function.")
    ap.add_argument("files", nargs="+", metavar="FILE.s|DIR", help="assembly files, or folders of *.s")
    ap.add_argument("--dispatch-only", action="store_true", help="only IREE dispatch functions (*_dispatch_*)")
    ap.add_argument("--json", action="store_true", help="print the scans as JSON")
    args = ap.parse_args(argv)
    files: list[Path] = []
    for f in map(Path, args.files):
        if f.is_dir():
            files.extend(sorted(f.glob("*.s")))
        elif f.is_file():
            files.append(f)
        else:
            print(f"scan-rvv: {f}: no such file or directory", file=sys.stderr)
            return 2
    scans = []
    for f in files:
        try:
            text = f.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            print(f"scan-rvv: {f}: not assembly text ({exc.reason} at byte {exc.start})", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"scan-rvv: {f}: cannot read: {exc.strerror}", file=sys.stderr)
            return 2
        scans.extend(scan_text(text, str(f), args.dispatch_only))
    if not scans:
        print(f"scan-rvv: no functions found in {', '.join(map(str, files)) or ', '.join(args.files)}",
              file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([d.to_json() for d in scans], indent=2))
    else:
        shown = [d for d in scans if d.reductions or d.signature or d.vfmacc_vf or d.vslidedown_vi or d.vl1_mf2]
        for d in shown:
            print(f"{d.file}: {summary([d.to_json()])}")
        print(f"scan-rvv: {len(files)} file(s), {len(scans)} function(s), "
              f"{sum(1 for d in scans if d.reductions)} with FP reductions, "
              f"{sum(1 for d in scans if d.signature)} with seed 004's candidate pattern")
    return 1 if any(d.signature for d in scans) else 0
