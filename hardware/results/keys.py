"""Where a case sits in a matrix: its row (the test key) and its column (the device).

The row is the pytest node id with the backend parameter taken out, so
``test_partition[npu-M64-...-C1]`` and ``test_partition[emu-M64-...-C1]`` share a row. The column
is the case's device: an explicit label, else the device generation its backend reported in its
versions (``npu1`` -> Phoenix), else the backend id. Which names are device generations is each
backend's to say (``Backend.device_generations``, ``Backend.device_ids``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional


def test_key(nodeid: str, backend: Optional[str]) -> str:
    """The node id without the backend parameter: the row of a test in the matrix."""
    if not backend or "[" not in nodeid or not nodeid.endswith("]"):
        return nodeid
    head, _, params = nodeid[:-1].partition("[")
    if params == backend:
        return head
    if params.startswith(backend + "-"):
        rest = params[len(backend) + 1:]
    elif params.endswith("-" + backend):
        rest = params[:-len(backend) - 1]
    elif f"-{backend}-" in params:
        rest = params.replace(f"-{backend}-", "-", 1)
    else:
        return nodeid
    return f"{head}[{rest}]"


@lru_cache(maxsize=1)
def _generations() -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
    """Every registered backend's device names: (needle, name) longest first, and id -> name."""
    from accel_regress.core import registry
    needles, ids = [], {}
    for reg in registry.registrations("backend").values():
        try:
            cls = reg.load()
        except Exception:    # a backend that cannot load names no devices (python -m accel_regress says why)
            continue
        needles += [(n.lower(), name) for n, name in getattr(cls, "device_generations", ())]
        ids.update({k.lower(): v for k, v in getattr(cls, "device_ids", {}).items()})
    # longer names first, so "Strix Halo" is not read as "Strix"
    return tuple(sorted(set(needles), key=lambda p: -len(p[0]))), ids


def known_generations() -> list[str]:
    """Every device generation a registered backend names, sorted."""
    needles, ids = _generations()
    return sorted({name for _, name in needles} | set(ids.values()))


def device_name(raw: str) -> Optional[str]:
    """A readable device generation from what a backend reports (``NPU Strix``, ``npu6`` ...)."""
    needles, ids = _generations()
    low = raw.lower()
    for needle, name in needles:
        if needle in low:
            return name
    for dev_id, name in ids.items():
        if low == dev_id or low.startswith(dev_id + " ") or low.endswith(" " + dev_id):
            return name
    return None


def device_of(case: dict, data: Optional[dict] = None) -> str:
    """The column of a case: its ``device`` if set, else ``backend/<device name>``, else backend."""
    if case.get("device"):
        return case["device"]
    backend = case.get("backend") or "-"
    sources = [case.get("versions") or {}]
    if data is not None:
        sources.append(((data.get("backends") or {}).get(backend) or {}).get("versions") or {})
    for versions in sources:
        if not isinstance(versions, dict):
            continue
        for key in ("device", "device_name", "board", "target"):
            value = versions.get(key)
            if isinstance(value, str) and value:
                name = device_name(value) or value
                return f"{backend}/{name}"
    return backend
