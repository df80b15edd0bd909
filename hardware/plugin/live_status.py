"""A live status on a terminal while long work runs: after a few quiet seconds (no test reported),
the end of pytest's current line says how many tests are done of how many, which test is running
and for how long, what compiles ahead (what is building, how many are left) and an estimate of the
time left; it goes as soon as pytest writes again. Where the output is not a terminal (a CI log) the
same words come as a line of their own, only after ``--accel-progress-every`` seconds (60) with no
test reported and at most once per interval: a stalled-looking log says what it waits for without
growing by a line a second.

Shown where pytest shows its own live "collecting ..." line (_pytest/terminal.py, pytest 9.0.3:
``pytest_collection`` and ``report_collect`` rewrite it only when ``TerminalReporter.isatty()`` and
verbosity >= 0): on a terminal, not under ``-q``, and only where pytest shows its progress (not
``-s``, where a test writes to the terminal itself, nor ``--setup-show``). In a log, pytest's dots
and percentages are unchanged: a line breaks pytest's row, which goes on below it.

Written straight to the terminal (a duplicate of its file descriptor taken while pytest's capture
is suspended: during a test the descriptor pytest writes to is the capture's file), so that
pytest's own count of the line's width never includes it; erased with backspaces before any of
pytest's own writes (its TerminalWriter's ``write``, which every line and dot goes through).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Callable, Optional

import pytest

from accel_regress.util.escape import term_text

QUIET_S = 3.0           # a status only when nothing was reported for this long: fast runs never see one
REFRESH_S = 1.0
ROOM = len(" [100%]") + 1      # what pytest keeps free at the line's end for its percentage
MIN_ROOM = 40                 # less room than this on the line: no status (the line ends soon)


LOG_LINE = "[accel-regress] "     # a log's progress line starts with this, so a reader (or grep) tells it from pytest's


def wanted(config) -> Optional[str]:
    """The status wanted: "terminal", "log" (not a terminal: a line a while), or None."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or config.get_verbosity() < 0:
        return None
    if config.getoption("capture", "fd") == "no" or config.getoption("setupshow", False):
        return None
    if getattr(config, "workerinput", None) is not None:       # an xdist worker has no terminal
        return None
    if tr.isatty():
        return "terminal"
    return "log" if log_every(config) else None


