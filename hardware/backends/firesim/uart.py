"""What the micro-test harness prints over the UART, and how to read it back.

The harness (built by ``accel_regress.backends.qemu_rvv.build.build_harness(..., uart_outputs=True)``) prints::

    [dn] d=<dispatch> wg=<workgroups>          before each dispatch
    [dc] d=<dispatch> cyc=<cycles or 0>        after it
    Bench iter <i>/<n>                         when iteration i begins
    [out] name=<n> dtype=<f32|f64|i32|i8|i64> shape=<d0>x<d1>... hex=<little-endian bytes>
    [done]

Seed 004's own harness prints the same tags with the dispatch as ``d1`` plus its symbol, per
workgroup (``[dn] d1 reduction_64x128_f32 wg=0``), and ``warmup iter i/n [done]``; both forms are
read here.

The uartlog is a ``script -f`` capture of a terminal (deploy/runtools/runtime_config.py:586), so
lines end in CR LF, a line may be rewritten with a lone CR, and kernel or driver noise may sit on
the same line as a tag. Tags are therefore searched anywhere in a line, every CR is a line break,
and terminal escape sequences are dropped before matching.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
LINE_BREAK = re.compile(r"\r\n|\r|\n")
TAG = re.compile(r"\[(dn|dc|out|done)\]")
KEY_VALUE = re.compile(r"([A-Za-z_]+)=(\S*)")
BENCH = re.compile(r"\bbench\s+iter(?:ation)?\s+(\d+)\s*/\s*(\d+)", re.I)
WARMUP = re.compile(r"\bwarm-?up\s+iter(?:ation)?\s+(\d+)\s*/\s*(\d+)([^\[]*)", re.I)
# End lines of the simulation drivers, each with where it is printed (repository path:line@commit;
# tests/selftest/fixtures/real/firesim/README.md has the whole corpus). ``after<pad>N``: Verilog's
# %d pads a 64-bit count to 20 columns (TestDriver.v), so any run of spaces is accepted.
_N = r"after\s+(?P<cycles>\d+)\s+(?:simulation\s+)?cycles"
DRIVER_LINES = (
    # FireSim >= 1.16: sim/midas/src/main/cc/core/simulation.cc:153-163@be558e3 (since c890239a9)
    # FireSim <= 1.15: sim/src/main/cc/firesim/firesim_top.cc:591-595@351054c97
    # rocket-chip emulator.cc:331@c1dda58, TestDriver.v:153@c1dda58 ("Completed", TestDriver "simulation cycles")
    ("passed", re.compile(r"\*\*\* PASSED \*\*\*(?: Completed)? " + _N)),
    # FireSim (all versions): "(code = K)"; rocket-chip emulator.cc:316,321@c1dda58 "via dtm|jtag (code = K,
    # seed S)", and before 135f06cef (2018-02) the same without "via ...": emulator.cc:316@135f06cef^
    ("failed", re.compile(r"\*\*\* FAILED \*\*\*(?: via (?:dtm|jtag))? \(code = (?P<code>-?\d+)(?:, seed (?P<seed>\d+))?\) " + _N)),
    # the cycle bound: FireSim >= 1.16 "simulation timed out" (simulation.cc:160@be558e3); 1.13-1.15
    # "+max_cycles specified timeout" (firesim_top.cc:593@351054c97); <= 1.12 "(timeout)"
    # (firesim_top.cc:588@d2aad962); rocket-chip emulator "via trace_count (timeout, seed S)"
    # (emulator.cc:326@c1dda58) and "(timeout, seed S)" before 135f06cef; TestDriver.v:139,145@c1dda58
    # " (timeout)" ... "simulation cycles"
    ("timed_out", re.compile(r"\*\*\* FAILED \*\*\*\s*(?:simulation timed out|\+max_cycles specified timeout|"
                             r"(?:via trace_count )?\(timeout(?:, seed (?P<seed>\d+))?\)) " + _N)),
    # TestDriver.v:145@c1dda58 with an empty reason: a failure that names no code
    ("failed", re.compile(r"\*\*\* FAILED \*\*\*\s+" + _N)),
)
# FireSim's heartbeat (sim/midas/src/main/cc/bridges/heartbeat.cc:50-55@be558e3): target time did not
# advance between two polls; the bridge then ends the run with exit code 1 (heartbeat.h:29-30), so the
# driver's next line is "*** FAILED *** (code = 1)".
DEADLOCK = re.compile(r"Simulator deadlock detected at target cycle (?P<cycles>-?\d+)\. Terminating\.")
DRIVER_KINDS = ("passed", "failed", "timed_out", "deadlock")

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "i64": np.int64}


class LogError(Exception):
    """A log or an output line that cannot be read; the message names the file (and line)."""


def decode(data: bytes) -> tuple[str, float]:
    """Text of a log and the fraction of its bytes that are not text (NUL, other control bytes)."""
    if not data:
        return "", 0.0
    text = data.decode("utf-8", errors="replace")
    bad = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\r\n\x1b"))
    return text, bad / max(len(text), 1)


def split_lines(text: str) -> list[str]:
    """Lines of a terminal capture: CR LF, lone CR and LF all end a line; escapes and NULs dropped."""
    return [ANSI.sub("", line).replace("\x00", "") for line in LINE_BREAK.split(text)]


@dataclass
class Marker:
    kind: str                    # dn, dc, out, done, bench, warmup, passed, failed, timed_out, deadlock
    line: int                    # 1-based line number in its file
    fields: dict = field(default_factory=dict)
    text: str = ""               # the marker's own text (for [out]: everything after the tag)


def _dispatch_fields(rest: str) -> dict:
    fields = {k.lower(): v for k, v in KEY_VALUE.findall(rest)}
    bare = [t for t in rest.split() if "=" not in t]
    if "d" not in fields and bare and re.fullmatch(r"d\d+", bare[0]):
        fields["d"] = bare.pop(0)[1:]
    # a dispatch symbol (main_dispatch_1_reduction_64x128_f32); a bare fragment of a cut line is not one
    if bare and re.fullmatch(r"[A-Za-z_][\w.$]*_[\w.$]*", bare[0]):
        fields["symbol"] = bare[0]
    return fields


def markers(lines: list[str]) -> list[Marker]:
    """Every recognised marker in order (by line, then by position in the line); anything else on
    a line is noise and ignored."""
    found: list[Marker] = []
    for number, line in enumerate(lines, 1):
        star, bracket, it = "***" in line, "[" in line, "iter" in line.lower()
        if not (star or bracket or it or "deadlock" in line):
            continue        # most noise lines: no marker can be on them
        here: list[tuple[int, Marker]] = []
        taken: list[tuple[int, int]] = []
        for kind, rx in (DRIVER_LINES if star else ()):
            for m in rx.finditer(line):
                if any(a < m.end() and m.start() < b for a, b in taken):
                    continue        # one end line, one marker (the first pattern that reads it)
                taken.append((m.start(), m.end()))
                fields = {k: int(v) for k, v in m.groupdict().items() if v is not None}
                here.append((m.start(), Marker(kind, number, fields, m.group(0))))
        for m in (DEADLOCK.finditer(line) if "deadlock" in line else ()):
            here.append((m.start(), Marker("deadlock", number, {"cycles": int(m.group("cycles"))}, m.group(0))))
        for m in (WARMUP.finditer(line) if it else ()):
            done = bool(re.search(r"\b(done|complete|completed|finished)\b", m.group(3), re.I))
            here.append((m.start(), Marker("warmup", number, {"i": int(m.group(1)), "n": int(m.group(2)),
                                                              "done": done}, m.group(0))))
        for m in (BENCH.finditer(line) if it else ()):
            here.append((m.start(), Marker("bench", number, {"i": int(m.group(1)), "n": int(m.group(2))},
                                           m.group(0))))
        tags = list(TAG.finditer(line)) if bracket else []
        for k, tag in enumerate(tags):
            end = tags[k + 1].start() if k + 1 < len(tags) else len(line)
            rest = line[tag.end():end]
            kind = tag.group(1)
            fields = _dispatch_fields(rest) if kind in ("dn", "dc") else {}
            here.append((tag.start(), Marker(kind, number, fields, rest.strip())))
        found += [marker for _, marker in sorted(here, key=lambda pair: pair[0])]
    return found


def parse_out(marker: Marker, where: str) -> tuple[str, np.ndarray]:
    """One ``[out]`` line -> (name, array). ``where`` names the file; errors say what is wrong."""
    at = f"{where} line {marker.line}"
    fields = {k.lower(): v for k, v in KEY_VALUE.findall(marker.text)}
    missing = [k for k in ("name", "dtype", "shape", "hex") if k not in fields]
    if missing:
        raise LogError(f"{at}: bad [out] line: missing {', '.join(missing)} "
                       f"(expected name=, dtype=, shape=, hex=): {marker.text[:120]!r}")
    name, dtype_name, shape_text, hex_text = fields["name"], fields["dtype"], fields["shape"], fields["hex"]
    if not name:
        raise LogError(f"{at}: bad [out] line: empty name")
    if dtype_name not in DTYPES:
        raise LogError(f"{at}: bad [out] line for {name!r}: dtype {dtype_name!r} is not one of {', '.join(DTYPES)}")
    if shape_text and not re.fullmatch(r"\d+(x\d+)*", shape_text):
        raise LogError(f"{at}: bad [out] line for {name!r}: shape {shape_text!r} is not <d0>x<d1>...")
    shape = tuple(int(d) for d in shape_text.split("x")) if shape_text else ()
    dtype = np.dtype(DTYPES[dtype_name]).newbyteorder("<")
    need = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize * 2
    if len(hex_text) != need:
        raise LogError(f"{at}: bad [out] line for {name!r}: hex has {len(hex_text)} characters, shape "
                       f"{shape_text or '()'} {dtype_name} needs {need} (line truncated or corrupted?)")
    if not re.fullmatch(r"[0-9a-f]*", hex_text):
        bad = re.search(r"[^0-9a-f]", hex_text)
        raise LogError(f"{at}: bad [out] line for {name!r}: hex has a non-hex character {bad.group(0)!r} "
                       f"at offset {bad.start()} (expected lowercase hex)")
    array = np.frombuffer(bytes.fromhex(hex_text), dtype=dtype).astype(dtype.newbyteorder("="))
    return name, array.reshape(shape)


def outputs(found: list[Marker], where: str) -> dict[str, np.ndarray]:
    result: dict[str, np.ndarray] = {}
    for marker in found:
        if marker.kind != "out":
            continue
        name, array = parse_out(marker, where)
        if name in result:
            raise LogError(f"{where} line {marker.line}: output {name!r} printed twice")
        result[name] = array
    return result


def format_out(name: str, array: np.ndarray) -> str:
    """The ``[out]`` line for ``array`` (fixtures and the stand-in write it; the harness prints it)."""
    codes = {np.dtype(v): k for k, v in DTYPES.items()}
    code = codes[array.dtype]
    shape = "x".join(str(d) for d in array.shape)
    data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes().hex()
    return f"[out] name={name} dtype={code} shape={shape} hex={data}"


def last_text_line(lines: list[str]) -> Optional[str]:
    for line in reversed(lines):
        if line.strip():
            return line.strip()[:160]
    return None
