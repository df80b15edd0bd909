"""Reading the harness's stdout (the protocol is in harness/harness.c's header comment).

``parse(text)`` returns the dispatches started and completed, the iterations begun, the outputs
printed as ``[out]`` lines (decoded into numpy arrays of their logical shape) and whether
``[done]`` was reached. Lines may end in CR LF (a terminal capture); anything that is not a
tag is ignored. A malformed ``[out]`` line raises ``ProtocolError`` naming the line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from ml_dtypes import bfloat16

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8, "i64": np.int64,
          "bf16": bfloat16}
_DN = re.compile(r"\[dn\] d=(\d+) wg=(\d+)")
_DC = re.compile(r"\[dc\] d=(\d+) cyc=(\d+)")
_ITER = re.compile(r"Bench iter (\d+)/(\d+)")
_OUT = re.compile(r"\[out\] name=(\S+) dtype=(\S+) shape=(\S*) hex=([0-9a-f]*)\s*$")
_ERR = re.compile(r"\[err\] (.*)")


class ProtocolError(Exception):
    pass


@dataclass
class Transcript:
    started: list[tuple[int, int]] = field(default_factory=list)     # (dispatch, workgroups)
    completed: list[tuple[int, int]] = field(default_factory=list)   # (dispatch, cycles)
    iterations: int = 0
    of_iterations: int = 0
    outputs: dict = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    done: bool = False

    @property
    def open_dispatch(self) -> Optional[int]:
        """The dispatch that started last and never completed (None when every one completed)."""
        if len(self.started) > len(self.completed):
            return self.started[-1][0]
        return None

    @property
    def cycles(self) -> int:
        return sum(c for _, c in self.completed)

    def where(self) -> str:
        d = self.open_dispatch
        if d is not None:
            wg = self.started[-1][1]
            return f"dispatch d={d} (wg={wg}) started ([dn]) and never completed ([dc]) in iteration {self.iterations}"
        if self.done:
            return "ran to [done]"
        return f"{len(self.completed)} dispatches completed; no [done]"


def decode_output(line_no: int, name: str, dtype: str, shape: str, hexdata: str) -> np.ndarray:
    if dtype not in DTYPES:
        raise ProtocolError(f"line {line_no}: [out] {name}: unknown dtype {dtype!r}")
    try:
        dims = tuple(int(d) for d in shape.split("x")) if shape else ()
        raw = bytes.fromhex(hexdata)
    except ValueError as exc:
        raise ProtocolError(f"line {line_no}: [out] {name}: {exc}") from None
    dt = np.dtype(DTYPES[dtype]).newbyteorder("<")
    expected = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
    if len(raw) != expected:
        raise ProtocolError(f"line {line_no}: [out] {name}: {len(raw)} bytes for shape {shape or '()'} "
                            f"of {dtype} ({expected} expected); the line was cut short")
    return np.frombuffer(raw, dtype=dt).astype(DTYPES[dtype]).reshape(dims)


def parse(text: str) -> Transcript:
    t = Transcript()
    for no, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):
        if m := _DN.search(line):
            t.started.append((int(m.group(1)), int(m.group(2))))
        elif m := _DC.search(line):
            t.completed.append((int(m.group(1)), int(m.group(2))))
        elif m := _ITER.search(line):
            t.iterations, t.of_iterations = int(m.group(1)), int(m.group(2))
        elif "[out]" in line:
            m = _OUT.search(line)
            if not m:
                raise ProtocolError(f"line {no}: malformed [out] line: {line[:120]!r}")
            t.outputs[m.group(1)] = decode_output(no, *m.groups())
        elif m := _ERR.search(line):
            t.errors.append(m.group(1))
        elif "[done]" in line:
            t.done = True
    return t
