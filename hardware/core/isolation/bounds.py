"""What an isolated run may use, and how a worker's end is put into words.

- time: the case's bound (``--case-timeout`` or ``Backend.timeout(case)``), then ``stack_wait_s``
  for the hung worker to dump its Python stack before it is killed;
- memory: ``RLIMIT_AS`` on the worker (``--worker-memory``, default 80% of physical memory), so a
  blow-up ends as a MemoryError or a killed worker, a CRASH of that case, never the host's OOM
  killer picking the pytest process; core dumps are off (a crashing simulator must not fill the disk).
  A backend declares how its runs are bounded (``Backend.memory_bound``, one of MEMORY_BOUNDS): a
  GPU driver reserves tens of GiB of virtual addresses at start-up, which an address-space bound
  turns into a failed initialisation, so those runs lift the soft limit (the hard one stays) and
  are bounded by the device's allocator or the worker's cgroup instead.
"""
from __future__ import annotations

import math
import os
import re
import resource
import signal
from dataclasses import dataclass
from typing import Optional

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
MIN_WORKER_BYTES = 256 << 20
MAX_SECONDS = 1e6     # 11.6 days; 1e300 s overflows the timers and the poll() of the isolation


def seconds(text: str) -> float:
    """A bound in seconds as a user gives it (``--case-timeout``): positive, finite, at most MAX_SECONDS."""
    value = float(text)
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise ValueError(f"{text!r} is not a positive number of seconds (at most {MAX_SECONDS:g})")
    return value


def parse_size(text: str) -> Optional[int]:
    """'8G', '512M', '1073741824', 'none'/'0' (no bound) -> bytes or None."""
    t = str(text).strip().upper().removesuffix("B").removesuffix("I")
    if t in ("NONE", "0", "UNLIMITED"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)", t)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 8G, 512M, or none)")
    size = int(float(m.group(1)) * _UNITS[m.group(2)])
    if size < MIN_WORKER_BYTES:
        # A worker imports numpy and torch before any case: below this it can run nothing.
        raise ValueError(f"{text!r} is less than the {MIN_WORKER_BYTES >> 20} MiB a worker needs to start")
    return size


def physical_memory() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def default_memory() -> Optional[int]:
    total = physical_memory()
    return int(total * 0.8) if total else None


def gib(n: Optional[int]) -> str:
    return "unbounded" if n is None else f"{n / (1 << 30):.1f} GiB"


@dataclass(frozen=True)
class Bounds:
    memory_bytes: Optional[int] = None   # RLIMIT_AS of each worker; None: no bound
    stack_wait_s: float = 1.0            # how long a hung worker gets to write its stack
    tail_lines: int = 40                 # last lines of a run's output kept in the verdict
    reset_timeout_s: float = 60.0        # bound for Backend.reset() after a hang


def apply_in_worker(bounds: Bounds) -> None:
    """Called in a freshly forked worker, before it runs anything."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if bounds.memory_bytes is not None:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = bounds.memory_bytes if hard == resource.RLIM_INFINITY else min(bounds.memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


MEMORY_BOUNDS = ("address-space", "device", "cgroup", "none")


def apply_memory_bound(kind: str, memory_bytes: Optional[int], cgroup: Optional[str] = None) -> str:
    """Set the worker's host memory bound for the next run of a backend that declares ``kind``;
    returns the bound in words for the record. Only the soft RLIMIT_AS moves (the hard limit
    stays where ``apply_in_worker`` found it), so a warm worker can go from one kind to another."""
    if kind not in MEMORY_BOUNDS:
        raise ValueError(f"memory_bound {kind!r} is not one of {', '.join(MEMORY_BOUNDS)}")
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if kind == "address-space" and memory_bytes is not None:
        limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        return f"address space {gib(limit)}"
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    if kind == "address-space":
        return "address space unbounded (--worker-memory none)"
    if kind == "device":
        return "host address space open; device memory bounded by the device's allocator"
    if kind == "cgroup":
        return _cgroup_memory_max(cgroup, memory_bytes)
    return "none (the backend declares no memory bound)"


def _cgroup_memory_max(cgroup: Optional[str], memory_bytes: Optional[int]) -> str:
    if cgroup is None:
        return "host memory unbounded: the worker has no cgroup to bound"
    value = "max" if memory_bytes is None else str(memory_bytes)
    try:
        with open(os.path.join(cgroup, "memory.max"), "w") as f:
            f.write(value)
    except OSError as exc:
        return f"host memory unbounded: cannot write {cgroup}/memory.max ({exc.strerror or exc})"
    return f"cgroup memory.max {gib(memory_bytes)}"


def describe_status(status: Optional[int]) -> str:
    """A waitpid status in words: 'killed by SIGSEGV (signal 11: Segmentation fault)', 'exited with code 3'."""
    if status is None:
        return "ended (exit status unknown)"
    if os.WIFSIGNALED(status):
        num = os.WTERMSIG(status)
        try:
            name = signal.Signals(num).name
        except ValueError:
            name = f"signal {num}"
        return f"killed by {name} (signal {num}: {signal.strsignal(num) or '?'})"
    if os.WIFEXITED(status):
        return f"exited with code {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"


def status_detail(status: Optional[int]) -> dict:
    if status is None:
        return {}
    if os.WIFSIGNALED(status):
        num = os.WTERMSIG(status)
        try:
            return {"signal": signal.Signals(num).name, "signal_number": num}
        except ValueError:
            return {"signal_number": num}
    if os.WIFEXITED(status):
        return {"exit_code": os.WEXITSTATUS(status)}
    return {"wait_status": status}
