"""The host CPU is part of the device (issue 46): torch-cpu and iree-cpu record the kernel path they
ran (oneDNN's ISA and bf16 matmul implementation; the CPU IREE resolves ``host`` to), expectations
can require such a fact, and modules compiled for ``host`` are keyed by the resolved CPU.

The oneDNN output parsed here is oneDNN's own (tests/selftest/fixtures/real/onednn/README.md): this
machine's probe, and public excerpts of AMX runs (no machine here has AMX). Where the CPU has AMX,
the oneDNN#5717 cases run twice, with oneDNN's default ISA (XFAIL, declared) and capped below AMX
(PASS); elsewhere that test says why it skips.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.backends.torch_device import onednn
from accel_regress.results.expectations import load_file
from accel_regress.results.version_range import Conditions, RangeError
from accel_regress.toolchains.iree import compiler, host_target
from accel_regress.util import host_cpu

REPO = Path(__file__).resolve().parents[4]
ONEDNN = REPO / "tests" / "selftest" / "fixtures" / "real" / "onednn"
K_TAIL = "K100 and specials and P4 and not test_forward_shape"


def test_cpuinfo_gives_the_model_and_the_features_that_pick_kernels():
    text = Path("/proc/cpuinfo").read_text()
    cpu = host_cpu.parse(text, "x86_64")
    flags = next(line for line in text.splitlines() if line.startswith("flags")).split(":", 1)[1].split()
    assert cpu.flags == frozenset(flags) and cpu.model
    assert set(cpu.notable) <= set(flags) and ("avx2" in flags) == ("avx2" in cpu.notable)
    other = host_cpu.parse(text.replace(" avx2", " avx2 amx_bf16 amx_tile"), "x86_64")
    assert other.fingerprint() != cpu.fingerprint() and "amx_bf16" in other.facts()["cpu-features"]


def test_onednn_probe_output_names_the_isa_and_the_matmul_kernel():
    here = onednn.parse((ONEDNN / "probe-avx2-torch2.13.0.txt").read_text())
    assert here == {"onednn": "v3.12.0 (commit 80afa71049cd69a3df32adcccb623b12cd7baa22)",
                    "onednn-isa": "Intel AVX2", "onednn-bf16-matmul": "not oneDNN (torch's own kernel)"}
    assert onednn.parse((ONEDNN / "probe-sse41-cap-torch2.13.0.txt").read_text())["onednn-isa"] == "Intel SSE4.1"
    amx = onednn.parse((ONEDNN / "amx-public-excerpts.txt").read_text())
    assert amx["onednn-bf16-matmul"] == "brg_matmul:avx10_1_512_amx"
    assert "Intel AMX with bfloat16" in amx["onednn-isa"] and amx["onednn"].startswith("v3.2.0")


def test_torch_cpu_records_its_kernel_path_as_its_device():
    import torch
    from accel_regress.backends.torch_device import TorchCpuBackend
    versions = TorchCpuBackend().versions()
    probe = onednn.parse(subprocess.run([sys.executable, "-c", onednn._PROBE, "{}"], capture_output=True, text=True,
                                        env={**os.environ, "ONEDNN_VERBOSE": "1"}, timeout=300).stdout)
    assert versions["onednn-isa"] == probe["onednn-isa"] and versions["onednn-bf16-matmul"] == probe["onednn-bf16-matmul"]
    number, _, commit = versions["onednn"].partition(" (commit ")
    assert f"MKL-DNN {number} (Git Hash {commit.rstrip(')')})" in torch.__config__.show()    # the oneDNN torch reports
    assert probe["onednn-isa"] in versions["device"] and versions["cpu"] in versions["device"]


def test_a_fact_condition_holds_only_where_the_fact_was_recorded_and_matches():
    c = Conditions.parse(None, None, {"onednn-bf16-matmul": "*amx*"})
    assert c.check({"onednn-bf16-matmul": "brg_matmul:avx10_1_512_amx"})[0]
    assert c.check({"onednn-bf16-matmul": "brg_matmul:avx512_core_amx"})[0]
    holds, why = c.check({"onednn-bf16-matmul": "brg_matmul:avx512_core_bf16"})
    assert not holds and "does not match" in why
    assert c.check({}) == (False, "onednn-bf16-matmul not recorded")
    assert not c.on_device({"onednn-bf16-matmul": "not oneDNN (torch's own kernel)"})    # elsewhere: not stale
    with pytest.raises(RangeError, match="facts"):
        Conditions.parse(None, None, {"onednn-bf16-matmul": 1})


def test_the_onednn_5717_entry_is_conditioned_on_the_amx_kernel():
    entries, _ = load_file(REPO / "expectations" / "torch-cpu.toml", ["torch-cpu"])
    entry = next(e for e in entries if "5717" in e.issue)
    key = "tests/test_gemm_partition_n.py::test_partition[M64-K100-N256-m16-k64-n64-c4-bT-cF-P4-bf16-C2-specials]"
    assert entry.glob.match(key) and entry.conditions.facts == {"onednn-bf16-matmul": "*amx*"}
    assert not entry.glob.match(key.replace("K100", "K512"))
    assert "--hw torch-cpu,torch-cpu-avx512-core-bf16" in entry.reason     # the rerun line that shows it passes below AMX


def test_host_modules_are_keyed_by_the_cpu_iree_resolves_host_to(monkeypatch):
    from accel_regress.backends.iree_cpu import HOST_FLAGS
    if compiler.availability():
        pytest.skip(compiler.availability())
    tool, version = compiler.tool_path(), compiler.compiler_version()
    target = host_target.resolved(tool, version)
    assert target.get("cpu") and "+" in target["cpu_features"], target
    mlir = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"
    here = compiler.cache_key(mlir, HOST_FLAGS)
    portable = [f for f in HOST_FLAGS if "target-cpu=" not in f] + ["--iree-llvmcpu-target-cpu=x86-64-v3"]
    portable_here = compiler.cache_key(mlir, portable)
    # The same flags on a CPU that resolves otherwise (a root restored onto another runner): another
    # key; code built for a named CPU does not depend on which CPU built it.
    monkeypatch.setattr(host_target, "resolved", lambda t, v: {"cpu": "haswell", "cpu_features": "+avx2,-avx512f"})
    assert compiler.cache_key(mlir, HOST_FLAGS) != here
    assert compiler.cache_key(mlir, portable) == portable_here


def test_iree_cpu_records_the_resolved_target():
    from accel_regress.backends.iree_cpu import IreeCpuBackend
    if compiler.availability():
        pytest.skip(compiler.availability())
    versions = IreeCpuBackend().versions()
    target = host_target.resolved(compiler.tool_path(), compiler.compiler_version())
    assert versions["target-cpu"] == target["cpu"] and target["cpu"] in versions["device"]
    assert set(versions["target-features"].split()) <= set(host_target.enabled_features(target["cpu_features"]))


def _verdicts(tmp_path, hw, k):
    """{backend: its verdicts} of one real session of the GEMM family's cases ``k`` on ``hw``."""
    reports = tmp_path / "reports"
    subprocess.run([sys.executable, "-m", "pytest", "tests/test_gemm_partition_n.py", "--hw", hw, "-k", k,
                    "--report-dir", str(reports), "-p", "no:cacheprovider", "-q"], cwd=REPO, capture_output=True,
                   text=True, timeout=600)
    out: dict = {}
    for c in json.loads((reports / "results.json").read_text())["cases"]:
        out.setdefault(c["backend"], set()).add(c["verdict"])
    return out


