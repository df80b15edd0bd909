"""Every process a run starts ends with the run, also one that left the worker's process group
(``setsid``, a double-forked daemon).

Two mechanisms, the first that works here:

- a **cgroup** (v2) per worker, where the cgroup tree is writable: the worker puts itself in it
  before it runs anything, every descendant stays in it whatever session or group it makes, and
  ending the worker writes ``cgroup.kill`` (or SIGKILLs every pid listed) and removes the group;
- else a **sweep of descendants**: the worker and the fork server are child subreapers
  (``PR_SET_CHILD_SUBREAPER``), so an orphan is re-parented to them instead of init; after each run
  the worker kills whatever descendants its run left, and after a worker ends the fork server kills
  the orphans it inherited.

What could not be reaped (a process that outlived SIGKILL, a mechanism missing) is said in the
case's record or on stderr, never passed over.
"""
from __future__ import annotations

import ctypes
import errno
import os
import signal
import time
from pathlib import Path
from typing import Optional

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> Optional[str]:
    """Make this process the subreaper of its descendants; None, or why it could not."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return f"prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(ctypes.get_errno())}"
    except (OSError, AttributeError) as exc:
        return f"prctl is not available: {exc}"
    return None


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    out = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields after the last ')' are fixed
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out[int(entry.name)] = int(fields[1])
    return out


def descendants(pid: int, parents: Optional[dict[int, int]] = None) -> list[int]:
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie is not running)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def kill_all(pids: list[int], wait_s: float = 2.0) -> list[int]:
    """SIGKILL every pid (freezing nothing: SIGKILL cannot be caught), reap those that are our
    children; return the pids still running after ``wait_s``."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + wait_s
    left = list(pids)
    while left:
        for pid in left:
            _reap(pid)
        left = [p for p in left if alive(p)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    return left


def has_children() -> bool:
    """Whether this process has any child, running or not (one system call, no /proc scan)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def sweep_descendants(root: int, keep: frozenset = frozenset()) -> tuple[list[str], list[str]]:
    """Kill every descendant of ``root`` except the ``keep`` pids and theirs; returns
    (what was killed, what outlived it), each as 'PID COMMAND'."""
    if root == os.getpid() and not keep and not has_children():
        return [], []          # the usual case, without a scan of /proc (a subreaper has every orphan as a child)
    parents = _parents()
    kept = set(keep)
    for pid in keep:
        kept.update(descendants(pid, parents))
    victims = [p for p in descendants(root, parents) if p not in kept]
    if not victims:
        return [], []
    names = {p: command_of(p) for p in victims}
    left = kill_all(victims)
    return [f"{p} {names[p]}" for p in victims], [f"{p} {names[p]}" for p in left]


# --- cgroups ----------------------------------------------------------------------------------

def _cgroup2_mount() -> Optional[Path]:
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split(" ")[0] == "cgroup2":
                return Path(left.split(" ")[4])
    except OSError:
        pass
    return None


def cgroup_base() -> tuple[Optional[Path], str]:
    """Where this process may make worker cgroups (its own cgroup v2 folder), or None and why.
    ``ACCEL_ISOLATION_CGROUP=0`` turns cgroups off (the selftests use it to test the sweep)."""
    if os.environ.get("ACCEL_ISOLATION_CGROUP", "1") == "0":
        return None, "cgroups turned off by ACCEL_ISOLATION_CGROUP=0"
    mount = _cgroup2_mount()
    if mount is None:
        return None, "no cgroup v2 hierarchy is mounted"
    try:
        line = next(ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln.startswith("0::"))
    except (OSError, StopIteration):
        return None, "this process has no cgroup v2 membership"
    base = mount / line[3:].lstrip("/")
    if not os.access(base, os.W_OK) or not (base / "cgroup.procs").exists():
        return None, f"{base} is not writable"
    return base, f"cgroup v2 under {base}"


class Cgroup:
    """One worker's cgroup: every process the worker starts, in any session, is listed in it."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def make(cls, base: Path, name: str) -> tuple[Optional["Cgroup"], Optional[str]]:
        path = base / name
        try:
            path.mkdir()
            return cls(path), None
        except OSError as exc:
            return None, f"cannot make cgroup {path}: {exc.strerror or exc}"

    @staticmethod
    def join(path: str) -> Optional[str]:
        """Put the calling process in the cgroup at ``path`` (called by the forked worker itself)."""
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
            return None
        except OSError as exc:
            return f"could not join cgroup {path}: {exc.strerror or exc}"

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in (self.path / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self, wait_s: float = 3.0) -> list[str]:
        """End every process in the group and remove it; returns 'PID COMMAND' of any that outlived it."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            pass           # kernels before 5.14 have no cgroup.kill: SIGKILL each listed pid below
        deadline = time.monotonic() + wait_s
        while self.pids() and time.monotonic() < deadline:
            kill_all(self.pids(), 0.2)
        left = [f"{p} {command_of(p)}" for p in self.pids()]
        try:
            self.path.rmdir()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT,) and not left:
                left.append(f"(cgroup {self.path} not removed: {exc.strerror})")
        return left
