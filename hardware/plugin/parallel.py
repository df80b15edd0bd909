"""Under pytest-xdist: each worker's thread pools sized to its share of the CPUs, and each
worker's isolation closed as soon as its session ends.

numpy's OpenBLAS and torch's OpenMP size their pools to every CPU of the machine, and an idle
pool thread spins before it sleeps. With ``-n N`` workers on N cores, each worker (and the
isolation server it starts) would run a pool as wide as the machine, and one worker's spinning
threads take the cores the others compute on. So the controller gives its workers
``cpus // N`` threads each through the variables those libraries read when they load; the
workers and their isolation servers inherit them. A variable the user set is left alone.

A worker process lives on after its session until the controller has written the reports and
ends it; its fork server, left to the process's exit, would then be stopped only after the
reports, one worker after another. A worker runs one session, so it stops its fork server when
that session ends, while the controller writes.
"""
from __future__ import annotations

import os

import pytest

from accel_regress.plugin import engagement, isolation

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_worker(workers: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, workers))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """Called in the controller just before it starts the workers (which collect; the controller
    does not): so only where the session is plainly the plugin's."""
    if not engagement.explicit(config):
        return
    threads = str(threads_per_worker(len(specs)))
    added = [var for var in THREAD_VARIABLES if var not in os.environ]
    for var in added:
        os.environ[var] = threads

    def restore():
        for var in added:
            os.environ.pop(var, None)
    config.add_cleanup(restore)


def pytest_unconfigure(config):
    if isolation.is_worker(config):
        isolation._close_isolations()
