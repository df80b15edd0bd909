"""The Vulkan driver's on-disk shader cache, kept under the suite's one cache root.

Mesa's drivers (lavapipe, the default run's Vulkan device) compile every pipeline an
``iree-run-module`` creates and keep the result in a disk cache, by default
``$XDG_CACHE_HOME/mesa_shader_cache``: outside ``$ACCEL_CACHE_DIR``, so a CI job that restores the
root still compiled every pipeline again (the default run's iree-vulkan cases: 38-39 s with the
shader cache warm, 51-53 s with it empty, on 2 cores). The children this backend starts get
``MESA_SHADER_CACHE_DIR=<cache root>/mesa-shader-cache`` (Mesa's variable, docs/envvars.rst),
unless the user set it (or its older name ``MESA_GLSL_CACHE_DIR``) themselves. Mesa keys its
entries by the driver's build and the shader, so a copy restored from another machine is safe: a
different Mesa misses. Other drivers ignore the variable.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from accel_regress.core import own_folder
from accel_regress.core import build_seal
from accel_regress.util.derived_cache import user_cache

ENV = "MESA_SHADER_CACHE_DIR"
USER_SET = (ENV, "MESA_GLSL_CACHE_DIR")


def folder() -> Path:
    return Path(os.environ[ENV]) if os.environ.get(ENV) else user_cache("mesa-shader-cache")


def child_env() -> Optional[dict]:
    """The environment of a Vulkan child: None (inherit) when the user chose the cache's place."""
    if any(os.environ.get(name) for name in USER_SET):
        return None
    path = folder()
    try:    # Mesa writes through a link planted there: only a folder of this user's (issue 47 S2)
        own_folder.own_subdir(path.parent, path.name)
    except OSError as exc:
        build_seal.note_once(f"Vulkan shader cache {path} is not used ({exc.strerror or exc})")
        return None         # a cache that cannot be written costs the run the compiles, never an error
    return {**os.environ, ENV: str(path)}
