"""Which installer builds a bisect environment faster: uv or pip, each with its own cache.

    python benchmarks/bench_bisect_env.py                                    # pytz 2022.6 (0.5 MB)
    python benchmarks/bench_bisect_env.py --package iree-base-compiler,iree-base-runtime --version 3.0.0

For each installer: a cold build (an empty cache of its own: the download counts) and two warm ones
(the cache filled by the cold build), into a fresh ``--target`` folder each time, the command
accel-regress bisect runs (hardware/results/bisect/envs.py: install_argv). Prints the times and
the pip / uv ratios. Noise: the warm repeats show it (the machine is shared).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from accel_regress.results.bisect import envs


def build(installer: str, specs: list[str], cache: Path, target: Path) -> float:
    env = dict(os.environ, UV_CACHE_DIR=str(cache / "uv"), PIP_CACHE_DIR=str(cache / "pip"))
    argv = envs.install_argv(installer, target, specs)
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env, timeout=1800)
    return time.perf_counter() - start


def _own_bytes(folder: Path) -> int:
    total = 0
    for p in folder.rglob("*"):
        st = p.lstat()
        if p.is_file() and not p.is_symlink() and st.st_nlink == 1:
            total += st.st_size
    return total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--package", default="pytz")
    p.add_argument("--version", default="2022.6")
    a = p.parse_args()
    specs = [f"{name}=={a.version}" for name in a.package.split(",")]
    if envs.find_uv() is None:
        print("uv is not installed: pip install uv")
        return 2
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for installer in ("uv", "pip"):
            cache = Path(tmp) / f"cache-{installer}"
            runs = [build(installer, specs, cache, Path(tmp) / f"{installer}-{i}") for i in range(3)]
            times[installer] = runs
            own = _own_bytes(Path(tmp) / f"{installer}-2") / 2**20
            print(f"{installer:>3}: cold {runs[0]:6.2f} s, warm {runs[1]:6.2f} s / {runs[2]:6.2f} s "
                  f"(a warm environment adds {own:.1f} MiB of disk: files not hard-linked to the cache)")
    cold = times["pip"][0] / times["uv"][0]
    warm = min(times["pip"][1:]) / min(times["uv"][1:])
    print(f"{' '.join(specs)}: pip / uv = {cold:.1f}x cold, {warm:.1f}x warm "
          f"(warm spread: uv {min(times['uv'][1:]):.2f}-{max(times['uv'][1:]):.2f} s, "
          f"pip {min(times['pip'][1:]):.2f}-{max(times['pip'][1:]):.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
