"""``accel-regress cache info``: every cache of the suite, where it is, what it holds and its size;
``accel-regress cache key``: a CI cache key from the toolchain versions the caches depend on.

All of them live under one root (``$ACCEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/accel-regress``,
else ``~/.cache/accel-regress``: hardware/util/derived_cache.py), so a CI job keeps them between
jobs by restoring that one folder (docs/howto/ci-caches.md). A cache's own
variable (``$ACCEL_IREE_CACHE``, ``$ACCEL_GOLDEN_CACHE`` ...) still moves that one cache alone.

``portable`` says whether a restored copy from another machine or clone is used as it is: build
outputs are keyed by what decides them (compiler version, flags, program text; sources and clang
version), golden entries are verified against their signature (the key file must be the one they
were written with; it is never inside the root, so a restored cache cannot bring its own),
virtual environments hold absolute paths and are machine-local.
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from accel_regress.util.derived_cache import CACHE_ROOT_ENV, cache_root, user_cache


@dataclass(frozen=True)
class CacheSpec:
    name: str
    env: str                       # the variable that moves this cache alone
    what: str
    portable: str                  # "yes", "verified" or "no", with why in docs/howto/ci-caches.md
    where: Callable[[], Path]


def _iree() -> Path:
    from accel_regress.toolchains.iree import compiler
    return compiler.cache_root()


def _qemu_rvv() -> Path:
    from accel_regress.backends.qemu_rvv import build
    return build.link_cache()


def _golden() -> Path:
    from accel_regress.golden import store
    return store.root()


def _mesa() -> Path:
    from accel_regress.backends.iree_vulkan import shader_cache
    return shader_cache.folder()


def _onnx_corpus() -> Path:
    from accel_regress.families.onnx_node import corpus
    return corpus.root()


def _env_or(env: str, name: str) -> Callable[[], Path]:
    return lambda: Path(os.environ[env]) if os.environ.get(env) else user_cache(name)


CACHES = (
    CacheSpec("iree", "ACCEL_IREE_CACHE", "IREE modules, keyed by compiler version, flags and program text", "yes", _iree),
    CacheSpec("qemu-rvv", "ACCEL_IREE_CACHE", "qemu-rvv harness objects and linked executables", "yes", _qemu_rvv),
    CacheSpec("golden", "ACCEL_GOLDEN_CACHE", "golden store: inputs, references, error models (signed)",
              "verified", _golden),
    CacheSpec("onnx-corpus", "ACCEL_ONNX_CORPUS_CACHE", "ONNX's node cases as the installed onnx generates them, "
              "keyed by onnx, numpy and seed (signed)", "verified", _onnx_corpus),
    CacheSpec("rvv-scan", "ACCEL_RVV_SCAN_CACHE", "RVV codegen scans of compiled dispatches", "yes",
              _env_or("ACCEL_RVV_SCAN_CACHE", "rvv-scan")),
    CacheSpec("heatmaps", "ACCEL_HEATMAP_CACHE", "report heatmap PNGs", "yes", _env_or("ACCEL_HEATMAP_CACHE", "heatmaps")),
    CacheSpec("mesa-shader-cache", "MESA_SHADER_CACHE_DIR", "the Vulkan driver's compiled pipelines (Mesa: lavapipe), "
              "for iree-vulkan's runs", "yes", _mesa),
    CacheSpec("iree-amd-aie", "ACCEL_IREE_AMD_AIE_CACHE", "iree-amd-aie compiles", "yes",
              lambda: Path(os.environ["ACCEL_IREE_AMD_AIE_CACHE"]) if os.environ.get("ACCEL_IREE_AMD_AIE_CACHE")
              else _iree().parent / "iree-amd-aie"),
    CacheSpec("bisect-envs", "ACCEL_BISECT_ENVS", "bisect's virtual environments (absolute paths inside)", "no",
              _env_or("ACCEL_BISECT_ENVS", "bisect-envs")),
    CacheSpec("bisect-runs", "ACCEL_BISECT_RUNS", "bisect journals", "yes", _env_or("ACCEL_BISECT_RUNS", "bisect-runs")),
)


def usage(path: Path) -> tuple[int, int]:
    """(bytes, files) under ``path``, never following a link; (0, 0) when it is absent."""
    total = files = 0
    stack = [path]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(Path(entry.path))
                    elif stat.S_ISREG(st.st_mode):
                        total += st.st_size
                        files += 1
        except OSError:
            continue
    return total, files


def info() -> dict:
    from accel_regress.golden import store
    root = cache_root()
    rows = []
    for spec in CACHES:
        where = spec.where()
        size, files = usage(where)
        rows.append({**{k: v for k, v in asdict(spec).items() if k != "where"}, "path": str(where),
                     "in_root": _inside(where, root), "bytes": size, "files": files})
    key = store.signing_key_path()
    return {"root": str(root), "root_from": f"${CACHE_ROOT_ENV}" if os.environ.get(CACHE_ROOT_ENV) else "default",
            "caches": rows, "bytes": sum(r["bytes"] for r in rows if r["in_root"]),
            "golden_key_file": {"path": str(key), "exists": key.is_file(), "in_root": _inside(key, root)}}


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
        return True
    except ValueError:
        return False


def human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def print_info(doc: dict) -> None:
    print(f"cache root: {doc['root']} ({doc['root_from']}); {human(doc['bytes'])} under it")
    rows = doc["caches"]
    w = max(len(r["name"]) for r in rows)
    print(f"{'cache':<{w}}  {'size':>10}  {'files':>7}  {'portable':<8}  path")
    for r in rows:
        where = r["path"] + ("" if r["in_root"] else f"  (outside the root: ${r['env']})")
        print(f"{r['name']:<{w}}  {human(r['bytes']):>10}  {r['files']:>7}  {r['portable']:<8}  {where}")
        print(f"{'':<{w}}  {r['what']}")
    key = doc["golden_key_file"]
    print(f"golden signing key: {key['path']} ({'present' if key['exists'] else 'not yet made'}; outside the root by "
          "design: a restored cache cannot bring its own key. Share it as a CI secret through "
          "$ACCEL_GOLDEN_CACHE_KEY_FILE to have restored golden entries verified, not recomputed)")


def toolchains() -> dict[str, str]:
    """The versions that decide what the caches hold: a CI cache saved under another set of them is
    dead weight (every entry's own key would miss), so the CI key holds them."""
    import platform
    from importlib import metadata
    from accel_regress.toolchains.iree import compiler
    from accel_regress.backends.qemu_rvv import build
    from accel_regress.backends.qemu_rvv import QEMU
    from accel_regress.toolchains.iree import host_target
    out = {"iree-compile": compiler.compiler_version(), "clang": build.clang_version(), "qemu": build.tool_version(QEMU),
           "python": platform.python_version()}
    # Modules built for `host` are for this CPU: a root saved on another CPU holds none of ours.
    tool = compiler.tool_path()
    out["host-target"] = host_target.identity(tool, compiler.compiler_version()) if tool else "no iree-compile"
    for dist in ("numpy", "ml_dtypes", "torch", "iree-base-runtime"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


def cache_key() -> str:
    import hashlib
    return hashlib.sha256(json.dumps(toolchains(), sort_keys=True).encode()).hexdigest()[:16]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="accel-regress cache", description="The suite's caches: where each is, what it holds and its size (info); a CI cache key "
                                     "from the toolchain versions they depend on (key).")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("info", help="where every cache is, what it holds and its size")
    show.add_argument("--json", action="store_true", help="print the same as JSON")
    key = sub.add_parser("key", help="a CI cache key: a digest of the toolchain versions the caches depend on")
    key.add_argument("--verbose", action="store_true", help="print the versions it digests too (on stderr)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "key":
        if args.verbose:
            for name, version in toolchains().items():
                print(f"{name}: {version}", file=sys.stderr)
        print(cache_key())
        return 0
    doc = info()
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        print_info(doc)
    return 0
