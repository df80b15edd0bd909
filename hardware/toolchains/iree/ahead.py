"""Compile ahead: the programs a session's cases will need, in batches, before the cases reach them.

An IREE backend turns its cases into ``Request``s (a program's text and flags, with the index of
the first case that needs it) and ``jobs`` groups them: programs with the same flags and output go
into batches (one ``iree-compile`` each: compiler.compile_batch), in the order their cases run.
A batch's first programs are the ones the next cases need, so the front of the session is
built first. Most of a small program's compile is the compiler's start and its per-module work
(benchmarks/bench_compile_batch.py), which a batch pays once.

A batch that fails (a program the compiler rejects) is compiled again in halves, down to the
program at fault, so the others still reach the cache; the rejected program is compiled once more
by its own case, which then gets COMPILE_ERROR with the compiler's words and its own command. A
backend whose runs load a module's every executable (iree-vulkan) asks for batches of one: a
module per program, compiled ahead all the same. Programs whose flags
write files of the output folder (``{out}``: qemu-rvv's static library and dumped executables)
share a batch only when their reader takes its own program's part (``shared_files``: qemu-rvv's
harness calls its program's dispatches and scans only those). A case that reaches a program
while a job builds it waits for it (compiler.claim) instead of compiling it twice.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from accel_regress.core.errors import CompileError, Hang
from accel_regress.toolchains.iree import compiler
from accel_regress.toolchains.iree.program import Program, plan_for

# Programs per batch. A batch's compile grows with its programs while its start is paid once;
# the first batch of each group is small so that the first cases wait little.
FIRST_BATCH = 4
BATCH = 16


@dataclass(frozen=True)
class Request:
    index: int                    # the first case (in run order) that needs the program
    mlir: str
    flags: tuple[str, ...]
    output: str = compiler.VMFB
    name: str = "program"         # for the compiler's messages
    # What else the program's cases need once it is compiled (qemu-rvv: the harness linked to it),
    # done in the same job, after the batch; a failure there is the case's to report.
    then: tuple[Callable[[], object], ...] = ()


def _compile_each(requests: list[Request]) -> None:
    for r in requests:
        try:
            compiler.compile_cached(r.mlir, r.flags, name=f"{r.name} (compiled ahead)", output=r.output)
        except (CompileError, Hang):
            pass      # its case compiles it again and reports it


def _compile(requests: list[Request], shared_files: bool) -> None:
    """The programs in one batch; when it fails, each half again, so that a program the compiler
    rejects costs a few compiles of its neighbours, not one each."""
    if len(requests) == 1:
        _compile_each(requests)
        return
    first = requests[0]
    try:
        batch = compiler.compile_batch([r.mlir for r in requests], first.flags, output=first.output,
                                       name=f"{first.name} and {len(requests) - 1} more (compiled ahead)",
                                       shared_files=shared_files)
    except (CompileError, Hang) as exc:
        if isinstance(exc, Hang):       # a compile that outlives its bound is not split: each case meets it
            return
        half = len(requests) // 2
        _compile(requests[:half], shared_files)
        _compile(requests[half:], shared_files)
        return
    if batch is None:       # some were in the cache or being built by others: the rest one by one
        _compile_each([r for r in requests if not compiler.present(r.mlir, r.flags, r.output)])


def _batch_job(todo: list[Request], shared_files: bool) -> Callable[[], None]:
    def job() -> None:
        # What a warm cache holds is left to its cases, which verify it as they read it: a
        # session started warm spends nothing here.
        requests = [r for r in todo if not compiler.present(r.mlir, r.flags, r.output)]
        if not requests:
            return
        _compile(requests, shared_files)
        for r in requests:
            for step in r.then:
                try:
                    step()
                except Exception:
                    pass
    return job


def case_jobs(cases, source: Callable[[Program], tuple[str, tuple[str, ...]]], **batching
              ) -> list[tuple[int, Callable[[], None]]]:
    """``jobs`` for every program of every case's plan, ``source(program)`` giving the text and
    flags the backend compiles it with (what Backend.ahead returns for an IREE backend). A case
    whose plan cannot be made (an importer that rejects its model) is left to its run, which says so."""
    return jobs((Request(i, *source(p), name=f"{c.op}/{c.id}/{p.entry}") for i, c in enumerate(cases)
                 for p in _plan_or_none(c)), **batching)


def _plan_or_none(case) -> tuple:
    from accel_regress.core.errors import VerdictError
    try:
        return plan_for(case)
    except VerdictError:
        return ()


def jobs(requests: Iterable[Request], *, batch: int = BATCH, first_batch: int = FIRST_BATCH,
         shared_files: bool = False) -> list[tuple[int, Callable[[], None]]]:
    """The compile jobs for ``requests``, each with the index of the first case it serves, in
    that order; a program asked for twice is compiled once. ``shared_files``: programs whose
    flags write files of the output folder (``{out}``) may share a batch, because their reader
    takes only its own program's part of them; else they are compiled one by one."""
    groups: dict[tuple, list[Request]] = {}
    seen: set[tuple] = set()
    for r in sorted(requests, key=lambda r: r.index):
        if (r.mlir, r.flags, r.output) not in seen:
            seen.add((r.mlir, r.flags, r.output))
            groups.setdefault((r.flags, r.output), []).append(r)
    out: list[tuple[int, Callable[[], None]]] = []
    for (flags, _), group in groups.items():
        size = 1 if any("{out}" in f for f in flags) and not shared_files else batch
        start, n = 0, min(first_batch, size)
        while start < len(group):
            part = group[start:start + n]
            out.append((part[0].index, _batch_job(part, shared_files)))
            start, n = start + n, size
    out.sort(key=lambda job: job[0])
    return out
