"""A package's released versions, from the index pip is configured with (``pip index versions``),
and the versions two or more packages released together between two endpoints."""
from __future__ import annotations

import re
import subprocess
import sys
from typing import Optional, Sequence

from packaging.version import InvalidVersion, Version

from accel_regress.results.bisect.envs import index_unreachable

_AVAILABLE = re.compile(r"^Available versions:\s*(.*)$", re.M)


class IndexLookupError(Exception):
    """The index could not be asked, or does not have what was asked for."""


def available(package: str, *, pre: bool = False, timeout_s: float = 180.0) -> list[str]:
    """Every version of ``package`` the configured index serves (pre-releases only with ``pre``)."""
    argv = [sys.executable, "-m", "pip", "index", "versions", package, "--disable-pip-version-check"]
    if pre:
        argv.append("--pre")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise IndexLookupError(f"`pip index versions {package}` did not answer: {exc}") from None
    found = _AVAILABLE.search(proc.stdout)
    if proc.returncode != 0 or not found:
        # pip ends with "No matching distribution found" either way: an index that did not answer
        # is not a package without versions (issue 47 defect 14).
        unreachable = index_unreachable(proc.stderr.splitlines() + proc.stdout.splitlines())
        if unreachable:
            raise IndexLookupError(f"`pip index versions {package}`: the package index could not be reached "
                                   f"({unreachable}); not a package without versions")
        said = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise IndexLookupError(f"`pip index versions {package}` found no versions: {said}")
    return [v.strip() for v in found.group(1).split(",") if v.strip()]


def _parse(v: str) -> Version:
    try:
        return Version(v)
    except InvalidVersion:
        raise IndexLookupError(f"{v!r} is not a PEP 440 version") from None


def _parsed(versions: Sequence[str]) -> dict[Version, str]:
    out = {}
    for v in versions:
        try:
            out.setdefault(Version(v), v)
        except InvalidVersion:      # pre-PEP 440 releases (pytz's 2013d): never a step
            continue
    return out


def between(per_package: dict[str, Sequence[str]], good: str, bad: str) -> list[str]:
    """The versions every package has, from ``good`` to ``bad`` inclusive, oldest first.

    Packages released in lockstep (iree-base-compiler and iree-base-runtime) are installed at the
    same version; a version one of them lacks is not a step."""
    g, b = _parse(good), _parse(bad)
    if not g < b:
        raise IndexLookupError(f"--good {good} must be older than --bad {bad}")
    common, names = None, {}
    for package, versions in per_package.items():
        parsed = _parsed(versions)
        for v, text in parsed.items():
            names.setdefault(v, text)
        for end, name in ((g, good), (b, bad)):
            if end not in parsed:
                raise IndexLookupError(f"{package} {name} is not on the index (it has {', '.join(versions[:12])}"
                                       f"{', ...' if len(versions) > 12 else ''})")
        keys = set(parsed)
        common = keys if common is None else common & keys
    return [names[v] for v in sorted(v for v in common if g <= v <= b)]


def oldest_common(per_package: dict[str, Sequence[str]]) -> Optional[str]:
    """The oldest version every package has (None when they share none)."""
    parsed = [_parsed(vs) for vs in per_package.values()]
    common = set.intersection(*(set(p) for p in parsed)) if parsed else set()
    return parsed[0][min(common)] if common else None


# A package's earlier name on the index, where a project renamed it: the older releases are there
# only under that name. IREE published its Python packages as iree-compiler / iree-runtime (dated
# versions such as 20241104.1068) before iree-base-compiler / iree-base-runtime (2.9.0 onwards).
OLDER_NAMES = {"iree-base-compiler": "iree-compiler", "iree-base-runtime": "iree-runtime"}


def older_lineage(packages: Sequence[str]) -> Optional[list[str]]:
    """The same packages under their older names, or None when none of them was renamed."""
    if not any(p in OLDER_NAMES for p in packages):
        return None
    return [OLDER_NAMES.get(p, p) for p in packages]


def newest_common(per_package: dict[str, Sequence[str]]) -> Optional[str]:
    """The newest version every package has (None when they share none)."""
    parsed = [_parsed(vs) for vs in per_package.values()]
    common = set.intersection(*(set(p) for p in parsed)) if parsed else set()
    return parsed[0][max(common)] if common else None
