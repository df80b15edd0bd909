"""Wiring of the isolated runner into the session: the fork server and its bounds, device locks,
--max-hangs, and what stops a session (SIGTERM, SIGINT, --session-timeout) so that the running
case is recorded as INTERRUPTED."""
from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Optional

import pytest

from accel_regress.plugin import engagement, selection

# Why the session stopped early, once something stopped it (read by accel_regress.plugin.recording).
stop_reason: Optional[str] = None
# "starting" until collection begins (no results sink yet, and pytest would skip its session end),
# "running", then "finishing" while results are written: a stop signal only interrupts "running";
# in the other phases it is noted and acted on at the next safe point (or not at all: finishing).
phase = "starting"


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
        memory = config.getoption("worker_memory")
        memory_bytes = default_memory() if memory == "auto" else parse_size(memory)
    except ValueError as exc:
        raise pytest.UsageError(f"--worker-memory: {exc}") from None
    try:
        return memory_bytes, devices.parse(config.getoption("devices"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config):
    """Options given are checked now; what they set up waits until the session is the plugin's
    (``engaged`` below)."""
    config._accel_isolation_settings = _settings(config) if engagement.explicit(config) else None
    _save_stop_state(config)


@pytest.hookimpl(tryfirst=True)     # the fork server first: it imports torch while the rest goes on
def pytest_accel_regress_engaged(config):
    from accel_regress.core import devices, runner
    from accel_regress.core.isolation import Bounds, HangGuard
    memory_bytes, pools = config._accel_isolation_settings or _settings(config)
    config._accel_saved_runner = (runner.isolation, runner.hang_guard, runner.devices)
    runner.hang_guard = HangGuard(config.getoption("max_hangs"))
    lock_dir = config.getoption("device_lock_dir")
    runner.devices = devices.DeviceLocks(pools, lock_dir and Path(lock_dir),
                                         on_wait=lambda msg: print(f"accel-regress: {msg}", file=sys.stderr)) if pools else None
    runner.isolation = None
    if (config.getoption("isolation") == "process" and not _is_xdist_controller(config)
            and not config.option.collectonly):
        runner.isolation = _isolation_for(Bounds(memory_bytes=memory_bytes), _preload_modules(selection.selected(config)))
        runner.isolation.start()
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


def _on_stop_signal(signum, frame):
    # A KeyboardInterrupt takes pytest's own interrupted path: the session finishes, results.json is
    # written, and the running case is marked INTERRUPTED (accel_regress.plugin.recording).
    global stop_reason
    stop_reason = stop_reason or signal.Signals(signum).name
    if phase == "running":
        raise KeyboardInterrupt(stop_reason)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    """The first point where an interruption still ends in pytest_sessionfinish (results written)."""
    global phase
    phase = "running"
    if stop_reason is not None:
        raise KeyboardInterrupt(stop_reason)


def pytest_keyboard_interrupt(excinfo):
    global stop_reason
    if stop_reason is None and type(excinfo.value) is not KeyboardInterrupt:
        # pytest's own stop ("1 error during collection"), xdist's ("stopping after 1 failures"):
        # subclasses of KeyboardInterrupt, no signal was sent.
        stop_reason = str(excinfo.value) or type(excinfo.value).__name__
    stop_reason = stop_reason or "SIGINT"


def _save_stop_state(config) -> None:
    global stop_reason, phase
    config._accel_saved_stop = (stop_reason, phase)
    stop_reason, phase = None, "starting"
    config._accel_old_sigterm = config._accel_old_sigint = config._accel_timer = None


def _install_stop_handlers(config) -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        config._accel_old_sigterm = signal.signal(signal.SIGTERM, _on_stop_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        config._accel_old_sigint = signal.signal(signal.SIGINT, _on_stop_signal)
    # --session-timeout is pytest-timeout's option (it stops between tests); at the deadline this
    # also interrupts the case that is running, which results.json lists as INTERRUPTED.
    seconds = config.getoption("session_timeout", None)
    if seconds and not is_worker(config):
        main_id = threading.main_thread().ident

        def fire():
            global stop_reason
            stop_reason = f"session timeout after {seconds:g} s (--session-timeout)"
            signal.pthread_kill(main_id, signal.SIGTERM)   # to the main thread: wakes a blocking wait
        timer = config._accel_timer = threading.Timer(seconds, fire)
        timer.daemon = True
        timer.start()


def pytest_unconfigure(config):
    global stop_reason, phase
    if getattr(config, "_accel_timer", None) is not None:
        config._accel_timer.cancel()
    if getattr(config, "_accel_old_sigterm", None) is not None:
        signal.signal(signal.SIGTERM, config._accel_old_sigterm)
    if getattr(config, "_accel_old_sigint", None) is not None:
        signal.signal(signal.SIGINT, config._accel_old_sigint)
    # A session inside a session (pytester's inline runs) hands the outer one its state back; the
    # fork server stays warm for the next session in this process (see _isolation_for).
    saved = getattr(config, "_accel_saved_runner", None)
    if saved is not None:
        from accel_regress.core import runner
        if runner.devices is not None:
            runner.devices.release()
        runner.isolation, runner.hang_guard, runner.devices = saved
    stop_reason, phase = getattr(config, "_accel_saved_stop", (None, "running"))