def log_every(config) -> float:
    return float(config.getoption("accel_progress_every"))     # settled (its default too) by options.pytest_configure


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _shorten(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    keep = max(width - 3, 1)
    return text[:keep // 2] + "..." + text[len(text) - (keep - keep // 2):]


def describe(now: float, started: float, done: int, total: int, running: dict[str, float],
             ahead: Optional[tuple[int, int, list[str]]], width: int) -> str:
    """The status in at most ``width`` characters (plain ASCII): done of total; the longest-running
    test and for how long; the time left, estimated from the rate so far; the compiles ahead. Too
    narrow: the test is named by its parameters alone, the compile by its count, then the compiles
    go, then the estimate."""
    left = [f"about {_clock((now - started) / done * (total - done))} left"] if done >= 3 and total > done else []
    compiling: list[str] = []       # the longer wording first
    if ahead is not None and ahead[0] < ahead[1]:
        finished, planned, building = ahead
        compiling = [f"compiling ahead {finished}/{planned}"]
        if building:
            compiling.insert(0, f"{compiling[0]}: {term_text(building[0])}")
    choices = [left + [c] for c in compiling] + [left, []]
    names: list[str] = []
    head = ""
    if running:
        nodeid, since = min(running.items(), key=lambda kv: kv[1])
        head = f"running {_clock(now - since)}: "
        full = term_text(nodeid.rpartition("::")[2] or nodeid)      # a test id is the run's words: inert
        names = [full] + ([full[full.index("["):]] if "[" in full else [])

    def text(parts: list[str], name: str) -> str:
        return "(" + "; ".join([f"{done}/{total} done"] + ([head + name] if head else []) + parts) + ")"
    out = None
    for parts in choices:                           # the most that fits with the test's name whole
        out = next((t for name in names or [""] for t in [text(parts, name)] if len(t) <= width), None)
        if out is not None:
            break
    if out is None:                                 # no name fits whole: its parameters, shortened
        room = width - len(text([], ""))
        out = text([], _shorten(names[-1], max(room, 12))) if names else text([], "")
    return _shorten(out, width).encode("ascii", "replace").decode("ascii")


class LiveStatus:
    """The status line's state: the tests running, the count done, what is shown now."""

    def __init__(self, config: pytest.Config, tr: pytest.TerminalReporter, log_every_s: Optional[float] = None) -> None:
        self.config, self.tr = config, tr
        self.log_every_s = log_every_s          # None: a terminal's status; else a log's line at most this often
        self.last_line = 0.0
        self.lock = threading.RLock()
        self.running: dict[str, float] = {}
        self.done = 0
        self.started = self.last_write = time.monotonic()
        self.shown = 0                      # characters of status on the terminal now
        self.stopped = threading.Event()
        self.fd = os.dup(tr._tw._file.fileno())
        tw = tr._tw
        self._write: Callable = tw.write

        def write(*args, **kwargs):
            with self.lock:
                self._erase()
                self.last_write = time.monotonic()
                return self._write(*args, **kwargs)
        tw.write = write      # type: ignore[method-assign]  # this reporter's writer only, until stop()
        self.thread = threading.Thread(target=self._tick, name="accel-live-status", daemon=True)
        self.thread.start()

    def _columns(self) -> int:
        """The terminal's width as pytest reads it (_pytest/_io/terminalwriter.py get_terminal_width:
        $COLUMNS, else the terminal's size, under 40 columns taken as 80), from the terminal itself:
        while a test runs pytest's own descriptor is its capture's file, where it would read 80."""
        try:
            columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(self.fd).columns
        except (OSError, ValueError):
            columns = 0
        return columns if columns >= 40 else 80

    def _raw(self, text: str) -> None:
        try:
            os.write(self.fd, text.encode("ascii"))
        except OSError:
            self.stopped.set()

    def _erase(self) -> None:
        if self.shown:
            n, self.shown = self.shown, 0
            self._raw("\b" * n + " " * n + "\b" * n)

    def _words(self, now: float, width: int) -> str:
        """describe() of the run as it stands (called with the lock held)."""
        from accel_regress.plugin import ahead
        total = self.tr._session.testscollected if self.tr._session is not None else 0
        return describe(now, self.started, self.done, total, dict(self.running), ahead.progress(self.config), width)

    def _tick(self) -> None:
        while not self.stopped.wait(REFRESH_S):
            with self.lock:
                now = time.monotonic()
                if self.log_every_s is not None:
                    self._log_line(now)
                    continue
                if now - self.last_write < QUIET_S or not self.running:
                    continue
                width = self._columns() - self.tr._tw.width_of_current_line - ROOM - 1
                if width < MIN_ROOM:
                    continue
                text = " " + self._words(now, width - 1)
                self._erase()
                self._raw(text)
                self.shown = len(text)

    def _log_line(self, now: float) -> None:
        """In a log: one whole line, once the run was quiet (no write of pytest's) for an interval
        and the last such line is an interval old. pytest's row of dots is broken before it and
        goes on after it as a new row (its count of the row's width reset to match)."""
        every = self.log_every_s or 0.0
        if not self.running or now - self.last_write < every or now - self.last_line < every:
            return
        text = LOG_LINE + self._words(now, 240)
        tw = self.tr._tw
        self._raw(("\n" if tw.width_of_current_line else "") + text + "\n")
        tw._current_line = ""
        self.last_line = now

    # pytest hooks: the instance is registered as a plugin for the test loop (xdist's controller
    # calls both for its workers' tests too).
    def pytest_runtest_logstart(self, nodeid, location) -> None:
        with self.lock:
            self.running[nodeid] = time.monotonic()

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        with self.lock:
            if self.running.pop(nodeid, None) is not None:
                self.done += 1

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        with self.lock:
            self._erase()
            del self.tr._tw.write           # the class's own method again
            os.close(self.fd)


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    config = session.config
    live = None
    mode = wanted(config)
    if mode is not None and not config.option.collectonly:
        try:
            live = LiveStatus(config, config.pluginmanager.get_plugin("terminalreporter"),
                              log_every(config) if mode == "log" else None)
        except (OSError, ValueError, AttributeError):      # a terminal stream without a descriptor: no status
            live = None
    if live is not None:
        config.pluginmanager.register(live, "accel-regress-live-status")
    try:
        return (yield)
    finally:
        if live is not None:
            config.pluginmanager.unregister(live)
            live.stop()
