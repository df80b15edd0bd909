"""Verdict of one FireSim micro-test run from its logs (seed 004's corrected classification).

Verdicts, first match wins:

``hang`` (simulator)
    FireSim's heartbeat printed ``Simulator deadlock detected at target cycle N`` (heartbeat.cc:50-55):
    target time stopped advancing, and the heartbeat bridge ended the run with exit code 1, so the
    ``*** FAILED *** (code = 1)`` after it is the bridge's code, not the target's (heartbeat.h:29-30,
    chipyard firesim_top.cc:72-76). FireSim's own guide files this under *simulator* hangs (FPGA-side
    token starvation or a bridge driver waiting forever); a hung *design* keeps target time advancing
    (docs/Advanced-Usage/Debugging-and-Profiling-on-FPGA/Debugging-Hanging-Simulators.rst:15-57).
    It is a hang -- no completion -- and never a crash of the target; the detail says whose.
``fail``
    The driver printed a failure with an exit code (FireSim ``(code = K)``, the rocket-chip emulator's
    ``(code = K, seed S)``, TestDriver's reason-less ``*** FAILED ***``) after at least one ``[dn]``.
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
    Stopped inside a dispatch, with the bound's evidence that it was not merely slow: the driver's
    cycle-bound line (``simulation timed out``, ``+max_cycles specified timeout``, ``(timeout)``)
    while a dispatch that never completed was open (seed: "every f32 reduction test halts at [dn]
    with no [dc] exit for wg=0"); or cycle counts (the driver's end line or heartbeat.csv) that put
    the open dispatch more than ``HANG_FACTOR`` times past the longest earlier completion of the same
    dispatch, after every printed cycle and every console character is accounted for.
``stopped``
    Stopped inside a dispatch that never completed, with no such evidence: no driver end line (the
    log was cut, or the wall clock killed the run) and no cycle count. A slow dispatch looks exactly
    like this; calling it a hang is seed 004's very mistake (its parser called runs that were still
    advancing hangs).
``progress``
    Stopped while still advancing: dispatches completed, and the one it stopped in (if any) had
    completed before without outliving that by ``HANG_FACTOR`` (seed: ``mt_mm_i8_64x128``, d1 at wg
    10+ at ~41 k cyc/wg).

"Stopped" means the log has no driver end line (truncated, or killed by the wall-clock bound) or
ends in the driver's cycle-bound line.

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

from accel_regress.backends.firesim import uart

VERDICTS = ("pass", "warmup", "progress", "hang", "stopped", "early", "fail")
BINARY_FRACTION = 0.30   # more non-text bytes than this, and no marker at all: not a log
# "far past": an open dispatch counts as hung once its lower bound is two orders of magnitude past the
# longest completion of the same dispatch (workgroup-to-workgroup spread in seed 004 is < 2x)
HANG_FACTOR = 100


@dataclass
class Classification:
    verdict: str
    detail: str
    driver: Optional[uart.Marker] = None          # passed / failed / timed_out line, if any
    deadlock: Optional[uart.Marker] = None        # FireSim's heartbeat deadlock line, if any
    hang_evidence: Optional[str] = None           # hang: "deadlock" (simulator), "timeout" or "cycles"
    finished: bool = False                        # [done] printed
    dispatches_started: int = 0
    dispatches_completed: int = 0
    cycles: int = 0                               # sum of [dc] cyc= (the seed's CSV column)
    end_cycles: Optional[int] = None              # target cycles at the end (driver line or heartbeat)
    last_dispatch: Optional[dict] = None          # fields of the last [dn], with its line number
    open_dispatch: Optional[dict] = None          # that [dn] when no [dc] followed it
    warmups_done: int = 0
    benches_done: int = 0
    markers: list = field(default_factory=list, repr=False)

    @property
    def driver_code(self) -> Optional[int]:
        return self.driver.fields.get("code") if self.driver is not None and self.driver.kind == "failed" else None


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
    f = marker.fields
    seed = f", seed {f['seed']}" if "seed" in f else ""
    if marker.kind == "passed":
        return f"driver: PASSED after {f['cycles']} cycles"
    if marker.kind == "failed":
        code = f"code = {f['code']}{seed}" if "code" in f else "no code"
        return f"driver: FAILED ({code}) after {f['cycles']} cycles"
    return f"driver: simulation timed out after {f['cycles']} cycles (the cycle bound{seed})"


def classify_markers(found: list[uart.Marker], *, empty: bool = False, chars: int = 0,
                     heartbeat_cycles: Optional[int] = None,
                     cycles_per_char: Optional[int] = None) -> Classification:
    """``chars``: console characters in the log; ``heartbeat_cycles``: the last target cycle in
    heartbeat.csv; ``cycles_per_char``: an upper bound on the target cycles one console character
    costs (the backend knows it from the fesvr step size it set). Without the last two no cycle
    count can show a hang."""
    c = Classification("progress", "", markers=found)
    completed: dict[str, int] = {}             # dispatch key -> its longest completion (cycles)
    open_: Optional[dict] = None
    current: Optional[uart.Marker] = None      # the iteration line in force
    ordinal = 0

    def key(fields: dict) -> str:
        if "d" in fields:
            return f"d={fields['d']}"
        if "symbol" in fields:
            return fields["symbol"]
        return f"#{fields.get('ordinal')}"

    def complete(k: str, cyc: int) -> None:
        completed[k] = max(completed.get(k, 0), cyc)
        c.dispatches_completed += 1

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
        elif m.kind == "deadlock":
            c.deadlock = m
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
                complete(key(open_), 0)
            ordinal += 1
            open_ = dict(m.fields, ordinal=ordinal, line=m.line)
            c.last_dispatch = open_
            c.dispatches_started += 1
        elif m.kind == "dc":
            fields = dict(m.fields)
            if "d" not in fields and open_ is not None:
                fields = dict(open_, **fields)
            try:
                cyc = int(m.fields.get("cyc", "0") or 0)
            except ValueError:
                cyc = 0      # a truncated "cyc=12" tail still marks a completion
            c.cycles += cyc
            complete(key(dict(fields, ordinal=fields.get("ordinal", ordinal))), cyc)
            open_ = None
        elif m.kind in ("out", "done"):
            complete_iteration()
            if m.kind == "done":
                c.finished = True
    c.open_dispatch = open_
    ends = [x for x in (c.driver.fields["cycles"] if c.driver is not None else None, heartbeat_cycles) if x is not None]
    c.end_cycles = max(ends) if ends else None
    c.verdict, c.detail = _verdict(c, completed, key, empty, chars, cycles_per_char)
    return c


def _verdict(c: Classification, completed: dict, key, empty: bool, chars: int,
             cycles_per_char: Optional[int]) -> tuple[str, str]:
    driver = _driver_text(c.driver)
    counts = (f"{c.dispatches_completed} dispatch(es) completed, sum [dc] cyc={c.cycles}, "
              f"{c.warmups_done} warmup + {c.benches_done} bench iteration(s) done")
    last = describe_dispatch(c.last_dispatch)
    if c.deadlock is not None:
        c.hang_evidence = "deadlock"
        where = f"last dispatch {last}" if c.last_dispatch else "before the first dispatch"
        return "hang", (f"simulator hang: FireSim's heartbeat saw target time stop at cycle "
                        f"{c.deadlock.fields['cycles']} and ended the run ({driver}; that code is the "
                        f"heartbeat's, not the target's); FireSim files this under simulator hangs (token "
                        f"starvation, a bridge driver), not a hang of the design; {where}; {counts}")
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
    if c.open_dispatch is None:
        return "progress", f"still advancing when stopped (between dispatches); {driver}; {counts}"
    open_key = key(c.open_dispatch)
    at = f"[dn] at line {c.open_dispatch['line']}"
    if open_key not in completed:
        if c.driver is not None and c.driver.kind == "timed_out":
            c.hang_evidence = "timeout"
            return "hang", (f"stopped by the cycle bound inside {last}: {at} and no [dc] for that dispatch "
                            f"anywhere; {driver}; {counts}")
        return "stopped", (f"stopped inside {last} ({at}), which never completed, with no evidence of a hang "
                           f"(no cycle-bound or deadlock line, no cycle count): a slow dispatch looks the "
                           f"same; {driver}; {counts}")
    prior = completed[open_key]
    if c.end_cycles is not None and cycles_per_char is not None and prior > 0:
        # everything else the target did is at most the completed dispatches plus the console
        open_for = c.end_cycles - c.cycles - chars * cycles_per_char
        if open_for >= HANG_FACTOR * prior:
            c.hang_evidence = "cycles"
            return "hang", (f"{last} ({at}) has been open for at least {open_for} target cycles, more than "
                            f"{HANG_FACTOR}x its longest earlier completion ({prior} cycles); end at cycle "
                            f"{c.end_cycles}; {driver}; {counts}")
    return "progress", (f"still advancing when stopped (stopped in {last}, which completed before in up to "
                        f"{prior} cycles); {driver}; {counts}")


def classify_text(uart_text: str, driver_text: Optional[str] = None, *, heartbeat_cycles: Optional[int] = None,
                  cycles_per_char: Optional[int] = None) -> Classification:
    """Classify a uartlog's text; ``driver_text`` is metasim_stderr.out's, where the driver's end
    line goes in metasimulation (runtime_config.py:888 redirects the driver's stderr there)."""
    found = uart.markers(uart.split_lines(uart_text))
    if driver_text:
        found += [m for m in uart.markers(uart.split_lines(driver_text))
                  if m.kind in uart.DRIVER_KINDS]
    return classify_markers(found, empty=not uart_text.strip() and not (driver_text or "").strip(),
                            chars=len(uart_text), heartbeat_cycles=heartbeat_cycles, cycles_per_char=cycles_per_char)


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


@dataclass
class Heartbeat:
    """heartbeat.csv (heartbeat.cc:27-47): a header, then ``<target cycle>, <seconds since start>``
    every polling interval. FireSim's guide reads it as the progress evidence: a hung design keeps
    target time advancing, a hung simulator stops it (Debugging-Hanging-Simulators.rst:15-57)."""
    rows: list

    @property
    def last_cycle(self) -> Optional[int]:
        return self.rows[-1][0] if self.rows else None

    @property
    def advancing(self) -> Optional[bool]:
        """Did target time still advance between the last two polls (None: fewer than two)."""
        return self.rows[-1][0] > self.rows[-2][0] if len(self.rows) >= 2 else None

    def summary(self) -> str:
        if not self.rows:
            return "heartbeat.csv: no rows"
        cyc, sec = self.rows[-1]
        moving = {True: "advancing", False: "not advancing", None: "one row"}[self.advancing]
        return f"heartbeat.csv: {len(self.rows)} row(s), last target cycle {cyc} at {sec} s ({moving})"


def read_heartbeat(path: Path) -> Heartbeat:
    """The rows of a heartbeat.csv; a cut last line (the simulation was killed mid-write) is dropped."""
    rows = []
    for line in read_log(path).splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and all(p.lstrip("-").isdigit() for p in parts):
            rows.append((int(parts[0]), int(parts[1])))
    return Heartbeat(rows)


def classify_files(uartlog: Path, stderr: Optional[Path] = None, heartbeat: Optional[Path] = None, *,
                   cycles_per_char: Optional[int] = None) -> Classification:
    """Classify a uartlog (and the metasim_stderr.out and heartbeat.csv beside it, if given and present)."""
    text = read_log(uartlog)
    driver_text = read_log(stderr) if stderr is not None and Path(stderr).exists() else None
    beat = read_heartbeat(heartbeat) if heartbeat is not None and Path(heartbeat).exists() else None
    return classify_text(text, driver_text, heartbeat_cycles=beat.last_cycle if beat else None,
                         cycles_per_char=cycles_per_char)
