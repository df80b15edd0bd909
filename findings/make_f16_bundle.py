"""Makes findings/f16-subnormal-flush-riscv64/: on riscv64 without Zfhmin, IREE's llvm-cpu code
converts f32 to f16 through the ``__truncsfhf2`` of IREE's own libdevice, which returns +-0 for
every result in f16's subnormal range.

The suite found it on a rowexpandmul_fillpad f16 tile (a product 2**-21 came back 0); the smallest
program is the conversion alone, so this bundle is ``arith.truncf`` f32 -> f16 and back, written
here and run with the same writer as ``accel-regress upstream`` (hardware/results/upstream) under
qemu-user, as the exp bundle is (make_exp_bundle.py). The inputs are exact f16 values, so the only
rounding is the conversion's: an exact subnormal must come back unchanged.

    python findings/make_f16_bundle.py [OUT]        # default findings/f16-subnormal-flush-riscv64

The "since when" lines and bundle.json's facts come from findings/bisect/f16-subnormal-flush-riscv64.json
(a ``bisect --json`` result of this bundle, findings/bundle_cases.py) when it is there.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from accel_regress.backends.qemu_rvv import upstream as rvv
from accel_regress.results.upstream import bundle, cli
from accel_regress.results.upstream.bundle import Expected
from accel_regress.toolchains.iree.program import Program

ENTRY = "to_f16"
# f16's smallest normal is 2**-14 (6.1e-5), its smallest subnormal 2**-24 (6.0e-8). 2**-14 and 1.0
# are normal (the right path of the conversion), the rest are f16 subnormals, one negative.
X = np.array([1.0, 2.0 ** -14, 2.0 ** -15, 1.5 * 2.0 ** -20, 2.0 ** -21, -(2.0 ** -24)], np.float32)
MLIR = f"""func.func @{ENTRY}(%x: tensor<{X.size}xf32>) -> tensor<{X.size}xf32> {{
  %e = tensor.empty() : tensor<{X.size}xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}}
      ins(%x : tensor<{X.size}xf32>) outs(%e : tensor<{X.size}xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %h = arith.truncf %a : f32 to f16
    %r = arith.extf %h : f16 to f32
    linalg.yield %r : f32
  }} -> tensor<{X.size}xf32>
  return %y : tensor<{X.size}xf32>
}}
"""
BISECT = Path(__file__).resolve().parent / "bisect" / "f16-subnormal-flush-riscv64.json"
TITLE = ("[llvm-cpu] libdevice's __truncsfhf2 (iree_f2h_ieee) flushes f16 subnormal results to +-0: "
         "riscv64 without Zfhmin returns 0 for arith.truncf f32 -> f16 below 2**-14")
ISSUE = """# {title}

For: iree-org/iree (runtime/src/iree/builtins/device, the libdevice linked into llvm-cpu executables)

## What is wrong

`arith.truncf` f32 -> f16 of a value in f16's subnormal range returns +-0 on riscv64 built without
Zfh/Zfhmin (`+m,+a,+f,+d,+c,+v`); the inputs below are exact f16 values, so nothing is to be rounded:

{program}

{got}

1.0 and 2**-14 (the smallest f16 normal) are right. With `+zfhmin` (hardware `fcvt.h.s`, qemu
`Zfhmin=true`) the same program returns every value exactly.

## Where it goes wrong

Without Zfhmin LLVM lowers the conversion to a call of `__truncsfhf2`. In the static library
`iree-compile` writes (`--iree-llvmcpu-link-static`) that symbol is defined *locally* (`readelf -s lib.o`:
`__truncsfhf2 FUNC LOCAL`, beside `iree_f2h_ieee`, `__extendhfsf2`, `__gnu_f2h_ieee`) and the
dispatch calls it (`R_RISCV_CALL_PLT __truncsfhf2`, three calls), so neither libgcc's nor
compiler-rt's copy can be the one that runs: it is IREE's libdevice, linked into every llvm-cpu
executable after codegen (iree-org/iree@b48a5955575cf8924ffc191f3b0804976e5738b9
`compiler/plugins/target/LLVMCPU/LLVMCPUTarget.cpp:569-583`; riscv64 takes
`libdevice_wasm64_generic.bc`, `compiler/plugins/target/LLVMCPU/builtins/Device.cpp:43-55`).

