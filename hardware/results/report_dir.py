"""The report folder belongs to one session at a time, and holds only that session's files.

When a session starts (hardware/results/record.py ``Sink``) it
1. locks the folder (``flock`` on ``.accel-regress.lock``, held until the session ends or its
   process dies): a second session given the same ``--report-dir`` is a usage error, never a
   results file with two sessions' cases in it;
2. removes what an earlier session wrote there (results, reports, matrices of devices this run may
   not have, heatmaps, junit.xml, expectations.json): a report never mixes two runs;
3. (the Sink) writes results.json as "in progress" before it opens results.jsonl: if the session
   is killed the gate finds a record that says it never finished, never the last run's record.
Files of other tools (trend.png from ``trend --out``, anything a user put there) stay.
"""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

LOCK = ".accel-regress.lock"
# What a session writes into its report folder (hardware/results/report, the expectations,
# recording and history plugins, pytest's junitxml at the default path the plugin gives it).
OWN_FILES = ("results.json", "results.jsonl", "summary.md", "index.html", "pr-comment.md", "matrix.csv",
             "junit.xml", "expectations.json", "history.html")
OWN_PATTERNS = (("", "matrix-*.csv"), ("heatmaps", "*.png"), ("arrays", "*.npy"), ("failures", "*"))


class Busy(RuntimeError):
    """Another live session holds the folder."""


def lock(folder: Path) -> int:
    """The folder's lock, taken without waiting; the descriptor holds it (close it to let go)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise Busy(f"{folder} is the report folder of another running session (pid {holder}); "
                       f"give this one its own --report-dir") from None
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def clear(folder: Path) -> None:
    """Remove the files an earlier session left (only those a session writes)."""
    for name in OWN_FILES:
        (folder / name).unlink(missing_ok=True)
    clear_own(folder, OWN_PATTERNS)


def clear_own(folder: Path, patterns) -> None:
    """Remove the files matching each (subfolder, pattern); a subfolder that is a planted link
    (removed) or another user's is left alone: never a deletion where a link points."""
    from accel_regress.core import own_folder
    for sub, pattern in patterns:
        if sub:
            if not (folder / sub).exists() and not (folder / sub).is_symlink():
                continue
            try:
                own_folder.own_subdir(folder, sub)
            except OSError:
                continue
        for old in (folder / sub).glob(pattern):
            if old.is_file() or old.is_symlink():
                old.unlink(missing_ok=True)
