"""One environment per toolchain version, built once and kept in a bounded cache.

An environment holds only the toolchain's own packages, installed with ``--no-deps --target``
into ``<entry>/site``: a step runs this interpreter with that folder first on ``PYTHONPATH``, so
the toolchain version under test shadows the installed one while numpy, torch and accel-regress
stay the running environment's (a toolchain requirement they do not meet is noted, and the step
then shows it as a verdict of its own). ``uv pip install`` builds it when uv is here (from its
cache it hard-links the files: 0.3 s and no extra disk for a 300 MB IREE pair,
benchmarks/bench_bisect_env.py), else ``pip install`` (pip's cache saves the download only).
Both read their usual caches under the user cache folder, shared by every bisect.

The cache (``$ACCEL_BISECT_ENVS``, else ``~/.cache/accel-regress/bisect-envs``) is bounded: after
each build the least recently used entries go until the rest fit ``$ACCEL_BISECT_ENV_BYTES``
(default 8 GiB). Two bisects at once: building and evicting happen under one exclusive
``flock`` on ``<cache>/.lock`` (builds run one at a time; a half-built entry lives under a
temporary name and is renamed into place, and one left by a killed builder is removed by the next
holder of the lock); an entry in use holds a shared ``flock`` on its ``.use`` file, and eviction
skips entries whose lock it cannot take.
"""
from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Optional

from packaging.requirements import InvalidRequirement, Requirement

from accel_regress.util.atomic import write_atomic
from accel_regress.util.derived_cache import user_cache

DEFAULT_BYTES = 8 << 30
INSTALLERS = ("auto", "uv", "pip")


class BuildError(Exception):
    """The environment could not be built (no such wheel for this Python, the index refused...)."""


@dataclass
class Env:
    key: str
    dir: Path
    pins: dict
    cached: bool
    build_s: float = 0.0
    installer: str = ""
    notes: list = field(default_factory=list)

    @property
    def site(self) -> Path:
        return self.dir / "site"

    @property
    def python_path(self) -> list[Path]:
        return [self.site]

    @property
    def bin_path(self) -> list[Path]:
        return [p for p in (self.site / "bin",) if p.is_dir()]


def find_uv() -> Optional[str]:
    try:
        from uv import find_uv_bin    # the `uv` wheel ships its binary
        return find_uv_bin()
    except Exception:
        return shutil.which("uv")


# What pip (pip/_internal/network, urllib3's retries) and uv (reqwest) say when no index answers;
# pip then ends with "No matching distribution found", which reads as a version that does not exist.
_UNREACHABLE = ("NewConnectionError", "Failed to establish a new connection", "Max retries exceeded",
                "Temporary failure in name resolution", "Name or service not known", "Network is unreachable",
                "Connection refused", "ConnectTimeoutError", "ProxyError", "SSLError", "dns error",
                "error sending request", "Failed to fetch")


def index_unreachable(lines: list[str]) -> Optional[str]:
    """The installer's line saying the package index could not be reached, or None."""
    found = next((ln.strip() for ln in lines if any(m in ln for m in _UNREACHABLE)), None)
    return found[:200] if found else None


def install_argv(installer: str, site: Path, specs: list[str]) -> list[str]:
    if installer == "uv":
        uv = find_uv()
        if uv is None:
            raise BuildError("uv is not installed (pip install uv), use --installer pip")
        return [uv, "pip", "install", "--quiet", "--no-deps", "--python", sys.executable,
                "--target", str(site), *specs]
    return [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
            "--no-warn-script-location", "--target", str(site), *specs]


def resolve_installer(installer: str) -> str:
    if installer not in INSTALLERS:
        raise ValueError(f"installer {installer!r} is not one of {', '.join(INSTALLERS)}")
    if installer == "auto":
        return "uv" if find_uv() else "pip"
    return installer


def unmet_requirements(site: Path) -> list[str]:
    """Requirements of the packages in ``site`` that neither ``site`` nor the running environment meets."""
    here = {d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions(path=[str(site)])}
    notes = []
    for dist in importlib.metadata.distributions(path=[str(site)]):
        for text in dist.requires or ():
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = req.name.lower().replace("_", "-")
            if name in here:
                continue
            try:
                have = importlib.metadata.version(req.name)
            except importlib.metadata.PackageNotFoundError:
                notes.append(f"{dist.metadata['Name']} needs {text}: not installed here")
                continue
            if req.specifier and not req.specifier.contains(have, prereleases=True):
                notes.append(f"{dist.metadata['Name']} needs {text}: {req.name} {have} is installed")
    return notes