`runtime/src/iree/builtins/device/device_generic.c` at b48a5955:

- 159-162: `__truncsfhf2` returns `iree_f2h_ieee(param)`;
- 118-120, in `iree_f2h_ieee` (67-143):

      }} else if (arithmetic_exp + f16_exp_bias <= 0) {{
        // Underflow. Generate zero. Leave zero mantissa.
        f16_exp = 0;

so every f32 below 2**-14 in magnitude becomes +-0 instead of the rounded f16 subnormal.

This function is "a specialized copy of the code we have in base/internal/math.h" (#20248, commit
e33829c940, 2025-03-14). The same day math.h itself was changed to preserve denormals (#20252,
de4031d63f: "[Runtime] Preserve denormals in floating point conversions"); it now reads
(`runtime/src/iree/base/internal/math.h:423-444` at b48a5955) "Underflow. Generate a subnormal or
zero." and shifts the mantissa into the subnormal. The libdevice copy was not updated, and its test
accepts the flush: `runtime/src/iree/builtins/device/tools/libdevice_test.cc:52-53` only asks
`f16BitsIsDenormalOrZero` for `|f32| < 6.1e-5`.

A fix: the subnormal branch of math.h's conversion in `iree_f2h_ieee`, and `EXPECT_EQ(f16Bits,
iree_math_f32_to_f16(f32))` for the subnormal range in the test.

## What is right

IEEE 754-2019 5.4.2 (formatOf conversions round to the destination format; gradual underflow
delivers the subnormal) and RISC-V, which has no flush-to-zero mode: `fcvt.h.s` keeps these values,
as the `+zfhmin` build shows. Expected values: the inputs themselves (each is an exact f16 value),
compared bit for bit.

## Reproduce (the toolchain and numpy only)

{how}

## Versions

{versions}

## Since when

{since}
"""


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["findings/f16-subnormal-flush-riscv64"])[0])
    program = Program(MLIR, ENTRY, ("x",), ("y",))
    ref = X.astype(np.float16).astype(np.float64)
    assert np.array_equal(ref, X.astype(np.float64)), "every input must be an exact f16 value"
    expected = {"y": Expected(ref, np.zeros(ref.shape), True,
                              "the inputs (exact f16 values), compared bit for bit, the sign of zero included")}
    from accel_regress.core import runner
    versions = {**runner.versions_of("qemu-rvv"), "numpy": np.__version__}
    spec, files, how = rvv.spec(None, program, {"x": X}, versions, variant="v", vlen=256)
    got = _run_once(spec, files)
    if got is None:
        return 2
    lines = bundle.element_lines({"x": X}, expected, got)
    since_lines, facts = cli.since(BISECT if BISECT.is_file() else None)
    issue = ISSUE.format(title=TITLE, program="\n".join(f"    {ln}" for ln in MLIR.splitlines()),
                         got="\n".join(f"    {ln}" for ln in lines), how="\n".join(how),
                         versions="\n".join(f"- {k}: {v}" for k, v in versions.items()),
                         since="\n".join(since_lines))
    spec.update({"tracker": "iree-org/iree", "versions": versions, **facts})
    written = bundle.write_bundle(out, title=TITLE, program_mlir=MLIR, spec=spec, inputs={"x": X},
                                  expected=expected, got=got, build_files=files, issue=issue)
    return cli.check(written)


def _run_once(spec, files):
    """Run the bundle's own commands once (through reproduce.py's functions) for the 'got' values."""
    import json
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
            return None


if __name__ == "__main__":
    sys.exit(main())
