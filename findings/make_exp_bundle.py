"""Makes findings/exp-underflow/: IREE's math.exp returns +0 where the result is an f32 subnormal.

No suite test fails on it (the fused-decode error model allows for it, families/fused_decode/
llama_ops.py), so this bundle is made from a program written here, with the same writer as
``accel-regress upstream`` (hardware/results/upstream), for the riscv64 build under qemu-user:
RISC-V has no flush-to-zero mode, so what the code computes is what comes back. On the x86 host
IREE's workers run with FTZ/DAZ set (a documented contract, expectations/iree-cpu.toml) and any
subnormal result is 0 there anyway, so the host cannot show it.

    python findings/make_exp_bundle.py [OUT]        # default findings/exp-underflow
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from accel_regress.backends.qemu_rvv import upstream as rvv
from accel_regress.results.upstream import bundle, cli
from accel_regress.results.upstream.bundle import Expected
from accel_regress.toolchains.iree.program import Program

ENTRY = "exp_f32"
# exp(-87.0) is normal; exp(-87.5) .. exp(-103) are subnormal (f32's smallest normal is 2**-126 =
# 1.18e-38, exp(-87.34)); exp(-104) rounds to 0 (below half of 2**-149).
X = np.array([-87.0, -87.5, -88.0, -88.5, -90.0, -95.0, -100.0, -103.0, -104.0], np.float32)
MLIR = f"""func.func @{ENTRY}(%x: tensor<{X.size}xf32>) -> tensor<{X.size}xf32> {{
  %e = tensor.empty() : tensor<{X.size}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}}
      ins(%x : tensor<{X.size}xf32>) outs(%e : tensor<{X.size}xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  }} -> tensor<{X.size}xf32>
  return %y : tensor<{X.size}xf32>
}}
"""
STANDARD = ("IEEE 754-2019: results are rounded to the destination format, subnormals included (gradual "
            "underflow; 7.5: an underflow delivers the rounded, possibly subnormal, result); section 9.2 "
            "recommends exp correctly rounded; OpenCL C allows exp 3 ulp. RISC-V has no flush-to-zero mode. "
            "In IREE 3.13's llvm-cpu code for math.exp (its polynomial expansion), x is clamped to "
            "[-87.8, 88.8] and the power of two is built as bitcast((k + 127) << 23) with k clamped to "
            "[-127, 127]: k = -127 gives the bit pattern 0, i.e. 2**k = +0 instead of 2**-127, so every "
            "x below about -87.68 returns +0 (seen in the dumped .codegen.ll of the host build too).")


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["findings/exp-underflow"])[0])
    program = Program(MLIR, ENTRY, ("x",), ("y",))
    ref = np.exp(X.astype(np.float64)).astype(np.float32).astype(np.float64)
    # The suite's allowance for exp (families/f32_reduction/golden.py ULP_BOUND): 3 ulp of the result.
    tol = 3.0 * np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    expected = {"y": Expected(ref, tol, False, "numpy float64 exp of the f32 inputs, rounded once to f32 "
                              "(subnormal results kept); allowance 3 ulp of the result (OpenCL C's bound for exp)")}
    from accel_regress.core import runner
    versions = {**runner.versions_of("qemu-rvv"), "numpy": np.__version__}
    spec, files, how = rvv.spec(None, program, {"x": X}, versions, variant="v", vlen=256)
    got = _run_once(spec, files, program)
    if got is None:
        return 2
    lines = bundle.element_lines({"x": X}, expected, got)
    title = "math.exp returns +0 for f32 subnormal results (x < -87.68) on llvm-cpu riscv64"
    since = ["Bisected through this bundle (findings/bundle_cases.py; README.md's findings table): there in "
             "every release the bundle's riscv64 harness tables run on."]
    issue = cli.issue_text(title, [*(f"    {ln}" for ln in lines), "",
                                   f"{len(lines)} of {X.size} results wrong; exp(-87.0) (normal) and exp(-87.5) "
                                   "(subnormal, k = -126) are right."],
                           [STANDARD, "", f"Expected values: {expected['y'].how}."], how, versions, since)
    spec.update({"versions": versions})
    written = bundle.write_bundle(out, title=title, program_mlir=MLIR, spec=spec, inputs={"x": X},
                                  expected=expected, got=got, build_files=files, issue=issue)
    return cli.check(written)


def _run_once(spec, files, program):
    """Run the bundle's own commands once (through reproduce.py's functions) for the 'got' values."""
    import json
    import shutil
    import tempfile
    from accel_regress.results.upstream.templates import reproduce
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "program.mlir").write_text(MLIR)
        for name, data in files.items():
            (work / name).write_bytes(data)
        try:
            return reproduce.outputs_riscv_qemu(json.loads(json.dumps(spec)), work)
        except RuntimeError as exc:
            print(f"could not run it: {exc}", file=sys.stderr)
            shutil.rmtree(work, ignore_errors=True)
            return None


if __name__ == "__main__":
    sys.exit(main())
