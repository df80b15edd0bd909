"""``accel-regress upstream`` bundles: a bundle's reproduce.py run on the toolchain here (IREE
3.13.0, which has the erf(-0) bug: exit 1) and on the same bundle whose expected values are what
this IREE returns (exit 0: the script's pass path is reachable); the comparison rule element by
element; the bundle's assembly scan against the suite's (tests/selftest/fixtures/real/rvv, real
IREE and clang output); the command end to end on the erf case (reduced to one element)."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress.backends.qemu_rvv import scan
from accel_regress.results.upstream.templates import reproduce

REPO = Path(__file__).resolve().parents[3]
ERF = REPO / "findings" / "erf-neg-zero"
REAL_RVV = REPO / "tests" / "selftest" / "fixtures" / "real" / "rvv"
ERF_TEST = "tests/test_f32_reduction.py::test_f32_reduction[iree-cpu-erf-64-v-vlen256-specials]"


def _iree():
    from accel_regress.toolchains.iree import compiler
    reason = compiler.availability()
    if reason:
        pytest.skip(reason)
    try:
        import iree.runtime  # noqa: F401
    except Exception as exc:
        pytest.skip(f"iree.runtime does not import: {exc}")


def _reproduce(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(folder / "reproduce.py")], capture_output=True, text=True,
                          timeout=600, cwd="/")


def test_erf_bundle_exits_1_here_and_0_once_its_expectation_is_met(tmp_path):
    _iree()
    bundle = shutil.copytree(ERF, tmp_path / "erf")
    proc = _reproduce(bundle)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "x = -0.0" in proc.stdout and "got 0.0" in proc.stdout and "BUG PRESENT" in proc.stdout
    # What a toolchain without the bug would make of it: the expected values equal what came back.
    got = np.load(bundle / "got" / "y.npy", allow_pickle=False)
    np.save(bundle / "expected" / "y.npy", got.astype(np.float64), allow_pickle=False)
    proc = _reproduce(bundle)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_rule_counts_what_ieee_defines():
    w = reproduce.wrong_elements
    exp = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.0, 1.0])
    same = exp.copy()
    assert not w(same, exp, 0.0, True).any()
    flipped = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0, 1.0])
    assert w(flipped, exp, 0.0, True).tolist() == [True, True, False, False, False, False, False]
    assert not w(flipped, exp, 0.0, False).any()                          # sign of zero only where it counts
    other = np.array([-0.0, 0.0, 1.0, -np.inf, np.inf, 1.0 + 1e-7, 1.5])
    assert w(other, exp, 1e-6, True).tolist() == [False, False, True, True, True, False, True]


def test_the_bundle_scan_finds_what_the_suite_scan_finds(tmp_path):
    """The bundle's stand-alone scan (reproduce.py) and the suite's agree on the real corpus (no
    candidate: IREE 3.13's +zvl512b softmax runs its FMAs at m2) and on seed 004's own listing."""
    from accel_regress.backends.qemu_rvv.upstream import SATURN_SCAN
    # seed 004's listing, as the suite's own scan test holds it (a module of another folder)
    spec = importlib.util.spec_from_file_location(
        "rvv_scan_listing", Path(__file__).resolve().parents[1] / "backends" / "qemu_rvv" / "test_rvv_scan.py")
    listing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(listing)
    HEAD, SEED_LOOP, TAIL = listing.HEAD, listing.SEED_LOOP, listing.TAIL
    seed = tmp_path / "seed.s"
    seed.write_text(HEAD + SEED_LOOP + TAIL)
    files = sorted(REAL_RVV.glob("*.s")) + [seed]
    found = {}
    for f in files:
        ours = bool(reproduce.pattern_loops(f.read_text(), SATURN_SCAN))
        suite = any(d.signature for d in scan.scan_files([f], dispatch_only=False))
        assert ours == suite, f.name
        found[f.name] = ours
    assert [n for n, hit in found.items() if hit] == ["seed.s"]


def test_upstream_reduces_the_erf_case_to_one_element(tmp_path):
    _iree()
    out = tmp_path / "bundle"
    proc = subprocess.run([sys.executable, "-m", "accel_regress", "upstream", ERF_TEST, "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    spec = json.loads((out / "bundle.json").read_text())
    assert spec["case"]["params"]["shape"] == [1]
    assert np.load(out / "inputs" / "x.npy", allow_pickle=False).tolist() == [-0.0]
    assert spec["compile"][:2] == ["iree-compile", "program.mlir"] and "math.erf" in (out / "program.mlir").read_text()
    assert "reproduce.py exit 1" in proc.stdout


def test_every_finding_carries_the_current_script():
    """The bundles in findings/ are self-contained copies: a fix to the template must reach them."""
    template = Path(reproduce.__file__).read_bytes()
    bundles = [p for p in (REPO / "findings").iterdir() if (p / "bundle.json").is_file()]
    assert len(bundles) == 6            # the softmax one withdrawn (findings/README.md corrections); i8, bf16 Vulkan added (issue 50)
    for b in bundles:
        assert (b / "reproduce.py").read_bytes() == template, f"{b.name}: reproduce.py differs from the template"
        spec = json.loads((b / "bundle.json").read_text())
        assert spec["compile"][0] == "iree-compile" and spec["run"]["kind"] in ("iree-runtime", "riscv-qemu", "codegen-scan", "iree-run-module", "compile-error")


ADD_ONE = """func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %r = arith.addf %a, %one : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}
"""
CPU_COMPILE = ["iree-compile", "program.mlir", "--iree-hal-target-device=local",
               "--iree-hal-local-target-device-backends=llvm-cpu", "-o", "module.vmfb"]


def _bundle(tmp_path, name, program, spec, **kw):
    from accel_regress.results.upstream import bundle
    return bundle.write_bundle(tmp_path / name, title=name, program_mlir=program, spec=spec, **kw)


def test_iree_run_module_kind_copies_outputs_back_and_compares_them(tmp_path):
    """The i8 Vulkan bundle's kind, run here on local-task: right expected values exit 0, wrong 1."""
    _iree()
    from accel_regress.results.upstream.bundle import Expected
    x = np.array([0.0, -1.0, 2.5, 1e30], np.float32)
    spec = {"compile": CPU_COMPILE,
            "run": {"kind": "iree-run-module", "entry": "f", "inputs": ["x"], "outputs": ["y"],
                    "argv": ["iree-run-module", "--device=local-task", "--module=module.vmfb", "--function=f",
                             "--input=@inputs/x.npy", "--output=@y.npy"]}}
    right = (x + np.float32(1)).astype(np.float64)
    for name, ref, code in (("right", right, 0), ("wrong", right + 1, 1)):
        out = _bundle(tmp_path, name, ADD_ONE, spec, inputs={"x": x},
                      expected={"y": Expected(ref, np.zeros(4), False, "x + 1")})
        proc = _reproduce(out)
        assert proc.returncode == code, proc.stdout + proc.stderr


def test_compile_error_kind_tells_the_named_error_from_a_compile_and_from_another_error(tmp_path):
    _iree()
    broken = ADD_ONE.replace("arith.addf %a, %one : f32", "arith.addf %a, %one : f16")
    cases = (("compiles", ADD_ONE, "expects different type than prior uses", 0, "the program compiles"),
             ("named-error", broken, "expects different type than prior uses", 1, "BUG PRESENT: 1 compile error(s)"),
             ("other-error", broken, "failed to legalize operation 'vector\\.bitcast'", 2, "failed otherwise"))
    for name, program, error, code, said in cases:
        out = _bundle(tmp_path, name, program, {"compile": CPU_COMPILE, "run": {"kind": "compile-error", "inputs": []},
                                                 "error": error}, inputs={})
        proc = _reproduce(out)
        assert proc.returncode == code and said in proc.stdout + proc.stderr, (name, proc.stdout + proc.stderr)
