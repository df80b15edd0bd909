"""FireSim's results folder: ``<deploy>/results-workload/<YYYY-MM-DD--HH-MM-SS>-<benchmark_name>/<job>/``.

The timestamp is the manager's launch time, ``strftime("%Y-%m-%d--%H-%M-%S", gmtime())``
(deploy/runtools/runtime_config.py:1120), the folder name is built in workload.py:168-170 and the
job folder in firesim_topology_elements.py:401-408; the listed simulation outputs (``uartlog``, and
``metasim_stderr.out`` in metasimulation) are copied into the job folder when the simulation ends
(copy_back_job_results_from_run, firesim_topology_elements.py:460, 553-566).
"""
from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}--\d{2}-\d{2}-\d{2})-(.+)$")


class ResultsError(Exception):
    """The results folder or a file in it is missing or unreadable; the message names it."""


def launch_time(folder_name: str) -> Optional[float]:
    m = STAMP.match(folder_name)
    if not m:
        return None
    return float(calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d--%H-%M-%S")))


def newest_folder(deploy_dir: Path, benchmark_name: str, not_before: float = 0.0) -> Path:
    """The newest ``results-workload/<stamp>-<benchmark_name>`` launched at or after ``not_before``."""
    root = Path(deploy_dir) / "results-workload"
    if not root.is_dir():
        raise ResultsError(f"{root}: no results-workload folder (firesim runworkload never started a run)")
    best: tuple[float, str, Optional[Path]] = (-1.0, "", None)
    for child in root.iterdir():
        m = STAMP.match(child.name)
        if not m or m.group(2) != benchmark_name or not child.is_dir():
            continue
        stamp = launch_time(child.name)
        # the stamp has whole seconds: allow the second the run started in
        if stamp + 1 < not_before:
            continue
        if (stamp, child.name) > best[:2]:
            best = (stamp, child.name, child)
    if best[2] is None:
        raise ResultsError(f"{root}: no results folder <YYYY-MM-DD--HH-MM-SS>-{benchmark_name} from this run")
    return best[2]


@dataclass
class JobLogs:
    folder: Path
    uartlog: Path
    stderr: Optional[Path]      # metasim_stderr.out when present
    heartbeat: Optional[Path] = None    # heartbeat.csv when present


def job_logs(folder: Path, job: str) -> JobLogs:
    job_dir = folder / job
    if not job_dir.is_dir():
        present = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        raise ResultsError(f"{folder}: no job folder {job!r} (present: {', '.join(present) or 'nothing'})")
    uartlog = job_dir / "uartlog"
    if not uartlog.is_file():
        present = sorted(p.name for p in job_dir.iterdir())
        raise ResultsError(f"{job_dir}: no uartlog (present: {', '.join(present) or 'nothing'}); FireSim "
                           f"copies the uartlog back only when the simulation ends")
    stderr, beat = job_dir / "metasim_stderr.out", job_dir / "heartbeat.csv"
    return JobLogs(folder, uartlog, stderr if stderr.is_file() else None, beat if beat.is_file() else None)
