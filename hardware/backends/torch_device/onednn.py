"""Which oneDNN kernel path torch-cpu's bf16 GEMMs take on this machine: the ISA oneDNN dispatches
to and the implementation of a bf16 matmul, as oneDNN itself reports them.

oneDNN picks its ISA at run time from the CPU (AVX2, AVX-512, AVX-512 BF16, AMX...), capped by
``ONEDNN_MAX_CPU_ISA`` (read once per process, before the first primitive: oneDNN
src/cpu/x64/cpu_isa_traits.cpp get_max_cpu_isa), so the same torch gives different numbers on
different runners: torch 2.13.0's AMX brg_matmul leaks NaN into a K tail that AVX-512 does not
(uxlfoundation/oneDNN#5717; expectations/torch-cpu.toml). ``ONEDNN_VERBOSE=1`` prints
``onednn_verbose,v1,info,cpu,isa:<name>`` and, per primitive run,
``...,primitive,exec,cpu,matmul,<impl>,...`` (``brg_matmul:avx512_core_amx``); a probe process
runs a bf16 GEMM of the suite's K-tail shape under it, with this session's torch numerics settings
and ONEDNN_MAX_CPU_ISA, once per boot (util/machine_memo).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Mapping, Optional

from accel_regress.util import machine_memo

ISA_ENV = "ONEDNN_MAX_CPU_ISA"
NOT_ONEDNN = "not oneDNN"

# 64x100 @ 100x256: over torch's oneDNN size threshold (m*n*k > 16**3) and K % 32 != 0, the
# shape of the K-tail case oneDNN#5717 shows in.
_PROBE = """
import json, sys, torch
settings = json.loads(sys.argv[1])
if "mkldnn.enabled" in settings:
    torch.backends.mkldnn.enabled = settings["mkldnn.enabled"]
a = torch.ones(64, 100, dtype=torch.bfloat16)
b = torch.ones(100, 256, dtype=torch.bfloat16)
torch.matmul(a, b)
x = torch.ones(1, 2, 8, 8)
torch.ops.aten.mkldnn_convolution(x, torch.ones(2, 2, 3, 3), None, [0, 0], [1, 1], [1, 1], 1)
"""


# oneDNN's primitive kind (its verbose "primitive,exec,cpu,<kind>"), not the suite's matmul family.
_MATMUL_RUN = ("primitive", "exec", "cpu", "matmul")


def parse(text: str) -> dict[str, str]:
    """The facts in a probe's output: onednn (version and commit), onednn-isa, onednn-bf16-matmul
    (the implementation that ran the bf16 GEMM, or 'not oneDNN' when torch kept it). The probe's
    only matmul is the bf16 GEMM (the convolution, run to make oneDNN print its ISA when the GEMM
    does not reach it, is a convolution primitive), so order does not matter: oneDNN's stdout is
    buffered apart from Python's."""
    out = {"onednn-bf16-matmul": f"{NOT_ONEDNN} (torch's own kernel)"}
    for line in text.splitlines():
        fields = line.strip().split(",")
        if not fields or fields[0] != "onednn_verbose":
            continue
        rest = fields[2:] if len(fields) > 2 and fields[1].startswith("v") else fields[1:]
        if rest[:1] == ["info"] and len(rest) >= 2:
            if rest[1].startswith("oneDNN "):
                out["onednn"] = rest[1][len("oneDNN "):].strip()
            elif rest[1] == "cpu" and len(rest) >= 3 and rest[2].startswith("isa:"):
                out["onednn-isa"] = ",".join(rest[2:])[len("isa:"):].strip()    # the name holds commas
        elif tuple(rest[:4]) == _MATMUL_RUN and len(rest) >= 5:
            out["onednn-bf16-matmul"] = rest[4]
    return out


def _probe(settings: Mapping[str, bool], cap: str) -> dict:
    env = {**os.environ, "ONEDNN_VERBOSE": "1"}
    if cap:
        env[ISA_ENV] = cap
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(dict(settings))], capture_output=True,
                              text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"onednn-isa": f"unknown (probe failed: {type(exc).__name__}: {exc})"}
    if proc.returncode != 0:
        tail = (proc.stderr or "").strip().splitlines()[-1:] or [""]
        return {"onednn-isa": f"unknown (probe exit {proc.returncode}: {tail[0][:200]})"}
    found = parse(proc.stdout)
    found.setdefault("onednn-isa", "unknown (oneDNN printed no isa line)")
    return found


def kernel_path(torch_version: str, settings: Mapping[str, bool], cap: Optional[str] = None) -> dict[str, str]:
    """The facts for this machine, this torch, this session's settings and ISA cap (``cap``: the
    backend's own, else the session's ONEDNN_MAX_CPU_ISA)."""
    cap = cap or os.environ.get(ISA_ENV, "")
    facts = machine_memo.memo("onednn", (torch_version, cap, json.dumps(dict(settings), sort_keys=True)),
                              lambda: _probe(settings, cap))
    return {**facts, "onednn-max-cpu-isa": cap or "default (the CPU's best)"}
