"""The dispatch schedule of a compiled program, read from IREE's host program at the end of HAL.

``iree-compile --compile-to=hal`` writes the host side of the module as MLIR text: memoized
command buffers (``util.func private @__<fn>_memoize_apply``) that record
``hal.command_buffer.dispatch`` ops, each naming an export of the static executable library, its
workgroup count, its push constants and its bindings, either as binding-table slots
``(%cN : index)[offset, length]`` or as buffers ``(%buf : !hal.buffer)[offset, length]``; and the
public function, which turns its arguments into buffers (``hal.buffer_view.buffer``), allocates
transients (``hal.device.queue.alloca``), runs the command buffers with a binding table
(``hal.device.queue.execute.indirect``) and returns views of result buffers
(``hal.buffer_view.create``). All sizes are constants for the static shapes of this suite.

Anything else (dynamic shapes, transfer commands, constant pools, imports) is refused with a
``ScheduleError`` that names the construct, never guessed at.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


class ScheduleError(Exception):
    pass


@dataclass
class Buffer:
    size: int
    arg: int = -1            # >= 0: the function argument (input) it holds; -1: a transient


@dataclass
class Binding:
    buffer: int
    offset: int
    length: int


@dataclass
class Dispatch:
    export: str              # the executable function's name (library export name)
    workgroups: tuple[int, int, int]
    constants: list[int]
    bindings: list[Binding]


@dataclass
class Output:
    buffer: int
    offset: int
    length: int
    shape: tuple[int, ...]
    dtype: str               # f32, i32, i8, ...


@dataclass
class Schedule:
    buffers: list[Buffer] = field(default_factory=list)
    dispatches: list[Dispatch] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    entry: str = ""


_TOP = re.compile(r"^  (util\.func|util\.initializer|util\.global|hal\.executable|func\.func)\b")
_CONST = re.compile(r"%([\w$.-]+) = arith\.constant (-?\d+) : (?:index|i\d+)")
_ETYPE = re.compile(r"%([\w$.-]+) = hal\.element_type<(\w+)>")
_LOOKUP = re.compile(r"%([\w$.-]+) = hal\.executable\.lookup\.function .*?function\(@[\w$.-]+::@[\w$.-]+::@([\w$.-]+)\)")
_DISPATCH = re.compile(
    r"hal\.command_buffer\.dispatch<[^>]*> target\([^)]*\)\[%([\w$.-]+)\] workgroups\(\[([^\]]*)\]\)"
    r"(?: constants\(\[([^\]]*)\]\))? bindings\(\[(.*?)\]\) flags", re.S)
_BIND = re.compile(r"\(%([\w$.-]+) : (index|!hal\.buffer)\)\[%([\w$.-]+), %([\w$.-]+)\]")
_ARG_BUF = re.compile(r"%([\w$.-]+) = hal\.buffer_view\.buffer<%arg(\d+) :")
_ALLOCA = re.compile(r"%([\w$.-]+) = hal\.device\.queue\.alloca<.*?: !hal\.buffer\{%([\w$.-]+)\}")
_EXEC = re.compile(r"hal\.device\.queue\.execute\.indirect<[^>]*>.*?commands\(%([\w$.-]+)\) bindings\(\[(.*?)\]\) flags", re.S)
_VIEW = re.compile(r"%([\w$.-]+) = hal\.buffer_view\.create buffer\(%([\w$.-]+) : !hal\.buffer\)\[%([\w$.-]+), %([\w$.-]+)\]"
                   r" shape\(\[([^\]]*)\]\) type\(%([\w$.-]+)\)")
_RETURN = re.compile(r"util\.return ([^:\n]+) :")
_GLOBAL_LOAD = re.compile(r"%([\w$.-]+) = util\.global\.load (?:immutable )?@([\w$.-]+) : !hal\.command_buffer")
_UNSUPPORTED = ("hal.command_buffer.copy_buffer", "hal.command_buffer.fill_buffer", "hal.command_buffer.update_buffer",
                "hal.command_buffer.dispatch.indirect", "hal.device.queue.execute<", "hal.device.queue.copy",
                "hal.device.queue.fill", "hal.device.queue.update", "hal.device.queue.read", "hal.ex.file",
                "util.buffer.constant")


def _blocks(text: str) -> list[str]:
    """Top-level ops of the module, each as its text (indentation: two spaces)."""
    blocks, cur = [], []
    for line in text.splitlines():
        if _TOP.match(line):
            if cur:
                blocks.append("\n".join(cur))
            cur = [line]
        elif cur:
            cur.append(line)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _consts(block: str) -> dict[str, int]:
    return {name: int(v) for name, v in _CONST.findall(block)}


def _value(consts: dict[str, int], name: str, what: str) -> int:
    if name not in consts:
        raise ScheduleError(f"{what} %{name} is not a constant (dynamic shapes are not supported)")
    return consts[name]


def _memoized(blocks: list[str]) -> dict[str, str]:
    """global name of a memoized command buffer -> the function that records it."""
    out = {}
    for b in blocks:
        if b.lstrip().startswith("util.initializer"):
            call = re.search(r"util\.call @([\w$.-]+)\(", b)
            store = re.search(r"util\.global\.store %[\w$.-]+, @([\w$.-]+) : !hal\.command_buffer", b)
            if call and store:
                out[store.group(1)] = call.group(1)
    return out


def _func(blocks: list[str], name: str) -> str:
    for b in blocks:
        if re.match(rf"\s*util\.func (?:private |public )?@{re.escape(name)}\(", b):
            return b
    raise ScheduleError(f"no function @{name} in the host program")


def _record(block: str) -> list[tuple[str, tuple, list, list]]:
    """Dispatches recorded by a command-buffer function: (export, wg, constants, raw bindings)."""
    consts = _consts(block)
    lookups = dict(_LOOKUP.findall(block))
    out = []
    for fid, wg, cst, binds in _DISPATCH.findall(block):
        if fid not in lookups:
            raise ScheduleError(f"dispatch function id %{fid} has no hal.executable.lookup.function")
        wgs = tuple(_value(consts, w.strip().lstrip("%"), "workgroup count") for w in wg.split(","))
        constants = [(_value(consts, c.strip().lstrip("%"), "push constant") & 0xFFFFFFFF)
                     for c in cst.split(",") if c.strip()]
        raw = []
        for ref, kind, off, length in _BIND.findall(binds):
            raw.append((kind == "index", ref if kind != "index" else _value(consts, ref, "binding slot"),
                        _value(consts, off, "binding offset"), _value(consts, length, "binding length")))
        out.append((lookups[fid], wgs, constants, raw))
    if block.count("hal.command_buffer.dispatch<") != len(out):
        raise ScheduleError("a hal.command_buffer.dispatch op could not be read")
    return out


def parse(text: str, entry: str = "main") -> Schedule:
    for construct in _UNSUPPORTED:
        if construct in text:
            raise ScheduleError(f"the host program uses {construct}, which the harness does not implement")
    blocks = _blocks(text)
    main = _func(blocks, entry)
    consts = _consts(main)
    etypes = dict(_ETYPE.findall(main))
    memo = _memoized(blocks)
    sched = Schedule(entry=entry)
    names: dict[str, int] = {}
    for buf, arg in _ARG_BUF.findall(main):
        names[buf] = len(sched.buffers)
        sched.buffers.append(Buffer(size=0, arg=int(arg)))
    for buf, size in _ALLOCA.findall(main):
        names[buf] = len(sched.buffers)
        sched.buffers.append(Buffer(size=_value(consts, size, "transient size")))
    loads = dict(_GLOBAL_LOAD.findall(main))
    executes = _EXEC.findall(main)
    if not executes:
        raise ScheduleError(f"@{entry} runs no hal.device.queue.execute.indirect")
    for cmd, table_text in executes:
        glob = loads.get(cmd)
        if glob is None or glob not in memo:
            raise ScheduleError(f"command buffer %{cmd} is not a memoized global")
        table = []
        for ref, kind, off, length in _BIND.findall(table_text):
            if ref not in names:
                raise ScheduleError(f"binding table names %{ref}, neither an argument nor a transient")
            table.append(Binding(names[ref], _value(consts, off, "offset"), _value(consts, length, "length")))
        for export, wgs, constants, raw in _record(_func(blocks, memo[glob])):
            bindings = []
            for is_slot, ref, off, length in raw:
                if not is_slot:
                    raise ScheduleError("direct buffer bindings inside a memoized command buffer")
                base = table[ref]
                bindings.append(Binding(base.buffer, base.offset + off, length))
            sched.dispatches.append(Dispatch(export, wgs, constants, bindings))
    views = {v: (buf, off, ln, shape, et) for v, buf, off, ln, shape, et in _VIEW.findall(main)}
    ret = _RETURN.findall(main)
    if not ret:
        raise ScheduleError(f"@{entry} has no util.return")
    for v in (r.strip().lstrip("%") for r in ret[-1].split(",")):
        if v not in views:
            raise ScheduleError(f"result %{v} is not a hal.buffer_view.create of a buffer")
        buf, off, ln, shape, et = views[v]
        if buf not in names:
            raise ScheduleError(f"result buffer %{buf} is unknown")
        dims = tuple(_value(consts, d.strip().lstrip("%"), "result dim") for d in shape.split(",") if d.strip())
        if et not in etypes:
            raise ScheduleError(f"result element type %{et} is unknown")
        sched.outputs.append(Output(names[buf], _value(consts, off, "offset"), _value(consts, ln, "length"),
                                    dims, _dtype(etypes[et])))
    for b in sched.buffers:      # argument buffers: as large as the furthest use
        if b.arg >= 0:
            b.size = 0
    for d in sched.dispatches:
        for bd in d.bindings:
            buf = sched.buffers[bd.buffer]
            buf.size = max(buf.size, bd.offset + bd.length)
    for o in sched.outputs:
        buf = sched.buffers[o.buffer]
        buf.size = max(buf.size, o.offset + o.length)
    return sched


def _dtype(et: str) -> str:
    table = {"f32": "f32", "f64": "f64", "i32": "i32", "si32": "i32", "i8": "i8", "si8": "i8", "i64": "i64",
             "si64": "i64", "bf16": "bf16"}
    if et not in table:
        raise ScheduleError(f"result element type {et} is not one the harness prints")
    return table[et]


def parse_file(path: Path, entry: str = "main") -> Schedule:
    return parse(Path(path).read_text(), entry)