def disk_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (each inode once; symlinks not followed)."""
    total, seen = 0, set()
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512 if st.st_blocks else st.st_size
    return total


def _flock(path: Path, mode: int):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


class EnvCache:
    def __init__(self, root: Optional[Path] = None, max_bytes: Optional[int] = None, installer: str = "auto",
                 log=None):
        env_root = os.environ.get("ACCEL_BISECT_ENVS")
        self.root = Path(root or env_root or user_cache("bisect-envs"))
        if max_bytes is None:
            max_bytes = int(os.environ.get("ACCEL_BISECT_ENV_BYTES", DEFAULT_BYTES))
        self.max_bytes = max_bytes
        self.installer = resolve_installer(installer)
        self.log = log or (lambda msg: None)

    @staticmethod
    def key(pins: Mapping[str, str]) -> str:
        tag = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}"
        text = tag + "\n" + "\n".join(f"{p}=={v}" for p, v in sorted(pins.items()))
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        fd = _flock(self.root / ".lock", fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _entries(self) -> list[Path]:
        return [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]

    @staticmethod
    def _read(entry: Path) -> Optional[dict]:
        try:
            doc = json.loads((entry / "env.json").read_text())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) and (entry / "site").is_dir() else None

    def _sweep(self) -> None:
        """Remove what a killed builder or evictor left (only the lock holder builds or evicts)."""
        for p in self.root.iterdir():
            if p.is_dir() and (p.name.startswith(".tmp-") or p.name.startswith(".trash-")):
                shutil.rmtree(p, ignore_errors=True)

    def _build(self, pins: Mapping[str, str], entry: Path) -> dict:
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{entry.name}-", dir=self.root))
        specs = [f"{p}=={v}" for p, v in pins.items()]
        argv = install_argv(self.installer, tmp / "site", specs)
        start = time.perf_counter()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise BuildError(f"{self.installer} install {' '.join(specs)}: {exc}") from None
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            said = [ln for ln in (proc.stderr or proc.stdout).strip().splitlines() if ln.strip()]
            unreachable = index_unreachable(said)
            if unreachable:
                raise BuildError(f"{self.installer} install {' '.join(specs)}: the package index could not be "
                                 f"reached ({unreachable}); not a missing version")
            none = any("(from versions: none)" in ln for ln in said)
            raise BuildError(f"{self.installer} install {' '.join(specs)} failed (exit {proc.returncode}): "
                             + " | ".join(said[-3:])
                             + ("; the index offered no version at all: is it reachable?" if none else ""))
        doc = {"pins": dict(pins), "installer": self.installer, "build_s": round(seconds, 3),
               "argv": argv, "python": sys.version.split()[0], "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "notes": unmet_requirements(tmp / "site")}
        write_atomic(tmp / "env.json", json.dumps(doc, indent=1) + "\n")
        os.rename(tmp, entry)
        return doc

    @contextmanager
    def use(self, pins: Mapping[str, str]) -> Iterator[Env]:
        """The environment for ``pins`` (built unless cached), held against eviction while in use."""
        key = self.key(pins)
        entry = self.root / key
        with self._locked():
            self._sweep()
            doc = self._read(entry)
            cached = doc is not None
            if not cached:
                if entry.exists():                  # a damaged entry: never trusted
                    shutil.rmtree(entry, ignore_errors=True)
                self.log(f"building the environment {', '.join(f'{p}=={v}' for p, v in pins.items())} with {self.installer}")
                doc = self._build(pins, entry)
            use_fd = _flock(entry / ".use", fcntl.LOCK_SH)
            os.utime(entry / ".use")                 # recency for the LRU
            self._evict(keep=entry)
        try:
            yield Env(key, entry, dict(pins), cached, 0.0 if cached else doc["build_s"], doc["installer"],
                      list(doc.get("notes", ())))
        finally:
            fcntl.flock(use_fd, fcntl.LOCK_UN)
            os.close(use_fd)

    def _evict(self, keep: Path) -> list[Path]:
        """Least recently used entries out until the cache fits (entries in use stay)."""
        sized = []
        for e in self._entries():
            try:
                used = (e / ".use").stat().st_mtime
            except OSError:
                used = 0.0
            sized.append((used, e, disk_bytes(e)))
        total = sum(s for _, _, s in sized)
        gone = []
        for _used, e, size in sorted(sized, key=lambda t: t[0]):
            if total <= self.max_bytes:
                break
            if e == keep:
                continue
            try:
                fd = _flock(e / ".use", fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue                              # another bisect is running a step in it
            try:
                trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=self.root))
                os.rename(e, trash / e.name)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
            shutil.rmtree(trash, ignore_errors=True)
            total -= size
            gone.append(e)
            self.log(f"environment cache over {self.max_bytes >> 20} MiB: removed {e.name} (least recently used)")
        return gone
