"""Wiring of the isolated runner into the session: the fork server and its bounds, device locks,
--max-hangs, and what stops a session (SIGTERM, SIGINT, --session-timeout) so that the running
case is recorded as INTERRUPTED."""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import pytest

from accel_regress.plugin import engagement, selection

if TYPE_CHECKING:
    from accel_regress.core import runner


class Stop:
    """What stops this session early, once something stopped it: a signal, --session-timeout,
    pytest's or xdist's own stop. Registered as a plugin of its session (its hooks get no config),
    read by accel_regress.plugin.recording.

    ``phase``: "starting" until collection begins (no results sink yet, and pytest would skip its
    session end), "running", then "finishing" while results are written: a stop signal only
    interrupts "running"; in the other phases it is noted and acted on at the next safe point (or
    not at all: finishing)."""

    def __init__(self) -> None:
        self.reason: Optional[str] = None
        self.phase = "starting"
        self.old_sigterm = self.old_sigint = self.timer = None

    def on_signal(self, signum, frame) -> None:
        # A KeyboardInterrupt takes pytest's own interrupted path: the session finishes, results.json is
        # written, and the running case is marked INTERRUPTED (accel_regress.plugin.recording).
        self.reason = self.reason or signal.Signals(signum).name
        if self.phase == "running":
            raise KeyboardInterrupt(self.reason)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session) -> None:
        """The first point where an interruption still ends in pytest_sessionfinish (results written)."""
        self.phase = "running"
        if self.reason is not None:
            raise KeyboardInterrupt(self.reason)

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        if self.reason is None and type(excinfo.value) is not KeyboardInterrupt:
            # pytest's own stop ("1 error during collection"), xdist's ("stopping after 1 failures"):
            # subclasses of KeyboardInterrupt, no signal was sent.
            self.reason = str(excinfo.value) or type(excinfo.value).__name__
        self.reason = self.reason or "SIGINT"


_STOP = pytest.StashKey[Stop]()
_SETTINGS = pytest.StashKey[Optional[tuple]]()
_CONTEXT = pytest.StashKey["runner.Context"]()


def stop(config) -> Stop:
    return config.stash[_STOP]


def context(config) -> runner.Context:
    """The runner context of this session (the isolated worker, --max-hangs, --devices, who observes
    runs): what every run of the session is handed. Set up when the session engages."""
    if _CONTEXT not in config.stash:
        from accel_regress.core import runner
        config.stash[_CONTEXT] = runner.Context()
    return config.stash[_CONTEXT]


def is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _is_xdist_controller(config) -> bool:
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"


def _preload_modules(names) -> list[str]:
    """Modules the fork server imports once, so every worker starts warm."""
    import importlib.util
    from accel_regress.core import registry
    mods = []
    for name in names:
        if registry.availability(name) is not None:
            continue
        mods += registry.get(name).preload_modules()
    return [m for m in mods if importlib.util.find_spec(m.split(".")[0]) is not None]


def _settings(config) -> tuple:
    """The worker's memory bound and the device pools; a bad value is a usage error."""
    from accel_regress.core import devices
    from accel_regress.core.isolation.bounds import default_memory, parse_size
    try:
        memory = config.getoption("accel_worker_memory")
        memory_bytes = default_memory() if memory == "auto" else parse_size(memory)
    except ValueError as exc:
        raise pytest.UsageError(f"--worker-memory: {exc}") from None
    try:
        return memory_bytes, devices.parse(config.getoption("accel_devices"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config):
    """Options given are checked now; what they set up waits until the session is the plugin's
    (``engaged`` below)."""
    config.stash[_SETTINGS] = _settings(config) if engagement.explicit(config) else None
    config.stash[_STOP] = Stop()
    config.pluginmanager.register(config.stash[_STOP], "accel-regress-stop")


@pytest.hookimpl(tryfirst=True)     # the fork server first: it imports torch while the rest goes on
def pytest_accel_regress_engaged(config):
    from accel_regress.core import devices
    from accel_regress.core.isolation import Bounds, HangGuard
    memory_bytes, pools = config.stash.get(_SETTINGS, None) or _settings(config)
    ctx = context(config)
    ctx.hang_guard = HangGuard(config.getoption("accel_max_hangs"))
    lock_dir = config.getoption("accel_device_lock_dir")
    ctx.devices = devices.DeviceLocks(pools, lock_dir and Path(lock_dir),
                                      on_wait=lambda msg: print(f"accel-regress: {msg}", file=sys.stderr)) if pools else None
    ctx.expect_devices(selection.selected(config))     # before the fork server starts: its workers inherit it
    if (config.getoption("accel_isolation") == "process" and not _is_xdist_controller(config)
            and not config.option.collectonly):
        ctx.isolation = _isolation_for(Bounds(memory_bytes=memory_bytes), _preload_modules(selection.selected(config)))
        ctx.isolation.start()
    _install_stop_handlers(config)


_isolations: dict = {}


def _isolation_for(bounds, preload):
    """One fork server per process and setting: sessions inside a session (pytester) share it
    instead of paying a torch import each; all are closed when the process exits."""
    from accel_regress.core.isolation import Isolation
    key = (bounds, tuple(preload))
    if key not in _isolations:
        if not _isolations:
            import atexit
            atexit.register(_close_isolations)
        _isolations[key] = Isolation(bounds, preload=preload)
    return _isolations[key]


def _close_isolations() -> None:
    while _isolations:
        _isolations.popitem()[1].close()


def _install_stop_handlers(config) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    state = stop(config)
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        state.old_sigterm = signal.signal(signal.SIGTERM, state.on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        state.old_sigint = signal.signal(signal.SIGINT, state.on_signal)
    # --session-timeout is pytest-timeout's option (it stops between tests); at the deadline this
    # also interrupts the case that is running, which results.json lists as INTERRUPTED.
    seconds = config.getoption("session_timeout", None)
    if seconds and not is_worker(config):
        main_id = threading.main_thread().ident

        def fire():
            state.reason = f"session timeout after {seconds:g} s (--session-timeout)"
            signal.pthread_kill(main_id, signal.SIGTERM)   # to the main thread: wakes a blocking wait
        state.timer = threading.Timer(seconds, fire)
        state.timer.daemon = True
        state.timer.start()


def pytest_unconfigure(config):
    state = config.stash.get(_STOP, None)
    if state is not None:
        if state.timer is not None:
            state.timer.cancel()
        if state.old_sigterm is not None:
            signal.signal(signal.SIGTERM, state.old_sigterm)
        if state.old_sigint is not None:
            signal.signal(signal.SIGINT, state.old_sigint)
    # The session's devices are let go; the fork server stays warm for the next session in this
    # process (see _isolation_for).
    ctx = config.stash.get(_CONTEXT, None)
    if ctx is not None:
        ctx.close()