def _cpu() -> str:
    return f"this CPU ({host_cpu.host().model}: {' '.join(host_cpu.host().notable)})"


@pytest.mark.skipif(not host_cpu.host().has("amx_bf16", "avx512_bf16"),
                    reason=f"{_cpu()} has no AMX and AVX-512 BF16: oneDNN#5717 is AMX-only, and the variant "
                           f"below it needs AVX-512 BF16")
def test_onednn_5717_is_xfail_on_amx_and_passes_below_it_in_the_same_session(tmp_path):
    got = _verdicts(tmp_path, "torch-cpu,torch-cpu-avx512-core-bf16", K_TAIL)
    assert got == {"torch-cpu": {"XFAIL"}, "torch-cpu-avx512-core-bf16": {"PASS"}}, got


@pytest.mark.skipif(not host_cpu.host().has("avx512_bf16", "avx512bw", "avx512vl", "avx512dq"),
                    reason=f"{_cpu()} has no AVX-512 BF16: torch-cpu's bf16 GEMM is no brgemm here")
def test_each_kernel_path_gives_its_own_verdict_in_one_session(tmp_path):
    """The brgemm bf16 matmul flushes bf16 subnormals (expectations/torch-cpu.toml); oneDNN capped at
    AVX512_CORE (an emulated bf16 dot product) and at AVX2 (torch's own kernel) keep them. One
    session, the capped backends after the uncapped one: a capped run in the uncapped one's worker
    (whose oneDNN fixed its ISA at its first GEMM) would flush too and FAIL."""
    hw = "torch-cpu,torch-cpu-avx512-core,torch-cpu-avx2"
    got = _verdicts(tmp_path, hw, "M192 and subnormal and (test_forward_values or test_partition)")
    assert got == {"torch-cpu": {"XFAIL"}, "torch-cpu-avx512-core": {"PASS"}, "torch-cpu-avx2": {"PASS"}}, got
