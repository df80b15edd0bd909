"""What the bare-metal harness's console costs in target cycles on FireSim, and the fesvr step size
that makes it fit the case's cycle budget.

The harness prints through HTIF (hardware/backends/qemu_rvv/baremetal_rt/htif.c: one tohost write per
character, and the next waits until the host has cleared tohost). On FireSim the host side is fesvr,
and fesvr runs only between target steps: the TSI bridge hands control to it once every
``+fesvr-step-size`` target cycles (chipyard generators/firechip/bridgestubs/src/main/cc/bridges/
tsibridge.cc:30 ``step_size = 2004765L`` by default, :45-47 the plusarg, :195-229 ``tick``). fesvr's
loop reads tohost once per pass (riscv-isa-sim fesvr/htif.cc:298-316), each read waits for the next
bridge tick (firesim_tsi.cc:48-68), and a pass that finds tohost empty idles ``idle_counts`` (10)
ticks (firesim_tsi.cc:11, 22-27). So one character costs at least one step and, when the target was
not ready, up to ``1 + 10`` steps. With the defaults (2 004 765 cycles a step, +max-cycles 2e9) a
run prints at most ~1000 characters before the bound -- far less than one [out] line of a 64x128
f32 output (65 536 hex digits).

We therefore set ``+fesvr-step-size`` per case so that the console, at its worst, takes at most
``CONSOLE_SHARE`` of the cycle budget, and refuse a case whose console cannot fit even at
``MIN_STEP``. A smaller step only makes the host poll more often (slower wall clock), never changes
what the target computes.
"""
from __future__ import annotations

from typing import Iterable, Optional

DEFAULT_STEP = 2_004_765        # tsibridge.cc:30
IDLE_COUNTS = 10                # firesim_tsi.cc:11
TICKS_PER_CHAR = 1 + IDLE_COUNTS
MIN_STEP = 128                  # FireSim's own metasimulation default (sample_config_runtime.yaml:19)
CONSOLE_SHARE = 0.25            # of +max-cycles, for the console at its worst


class ConsoleTooLong(Exception):
    """The case's console output cannot fit its cycle budget; the message says what to change."""


def harness_chars(outputs: Iterable[tuple[str, str, str, int]], dispatches: int, iterations: int = 1) -> int:
    """Characters the harness prints (hardware/backends/qemu_rvv/harness/harness.c:81-161): per iteration a
    ``Bench iter`` line and a ``[dn]``/``[dc]`` pair per dispatch, then one ``[out]`` line per output
    ``(name, dtype, shape, nbytes)`` with two hex digits a byte, and ``[done]``. Numbers are counted
    at their widest (20 digits) so this is an upper bound."""
    per_iteration = len("Bench iter 4294967295/4294967295\n") + dispatches * (
        len("[dn] d=4294967295 wg=18446744073709551615\n") + len("[dc] d=4294967295 cyc=18446744073709551615\n"))
    out = sum(len(f"[out] name={n} dtype={d} shape={s} hex=\n") + 2 * nbytes for n, d, s, nbytes in outputs)
    return iterations * per_iteration + out + len("[done]\n")


def worst_cycles_per_char(step: int) -> int:
    return TICKS_PER_CHAR * step


def step_size(chars: Optional[int], max_cycles: int) -> int:
    """The ``+fesvr-step-size`` for a console of ``chars`` characters under ``+max-cycles``: the
    default step when it fits, else the largest that fits (at least MIN_STEP); ConsoleTooLong when
    not even MIN_STEP does. ``chars`` None (unknown) keeps FireSim's default."""
    if chars is None:
        return DEFAULT_STEP
    budget = int(CONSOLE_SHARE * max_cycles)
    step = min(DEFAULT_STEP, budget // max(1, TICKS_PER_CHAR * chars))
    if step < MIN_STEP:
        need = TICKS_PER_CHAR * MIN_STEP * chars
        raise ConsoleTooLong(
            f"the harness prints up to {chars} console characters; at fesvr step {MIN_STEP} they may take "
            f"{need} target cycles, more than {CONSOLE_SHARE:.0%} of +max-cycles={max_cycles}: raise "
            f"ACCEL_FIRESIM_MAX_CYCLES to at least {int(need / CONSOLE_SHARE) + 1} (the bound is 2147483647)")
    return step
