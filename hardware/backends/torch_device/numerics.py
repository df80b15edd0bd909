"""The torch settings that change a device's numbers, read and (when a case asks) set around a run.

Defaults are not written here: a run uses what the torch it finds gives a user of that device, and
records it. In torch 2.13.0 (git cf30153c) aten/src/ATen/Context.h:496-505 (the installed
torch/include/ATen/Context.h): float32_matmul_precision HIGHEST (HIGH when the environment sets
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE), allow_tf32_cudnn true, the fp16 and bf16 cuBLAS reductions
AllowReducedPrecisionWithSplitK; torch/backends/cuda/__init__.py:158-198 maps
``torch.backends.cuda.matmul.allow_tf32`` (= precision not HIGHEST) and the two
``allow_*_reduced_precision_reduction`` flags onto them. So a CUDA user gets f32 matmuls in IEEE f32,
f32 convolutions in TF32, and bf16/f16 GEMMs whose split-K partial sums may be rounded to bf16/f16.
On the CPU, ``torch.backends.mkldnn.enabled`` (default True) sends bf16/f16 GEMMs with
m*n*k > 16**3 to oneDNN on CPUs with AVX512BW/VL/DQ (pytorch/pytorch
aten/src/ATen/native/mkldnn/Matmul.cpp@66ed80ec, checksize and use_mkldnn_bf16_matmul), which
flushes subnormal inputs and results to zero (measured here: expectations/torch-cpu.toml).

A session asks for other settings with ``ACCEL_TORCH_NUMERICS=name=0,name=1`` (a case's parameters
are its family's configuration, which knows no device, so the settings are the session's); every
result records the settings it ran with (``versions()``: numerics.*), and they are put back after
each run.
"""
from __future__ import annotations

import contextlib
import os
from typing import Mapping, Optional

ENV = "ACCEL_TORCH_NUMERICS"

# name -> (object path under torch, attribute), read on every device type (they are process-wide):
# the CUDA ones change cuda matmuls and convolutions only, mkldnn.enabled the CPU's bf16/f16 GEMMs.
SETTINGS = {
    "cuda.matmul.allow_tf32": ("backends.cuda.matmul", "allow_tf32"),
    "cuda.matmul.allow_bf16_reduced_precision_reduction": ("backends.cuda.matmul",
                                                           "allow_bf16_reduced_precision_reduction"),
    "cuda.matmul.allow_fp16_reduced_precision_reduction": ("backends.cuda.matmul",
                                                           "allow_fp16_reduced_precision_reduction"),
    "cudnn.allow_tf32": ("backends.cudnn", "allow_tf32"),
    "mkldnn.enabled": ("backends.mkldnn", "enabled"),
}


def _owner(torch, path: str):
    obj = torch
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def parse(text: Optional[str]) -> dict[str, bool]:
    """``name=0,name=1`` -> {name: bool}; an unknown name or value is a ValueError naming it."""
    out: dict[str, bool] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if name not in SETTINGS or not sep or value not in ("0", "1", "true", "false"):
            raise ValueError(f"{ENV}: {item.strip()!r} is not name=0|1 with name one of {', '.join(SETTINGS)}")
        out[name] = value in ("1", "true")
    return out


def requested() -> dict[str, bool]:
    """The settings this session asks for (ACCEL_TORCH_NUMERICS); none: the torch's own defaults."""
    return parse(os.environ.get(ENV))


def current(torch) -> dict[str, str]:
    """Every setting as the session's runs have it (the torch found, then ACCEL_TORCH_NUMERICS), for
    the record."""
    out = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
    for name, (path, attr) in SETTINGS.items():
        try:
            out[name] = str(bool(getattr(_owner(torch, path), attr)))
        except Exception as exc:        # a torch without the setting: say so, never guess
            out[name] = f"unavailable ({type(exc).__name__})"
    out.update({name: f"{value} ({ENV})" for name, value in parse(os.environ.get(ENV)).items()})
    return out


@contextlib.contextmanager
def applied(torch, settings: Mapping[str, bool]):
    """Set ``settings`` for the duration of a run, then put back what was there."""
    saved = {}
    try:
        for name, value in settings.items():
            path, attr = SETTINGS[name]
            owner = _owner(torch, path)
            saved[name] = getattr(owner, attr)
            setattr(owner, attr, value)
        yield
    finally:
        for name, value in saved.items():
            path, attr = SETTINGS[name]
            setattr(_owner(torch, path), attr, value)
