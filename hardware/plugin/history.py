"""The history part of the pytest plugin (its options: history/options.py), registered when a
session engages: ``--history``, ``--history-revision``, ``--history-runner``, ``--shard I/N``.

At the end of a session (in the controller only, so once under xdist), after results.json is
written, the run goes into the history and history.html is written next to the reports. A history
that cannot be written (corrupt, locked past the timeout, newer schema, unreachable) is one
warning line: results.json is already on disk. The session's revision, runner label and policy
go into results.json's session too, so an import of the file later stores the same run."""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from accel_regress.results.history.location import HistoryError, describe, resolve

REVISION_ENV = ("GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT")
RUNNER_ENV = ("RUNNER_NAME", "CI_RUNNER_DESCRIPTION", "BUILDKITE_AGENT_NAME", "NODE_NAME")


def _first_env(names) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


@dataclass
class SessionHistory:
    """This session's history: where it goes, how it went, and the --shard split."""
    location: object = None                  # resolve(--history): a path or URL, None for none
    status: Optional[tuple] = None           # (the line the terminal shows, whether it is a warning)
    shard: Optional[tuple] = None            # (i, n) of --shard I/N
    durations: dict = field(default_factory=dict)   # (test key, backend) -> seconds, what the split balances
    durations_note: str = ""


_HISTORY = pytest.StashKey[SessionHistory]()


def pytest_configure(config):
    from accel_regress.results.history import shard
    state = config.stash[_HISTORY] = SessionHistory(resolve(config.getoption("history")))
    spec = config.getoption("shard")
    if not spec:
        return
    try:
        state.shard = shard.parse(spec)
    except ValueError as exc:
        raise pytest.UsageError(f"--shard: {exc}") from None
    if _is_worker(config):
        state.durations = {tuple(k): v for k, v in config.workerinput.get("accel_durations", [])}
        state.durations_note = config.workerinput.get("accel_durations_note", "")
    else:
        state.durations, state.durations_note = _durations(state.location)


def _state(config) -> SessionHistory:
    return config.stash.get(_HISTORY, None) or SessionHistory()


def _durations(location) -> tuple[dict, str]:
    if location is None:
        return {}, "no history (--history none): balanced by test count"
    try:
        from accel_regress.results.history.questions import durations
        from accel_regress.results.history.store import History
        history = History(location, create=False)
        try:
            found = durations(history)
        finally:
            history.close()
        return found, f"balanced by {len(found)} durations from {describe(location)}"
    except HistoryError as exc:
        return {}, f"balanced by test count: {exc}"
    except Exception as exc:
        return {}, f"balanced by test count: history {describe(location)}: {type(exc).__name__}: {exc}"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist: every worker splits with the controller's durations (the same split everywhere)."""
    state = _state(node.config)
    if state.shard:
        node.workerinput["accel_durations"] = [[list(k), v] for k, v in state.durations.items()]
        node.workerinput["accel_durations_note"] = state.durations_note


@pytest.hookimpl(trylast=True)      # after -k / -m and the other plugins have deselected
def pytest_collection_modifyitems(session, config, items):
    state = _state(config)
    if not state.shard or not items:
        return
    from accel_regress.results.history import shard
    from accel_regress.results.keys import test_key
    i, n = state.shard
    keys, seconds = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("hw") if callspec else None
        keys.append(item.nodeid)
        seconds.append(state.durations.get((test_key(item.nodeid, backend), backend or "")))
    shards = shard.assign(keys, seconds, n)
    keep = [it for it, s in zip(items, shards) if s == i - 1]
    drop = [it for it, s in zip(items, shards) if s != i - 1]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_report_header(config):
    state = _state(config)
    if state.shard:
        i, n = state.shard
        return [f"accel-regress: shard {i}/{n}, {state.durations_note}"]
    return []


@pytest.hookimpl(trylast=True)      # after recording made the results sink
def pytest_sessionstart(session):
    from accel_regress.plugin import recording
    config = session.config
    sink = recording.sink(config)
    if sink is None or _is_worker(config):
        return
    extra = {"revision": config.getoption("history_revision") or _first_env(REVISION_ENV),
             "runner": config.getoption("history_runner") or _first_env(RUNNER_ENV),
             "policy": config.getoption("gate_policy", None)}
    sink.session.update({k: v for k, v in extra.items() if v})


@pytest.hookimpl(trylast=True)      # after the fork server has started
def pytest_accel_regress_engaged(config):
    if _state(config).location is not None and not _is_worker(config) \
            and not config.option.collectonly:
        # SQLAlchemy and the dashboard cost ~0.25 s of CPU to import: done now, while the session
        # mostly waits on the isolated worker's start (torch), not at its end, where a one-case run
        # would wait for it (issue 30 item 2; benchmarks/bench_harness.py).
        threading.Thread(target=_import_history, name="accel-regress history import", daemon=True).start()


def _import_history() -> None:
    try:
        from accel_regress.results.history import dashboard, store  # noqa: F401
    except Exception:       # store_run imports them again and says what is wrong, in its one line
        pass


def store_run(config, data: dict, report_dir: Path) -> str:
    """Ingest ``data`` and write history.html; the one line the terminal shows."""
    location = _state(config).location
    if location is None:
        return ""
    from accel_regress.results.history import dashboard
    from accel_regress.results.history.store import History
    history = History(location, create=True)
    try:
        stored = history.ingest(data, source=str(Path(report_dir) / "results.json"))
        key, new, n = stored[0]
        page = dashboard.write(history, Path(report_dir) / "history.html",
                               with_faults=bool((data.get("session") or {}).get("fault")))
    finally:
        history.close()
    what = "stored" if new else "already stored"
    return f"history: run {key[:9]} {what} in {history.where} ({n} cases); dashboard {page}"


def pytest_accel_regress_session_finished(config, data, report_dir):
    state = _state(config)
    try:
        state.status = (store_run(config, data, report_dir), False)
    except HistoryError as exc:
        state.status = (f"history: not written ({exc}); results.json is written", True)
    except Exception as exc:      # never cost the session its results: one line, no traceback
        where = describe(state.location or "")
        state.status = (f"history: not written (history {where}: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:300]}); results.json is written", True)
    line, warn = state.status
    if warn and config.pluginmanager.get_plugin("terminalreporter") is None:
        print(f"accel-regress: {line}", file=sys.stderr)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    status = _state(config).status
    if status and status[0]:
        line, warn = status
        terminalreporter.write_line(("WARNING " if warn else "") + line, yellow=warn)
