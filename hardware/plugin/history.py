"""The history part of the pytest plugin (its options: history/options.py), registered when a
session engages: ``--history``, ``--history-revision``, ``--history-runner``, ``--history-project``,
``--history-branch`` (``--shard`` is plugin/shard.py).

At the end of a session (in the controller only, so once under xdist), after results.json is
written, the run goes into the history and history.html is written next to the reports. A history
that cannot be written (corrupt, locked past the timeout, newer schema, unreachable) is one
warning line: results.json is already on disk. The whole step is bounded: it runs beside the
main thread, which gives it STEP_FACTOR x $ACCEL_HISTORY_TIMEOUT and gives up at once on SIGTERM
or SIGINT (the run is then not stored; results.json and the reports are). The session's revision,
runner label, project, branch and policy go into results.json's session too, so an import of the
file later stores the same run with the same provenance."""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from accel_regress.results.history.location import HistoryError, describe, resolve

REVISION_ENV = ("GITHUB_SHA", "CI_COMMIT_SHA", "BUILDKITE_COMMIT", "GIT_COMMIT")
RUNNER_ENV = ("RUNNER_NAME", "CI_RUNNER_DESCRIPTION", "BUILDKITE_AGENT_NAME", "NODE_NAME")
# A pull request's own branch first (GitHub's GITHUB_REF_NAME is then "N/merge").
BRANCH_ENV = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BUILDKITE_BRANCH", "GIT_BRANCH",
              "BRANCH_NAME")
STEP_FACTOR = 2        # the session's history step as a whole: at most this many $ACCEL_HISTORY_TIMEOUTs


def _first_env(names) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


@dataclass
class SessionHistory:
    """This session's history: where it goes and how it went."""
    location: object = None                  # resolve(--history): a path or URL, None for none
    status: Optional[tuple] = None           # (the line the terminal shows, whether it is a warning)


_HISTORY = pytest.StashKey[SessionHistory]()


def pytest_configure(config):
    from accel_regress.results.history.store import timeout
    try:
        location = resolve(config.getoption("accel_history"), root=config.rootpath)
        if location is not None:
            timeout()
    except HistoryError as exc:
        raise pytest.UsageError(str(exc)) from None
    for name in ("history_project", "history_branch", "history_revision", "history_runner"):
        value = config.getoption(f"accel_{name}")
        if value is not None and (not value.strip() or any(ord(c) < 32 for c in value)):
            raise pytest.UsageError(f"--{name.replace('_', '-')} {value!r}: give a non-blank name on one line")
    config.stash[_HISTORY] = SessionHistory(location)


def _state(config) -> SessionHistory:
    return config.stash.get(_HISTORY, None) or SessionHistory()


@pytest.hookimpl(trylast=True)      # after recording made the results sink
def pytest_sessionstart(session):
    from accel_regress.plugin import recording
    config = session.config
    sink = recording.sink(config)
    if sink is None or _is_worker(config):
        return
    from accel_regress.results.history import provenance
    root = Path(config.rootpath)
    extra = {"revision": config.getoption("accel_history_revision") or _first_env(REVISION_ENV) or provenance.git_revision(root),
             "runner": config.getoption("accel_history_runner") or _first_env(RUNNER_ENV),
             "project": config.getoption("accel_history_project") or provenance.project_name(root),
             "branch": config.getoption("accel_history_branch") or _first_env(BRANCH_ENV) or provenance.git_branch(root),
             "policy": config.getoption("accel_gate_policy", None)}
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
        stored = history.ingest(data, source=str(Path(report_dir) / "results.json"), entry="session")
        key, new, n = stored[0]
        # A fault run is on its own page, but no evidence of flakiness or regression (issue 48: one
        # fault run made the page say "16 flaky, 4 open regressions" of families green when clean).
        page = dashboard.write(history, Path(report_dir) / "history.html",
                               show_faults=bool((data.get("session") or {}).get("fault")))
    finally:
        history.close()
    what = "stored" if new else "already stored"
    return f"history: run {key[:9]} {what} in {history.where} ({n} cases); dashboard {page}"


def _store(config, data, report_dir, state: SessionHistory) -> None:
    try:
        state.status = (store_run(config, data, report_dir), False)
    except HistoryError as exc:
        state.status = (f"history: not written ({exc}); results.json is written", True)
    except Exception as exc:      # never cost the session its results: one line, no traceback
        where = describe(state.location or "")
        state.status = (f"history: not written (history {where}: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:300]}); results.json is written", True)


def _bounded(config, data, report_dir, state: SessionHistory) -> None:
    """The history step beside the main thread: the main thread waits at most the step's bound, and
    a SIGTERM / SIGINT ends the wait at once (the step's thread is a daemon: the process exits
    without it; a server rolls its open transaction back, SQLite's journal does the same)."""
    import signal
    from accel_regress.results.history.store import timeout
    bound = STEP_FACTOR * timeout()
    done, stopped = threading.Event(), []
    step = threading.Thread(target=lambda: (_store(config, data, report_dir, state), done.set()),
                            name="accel-regress history", daemon=True)
    old = {}
    if threading.current_thread() is threading.main_thread():
        def on_signal(signum, _frame):
            stopped.append(signal.Signals(signum).name)
            done.set()
        for sig in (signal.SIGTERM, signal.SIGINT):
            old[sig] = signal.signal(sig, on_signal)
    try:
        step.start()
        done.wait(bound)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if stopped:
        state.status = (f"history: not written ({stopped[0]} during the history step); results.json is written", True)
    elif step.is_alive():
        state.status = (f"history: not written (history {describe(state.location)} did not answer within "
                        f"{bound:g} s, {STEP_FACTOR} x ${'ACCEL_HISTORY_TIMEOUT'}); results.json is written", True)


def pytest_accel_regress_session_finished(config, data, report_dir):
    state = _state(config)
    if state.location is None:
        return
    _bounded(config, data, report_dir, state)
    if state.status is None:
        return
    line, warn = state.status
    if warn and config.pluginmanager.get_plugin("terminalreporter") is None:
        print(f"accel-regress: {line}", file=sys.stderr)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    status = _state(config).status
    if status and status[0]:
        line, warn = status
        terminalreporter.write_line(("WARNING " if warn else "") + line, yellow=warn)
