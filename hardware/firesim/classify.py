"""Verdict of one FireSim micro-test run from its logs (seed 004's corrected classification).

Verdicts, first match wins:

``fail``
    FireSim's driver printed ``*** FAILED *** (code = K)`` (simulation.cc:153-156: the target
    exited non-zero) after at least one ``[dn]``.
``early``
    No ``[dn]`` was ever printed and the run did not finish: it died (driver code K) or was
    stopped before its first dispatch (seed 004: ``mt_matmul_64x128_opu_llm``). An empty log is
    early: nothing was printed at all.
``pass``
    The run finished: the driver printed ``*** PASSED ***`` or the harness printed ``[done]``; or,
    for seed 004's harness that prints no ``[done]``, a whole bench iteration completed before the
    run was stopped (the seed's ``mt_rsqrt_64xf32``: bench iters 1-5 printed).
``warmup``
    Stopped after at least one whole warmup iteration but before any bench iteration completed
    (the seed's ``mt_mm_i8_narrow_m``: warmup iter 1 done, iter 2 starting; the seed's table
    filed that row under pass, its parser under the warmup verdict we keep here).
``hang``
    Stopped inside a dispatch that never completed once: its last ``[dn]`` has no ``[dc]`` and no
    ``[dc]`` for the same dispatch appears anywhere in the log (seed: "every f32 reduction test
    halts at [dn] with no [dc] exit for wg=0").
``progress``
    Stopped while still advancing: dispatches completed, and the one it stopped in (if any) had
    completed before (seed: ``mt_mm_i8_64x128``, d1 at wg 10+ at ~41 k cyc/wg). A run still
    making progress when it was stopped is never a hang.

"Stopped" means the log has no driver end line (truncated, or killed by the wall-clock bound) or
ends in ``*** FAILED *** simulation timed out`` (the ``+max-cycles`` bound).

An iteration is complete when the next iteration line, an ``[out]`` or ``[done]`` follows with no
dispatch open, or when a warmup line says ``done``. Dispatches are told apart by ``d=``, else by
their symbol, else by their position in the iteration. Nothing here looks for the words
``Iteration 1``: the seed's old parser grepped that string, which the benchmark never prints, and
called every run a hang.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from hardware.firesim import uart

VERDICTS = ("pass", "warmup", "progress", "hang", "early", "fail")
BINARY_FRACTION = 0.30   # more non-text bytes than this, and no marker at all: not a log


@dataclass
class Classification:
    verdict: str
    detail: str
    driver: Optional[uart.Marker] = None          # passed / failed / timed_out line, if any
    finished: bool = False                        # [done] printed
    dispatches_started: int = 0
    dispatches_completed: int = 0
    cycles: int = 0                               # sum of [dc] cyc= (the seed's CSV column)
    last_dispatch: Optional[dict] = None          # fields of the last [dn], with its line number
    open_dispatch: Optional[dict] = None          # that [dn] when no [dc] followed it
    warmups_done: int = 0
    benches_done: int = 0
    markers: list = field(default_factory=list, repr=False)

    @property
    def driver_code(self) -> Optional[int]:
        return self.driver.fields["code"] if self.driver is not None and self.driver.kind == "failed" else None


def describe_dispatch(fields: Optional[dict]) -> str:
    if not fields:
        return "?"
    parts = [f"d={fields['d']}" if "d" in fields else f"dispatch #{fields.get('ordinal', '?')}"]
    if "symbol" in fields:
        parts.append(f"({fields['symbol']})")
    if "wg" in fields:
        parts.append(f"wg={fields['wg']}")
    return " ".join(parts)


def _driver_text(marker: Optional[uart.Marker]) -> str:
    if marker is None:
        return "no driver end line (log truncated or the simulation was killed)"
    if marker.kind == "passed":
        return f"driver: PASSED after {marker.fields['cycles']} cycles"
    if marker.kind == "failed":
        return f"driver: FAILED (code = {marker.fields['code']}) after {marker.fields['cycles']} cycles"
    return f"driver: simulation timed out after {marker.fields['cycles']} cycles (+max-cycles)"


def classify_markers(found: list[uart.Marker], *, empty: bool = False) -> Classification:
    c = Classification("progress", "", markers=found)
    completed_keys: set[str] = set()
    open_: Optional[dict] = None
    current: Optional[uart.Marker] = None      # the iteration line in force
    ordinal = 0

    def key(fields: dict) -> str:
        if "d" in fields:
            return f"d={fields['d']}"
        if "symbol" in fields:
            return fields["symbol"]
        return f"#{fields.get('ordinal')}"

    def complete_iteration() -> None:
        nonlocal current
        if current is not None and open_ is None:
            if current.kind == "bench":
                c.benches_done += 1
            else:
                c.warmups_done += 1
        current = None

    for m in found:
        if m.kind in ("passed", "failed", "timed_out"):
            c.driver = m            # the last one wins (the driver prints exactly one)
        elif m.kind == "warmup" and m.fields["done"]:
            # "warmup iter i/n done" ends iteration i, whether or not its start was printed
            if current is None or current.kind != "warmup" or current.fields["i"] != m.fields["i"]:
                complete_iteration()
                current = uart.Marker("warmup", m.line, {"i": m.fields["i"], "n": m.fields["n"], "done": False})
            complete_iteration()
            ordinal = 0
        elif m.kind in ("bench", "warmup"):
            complete_iteration()
            ordinal = 0
            current = m
        elif m.kind == "dn":
            if open_ is not None:    # the host moved on, so the previous dispatch returned
                completed_keys.add(key(open_))
                c.dispatches_completed += 1
            ordinal += 1
            open_ = dict(m.fields, ordinal=ordinal, line=m.line)
            c.last_dispatch = open_
            c.dispatches_started += 1
        elif m.kind == "dc":
            fields = dict(m.fields)
            if "d" not in fields and open_ is not None:
                fields = dict(open_, **fields)
            completed_keys.add(key(dict(fields, ordinal=fields.get("ordinal", ordinal))))
            c.dispatches_completed += 1
            try:
                c.cycles += int(m.fields.get("cyc", "0") or 0)
            except ValueError:
                pass         # a truncated "cyc=12" tail still marks a completion
            open_ = None
        elif m.kind in ("out", "done"):
            complete_iteration()
            if m.kind == "done":
                c.finished = True
    c.open_dispatch = open_
    c.verdict, c.detail = _verdict(c, completed_keys, key, empty)
    return c


def _verdict(c: Classification, completed_keys: set, key, empty: bool) -> tuple[str, str]:
    driver = _driver_text(c.driver)
    counts = (f"{c.dispatches_completed} dispatch(es) completed, sum [dc] cyc={c.cycles}, "
              f"{c.warmups_done} warmup + {c.benches_done} bench iteration(s) done")
    last = describe_dispatch(c.last_dispatch)
    if c.driver is not None and c.driver.kind == "failed":
        if c.dispatches_started == 0:
            return "early", f"{driver}; no [dn] printed: died before the first dispatch"
        return "fail", f"{driver}; last dispatch {last} (line {c.last_dispatch['line']}); {counts}"
    if c.driver is not None and c.driver.kind == "passed":
        tail = "[done] printed" if c.finished else "no [done] printed (outputs incomplete)"
        return "pass", f"{driver}; {tail}; {counts}"
    if c.finished:
        return "pass", f"[done] printed; {driver}; {counts}"
    if c.benches_done:
        where = f"; stopped in {last}" if c.open_dispatch else ""
        return "pass", f"{c.benches_done} bench iteration(s) completed before the stop{where}; {driver}; {counts}"
    if c.warmups_done:
        return "warmup", f"{c.warmups_done} warmup iteration(s) completed, no bench iteration; {driver}; {counts}"
    if c.dispatches_started == 0:
        what = "empty log: nothing printed" if empty else "no [dn] printed: stopped before the first dispatch"
        return "early", f"{what}; {driver}"
    if c.open_dispatch is not None and key(c.open_dispatch) not in completed_keys:
        return "hang", (f"stopped inside {last}: [dn] at line {c.open_dispatch['line']} and no [dc] for that "
                        f"dispatch anywhere; {driver}; {counts}")
    where = f"stopped in {last}, which completed before" if c.open_dispatch else "stopped between dispatches"
    return "progress", f"still advancing when stopped ({where}); {driver}; {counts}"


def classify_text(uart_text: str, driver_text: Optional[str] = None) -> Classification:
    """Classify a uartlog's text; ``driver_text`` is metasim_stderr.out's, where the driver's end
    line goes in metasimulation (runtime_config.py:888 redirects the driver's stderr there)."""
    found = uart.markers(uart.split_lines(uart_text))
    if driver_text:
        found += [m for m in uart.markers(uart.split_lines(driver_text))
                  if m.kind in ("passed", "failed", "timed_out")]
    return classify_markers(found, empty=not uart_text.strip() and not (driver_text or "").strip())


def read_log(path: Path) -> str:
    """A log's text; LogError naming the file when it is missing, unreadable or not text."""
    path = Path(path)
    if path.is_dir():
        raise uart.LogError(f"{path}: is a directory, not a log (give its uartlog)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise uart.LogError(f"{path}: cannot read: {exc.strerror or exc}") from None
    text, binary = uart.decode(data)
    if binary > BINARY_FRACTION and not uart.markers(uart.split_lines(text)):
        raise uart.LogError(f"{path}: not a text log: {binary:.0%} of its {len(data)} bytes are binary "
                            f"and it holds no harness or driver line")
    return text


def classify_files(uartlog: Path, stderr: Optional[Path] = None) -> Classification:
    """Classify a uartlog (and the metasim_stderr.out beside it, if given and present)."""
    text = read_log(uartlog)
    driver_text = read_log(stderr) if stderr is not None and Path(stderr).exists() else None
    return classify_text(text, driver_text)
