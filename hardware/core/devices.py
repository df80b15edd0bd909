"""``--devices``: exclusive use of one device per pytest process, through a lock file per device.

Spec (the option may be given more than once)::

    --devices 0,1            every backend with a device_resource draws from devices 0 and 1
    --devices npu=0,1        only the pool named ``npu`` (a Backend.device_resource, or a backend id)
    --devices npu=0,1 --devices a2a3=4,5

A backend that sets ``device_resource = "npu"`` gets one id from its pool the first time it runs
in a pytest process (under xdist: each xdist worker), held until that process ends, so two
workers never share one NPU. Locks are ``fcntl.flock`` on ``<lock dir>/<resource>-<id>.lock``
(``--device-lock-dir``, default ``$TMPDIR/accel-regress-devices``): the kernel drops them when the
holder dies, so a killed session never leaves a device locked, and sessions on the same host
(two CI jobs) respect each other's locks too. With more processes than devices the extra ones
wait for a device to be released.

How a backend learns its device: the runner hands it over (accel_regress.core.runner.Context) as
the environment variable ``ACCEL_DEVICE_<RESOURCE>`` (resource upper-cased, ``-`` as ``_``; e.g.
``ACCEL_DEVICE_NPU=1``) and ``ACCEL_DEVICE`` set to the id, in the isolated worker's run and in the
pytest process that holds the lock. A backend reads it with ``devices.assigned(self.device_resource)``
(None without --devices: use the default device, e.g. pyxrt.device(0); empty: --devices locks
this pool and the process holds none of it yet, so it must touch none).
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

ALL = "*"


def env_name(resource: str) -> str:
    return "ACCEL_DEVICE_" + "".join(c if c.isalnum() else "_" for c in resource).upper()


def assigned(resource: Optional[str]) -> Optional[str]:
    """The device id this process was given for ``resource`` (None: no --devices, use the default;
    "": --devices locks this pool and none is held yet)."""
    if not resource:
        return None
    return os.environ.get(env_name(resource))


def parse(specs) -> dict[str, list[str]]:
    """['0,1', 'npu=2'] -> {'*': ['0','1'], 'npu': ['2']}; raises ValueError naming what is wrong."""
    pools: dict[str, list[str]] = {}
    for spec in specs or []:
        for part in str(spec).split(";"):
            part = part.strip()
            if not part:
                continue
            name, sep, ids = part.rpartition("=")
            key = name.strip() if sep else ALL
            if sep and not key:
                raise ValueError(f"--devices {spec!r}: empty name before '='")
            items = [i.strip() for i in ids.split(",") if i.strip()]
            if not items:
                raise ValueError(f"--devices {spec!r}: no device ids (expected e.g. 0,1 or npu=0,1)")
            bad = [i for i in items if not all(c.isalnum() or c in "-_.:" for c in i)]
            if bad:
                raise ValueError(f"--devices {spec!r}: bad device id(s) {', '.join(bad)}")
            if len(set(items)) != len(items):
                raise ValueError(f"--devices {spec!r}: a device id is listed twice")
            pools[key] = items
    return pools


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "accel-regress-devices"


class DeviceLocks:
    """The devices this process holds, one per resource, locked until ``release()`` or exit."""

    def __init__(self, pools: dict[str, list[str]], lock_dir: Optional[Path] = None,
                 poll_s: float = 0.5, on_wait: Optional[Callable[[str], None]] = None):
        self.pools = pools
        self.lock_dir = Path(lock_dir or default_lock_dir())
        self.poll_s = poll_s
        self.on_wait = on_wait
        self.held: dict[str, tuple[str, int]] = {}    # resource -> (device id, fd)

    def ids_for(self, resource: str, backend: str = "") -> Optional[list[str]]:
        for key in (resource, backend, ALL):
            if key and key in self.pools:
                return self.pools[key]
        return None

    def acquire(self, resource: Optional[str], backend: str = "") -> dict[str, str]:
        """The environment that tells the isolated run its device ({} when no pool applies)."""
        if not resource:
            return {}
        if resource not in self.held:
            ids = self.ids_for(resource, backend)
            if ids is None:
                return {}
            self.held[resource] = self._lock_one(resource, ids)
        device = self.held[resource][0]
        return {env_name(resource): device, "ACCEL_DEVICE": device}

    def _lock_one(self, resource: str, ids: list[str]) -> tuple[str, int]:
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        # Start at a different device per process so workers do not all queue on the first one.
        start = os.getpid() % len(ids)
        order = ids[start:] + ids[:start]
        waited = False
        while True:
            for device in order:
                path = self.lock_dir / f"{resource}-{device}.lock"
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())   # who holds it, for a human looking
                return device, fd
            if not waited and self.on_wait:
                self.on_wait(f"waiting for a free {resource} device among {', '.join(ids)} "
                             f"(all locked in {self.lock_dir})")
            waited = True
            time.sleep(self.poll_s)

    def release(self) -> None:
        for _device, fd in self.held.values():
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self.held.clear()
