"""Makes findings/i8-matmul-spirv-sign/: an i8 x i8 -> i32 matmul on IREE's vulkan-spirv path
zero-extends its operands (a = 2, b = -3, K = 128 gives 64768, not -768).

The suite's case (tests/test_f32_reduction.py i8_matmul on iree-vulkan, 64x128x128 with the
device's own target) has no ``accel-regress upstream`` part: iree-vulkan is no registered
upstream backend, and its program carries a device target the bundle would have to hold. This
bundle is the same ``linalg.matmul`` written here at 16x128x16 for IREE's *default* Vulkan target
(what a maintainer gets with no flags), made with the same writer and run like the others: on
that target and shape every output equals zext(a) @ zext(b) (measured with random i8 inputs).
It runs on any Vulkan device; here Mesa's lavapipe.

    python findings/make_i8_vulkan_bundle.py [OUT]       # default findings/i8-matmul-spirv-sign

The "since when" lines and bundle.json's facts come from findings/bisect/i8-matmul-spirv-sign.json
(a ``bisect --json`` result of this bundle, findings/bundle_cases.py) when it is there.
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from accel_regress.results.upstream import bundle, cli
from accel_regress.results.upstream.bundle import Expected

M, K, N = 16, 128, 16
ENTRY = "mm"
MLIR = f"""func.func @{ENTRY}(%a: tensor<{M}x{K}xi8>, %b: tensor<{K}x{N}xi8>) -> tensor<{M}x{N}xi32> {{
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<{M}x{N}xi32>
  %init = linalg.fill ins(%zero : i32) outs(%empty : tensor<{M}x{N}xi32>) -> tensor<{M}x{N}xi32>
  %c = linalg.matmul ins(%a, %b : tensor<{M}x{K}xi8>, tensor<{K}x{N}xi8>) outs(%init : tensor<{M}x{N}xi32>) -> tensor<{M}x{N}xi32>
  return %c : tensor<{M}x{N}xi32>
}}
"""
A = np.full((M, K), 2, np.int8)
B = np.full((K, N), -3, np.int8)
COMPILE = ["iree-compile", "program.mlir", "--iree-hal-target-device=vulkan", "-o", "module.vmfb"]
RUN = ["iree-run-module", "--device=vulkan", "--module=module.vmfb", f"--function={ENTRY}",
       "--input=@inputs/a.npy", "--input=@inputs/b.npy", "--output=@c.npy"]
BISECT = Path(__file__).resolve().parent / "bisect" / "i8-matmul-spirv-sign.json"
TITLE = ("[SPIR-V] i8 x i8 -> i32 linalg.matmul zero-extends its operands on vulkan-spirv without integer "
         "dot product (2 x -3 summed over K = 128 gives 64768, not -768)")

ISSUE = """# {title}

For: iree-org/iree (codegen/spirv). The wrong rewrite is MLIR's `RewriteExtOfBitCast`, for which a fix
is open upstream: llvm/llvm-project#199243 (open when last seen; IREE 3.13.0 still has the bug).
This report is the end-to-end effect in IREE, to track picking the fix up and an e2e test.

## What is wrong

On `--iree-hal-target-device=vulkan` with IREE's default target (`vp_android_baseline_2022`: no
integer dot product, no 8-bit storage), the i8 x i8 -> i32 matmul below returns every result with
both operands zero-extended: a = 2, b = -3 everywhere, K = 128 gives 128 * 2 * 253 = 64768 for each
of the 256 results, where the exact result is -768. llvm-cpu returns -768.

{program}

{got}

With random i8 inputs (numpy default_rng(0), lavapipe, IREE 3.13.0) every one of the 256 results
equals `zext(a) @ zext(b)` exactly. With a target that has 8-bit storage but no dot product (written
from lavapipe's features, `storage = b32|b64|b16|b8`, `dot = none`) a 64x128x128 matmul returns
`a @ zext(b)` for all 8192 results: only the operand loaded as packed i32 words loses its sign.
With `--iree-vulkan-target=llvmpipe` (`dot = dp4xi8toi32`) the same shapes are right: the
integer-dot-product path (`detectI8ToI32Matmul`, `SPIRVInitialVectorLowering.cpp:159-176`) turns the
contraction into `spirv.SDotAccSat` before any `arith.extsi` reaches the rewrite below.

## Where the sign is lost

`--mlir-print-ir-after-all` (passes.mlir here): every pass keeps `arith.extsi` up to the input of
`ConvertToSPIRVPass` (`iree-convert-to-spirv`), where `SPIRVVectorizeLoadStore` has turned each i8
load into an i32-word load and a `vector.bitcast`
(iree-org/iree@b48a5955575cf8924ffc191f3b0804976e5738b9
`compiler/src/iree/compiler/Codegen/SPIRV/SPIRVVectorizeLoadStore.cpp:395-398`):

    %25 = vector.bitcast %24 : vector<1xi32> to vector<4xi8>
    %26 = arith.extsi %25 : vector<4xi8> to vector<4xi32>

After that one pass the lanes are masked and shifted *logically*, with no sign extension:

    %29 = spirv.BitwiseAnd %28, %cst_vec_4xi32_0 : vector<4xi32>   // [255, 65280, 16711680, -16777216]
    %30 = spirv.ShiftRightLogical %29, %cst_vec_4xi32 : vector<4xi32>, vector<4xi32>   // [0, 8, 16, 24]

Inside the pass, before the dialect conversion, IREE applies MLIR's narrow-type rewrites greedily
(`compiler/src/iree/compiler/Codegen/SPIRV/ConvertToSPIRV.cpp:763-781` at b48a5955:
`vector::populateVectorNarrowTypeRewritePatterns`; `Common/EmulateNarrowType.cpp:193-198` applies the
same set). Its `RewriteExtOfBitCast<arith::ExtSIOp>` (llvm/llvm-project
`mlir/lib/Dialect/Vector/Transforms/VectorEmulateNarrowType.cpp`, at
00cf8d549b43e1ec480e1c4a69bfe08e8494e141) builds each element with
`BitCastRewriter::genericRewriteStep`, which is mask + `arith::ShRUIOp` + `arith::ShLIOp` + `arith::OrIOp`
(zero-extended within the i32 lane), and then, because the result width (32) is not wider than the
lane (32), finishes with

    rewriter.replaceOpWithNewOp<arith::TruncIOp>(
        extOp, cast<VectorType>(extOp.getOut().getType()), runningResult);

so the sign of the i8 is never applied. To i64 it ends with `arith.extsi` of the already
zero-extended i32 lane: wrong the same way (checked with the `iree-opt` line below). IREE's own `iree-opt` shows it in isolation; `arith.extsi` and
`arith.extui` give the same output:

    func.func @f(%w: vector<1xi32>) -> vector<4xi32> {{
      %b = vector.bitcast %w : vector<1xi32> to vector<4xi8>
      %e = arith.extsi %b : vector<4xi8> to vector<4xi32>
      return %e : vector<4xi32>
    }}

    $ iree-opt --iree-codegen-emulate-narrow-type ext.mlir
    %0 = vector.shuffle %arg0, %arg0 [0, 0, 0, 0] : vector<1xi32>, vector<1xi32>
    %1 = arith.andi %0, %cst_0 : vector<4xi32>      // [255, 65280, 16711680, -16777216]
    %2 = arith.shrui %1, %cst : vector<4xi32>       // [0, 8, 16, 24]

(`transform.apply_patterns.vector.rewrite_narrow_types` under `--transform-interpreter` gives the same.)
llvm/llvm-project#199243 ("[mlir][vector] Fix RewriteExtOfBitCast dropping the sign extension",
2026-05-22) describes exactly this and sign-extends each element with `shli`/`shrsi` before the final
extend/truncate.

## Also seen on the default target (not diagnosed, not part of this report)

Smaller K gives other wrong results there, which the sign alone does not explain: 4x4x16 with a = 2,
b = 3 returns 24 in row 0 and 0 in rows 1-3; its SPIR-V declares the `memref<4xvector<4xi8>>` of `a`
as `!spirv.rtarray<vector<4xi32>, stride=16>` (16 bytes per 4-byte row, so rows 1-3 read past the
16-byte buffer). 16x1x16 returns -6 in 4 of 16 columns and 0 in the rest. Both are right with the
llvmpipe target.

## Reproduce (the toolchain and numpy only)

    pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0 numpy
    python reproduce.py     # exit 1 while the results are zero-extended, 0 when -768; needs a Vulkan device

Compile: `{compile}`
Run: `{run}`

Seen on Mesa's lavapipe (llvmpipe, Mesa 22.3.6, Vulkan 1.3) with the default target and with a target
written from the device; the same 64x128x128 case also failed on an NVIDIA H200 through NVIDIA's
Vulkan driver (580.159.04; its values were not kept). The rewrite is target-independent: any device
without integer dot product takes this path.

## Versions

{versions}

## Since when

{since}

Before 3.12.0 the runtime does not offer lavapipe as a device ("physical device 0 invalid; 1 physical
devices available; 0 visible", iree-run-module 3.11.0), so those releases give no verdict here.
"""


def spec() -> dict:
    return {"compile": COMPILE, "run": {"kind": "iree-run-module", "argv": RUN, "entry": ENTRY,
                                        "inputs": ["a", "b"], "outputs": ["c"]}}


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["findings/i8-matmul-spirv-sign"])[0])
    ref = (A.astype(np.int64) @ B.astype(np.int64)).astype(np.float64)
    expected = {"c": Expected(ref, np.zeros(ref.shape), False,
                              "the exact integer matmul of the sign-extended i8 inputs (numpy int64), "
                              "compared bit for bit")}
    from accel_regress.core import runner
    versions = {**runner.versions_of("iree-vulkan"), "numpy": np.__version__}
    got = _run_once()
    if got is None:
        return 2
    lines = bundle.element_lines({}, expected, got, limit=2)
    since_lines, facts = cli.since(BISECT if BISECT.is_file() else None)
    issue = ISSUE.format(title=TITLE, since="\n".join(since_lines), got="\n".join(f"    {ln}" for ln in lines),
                         program="\n".join(f"    {ln}" for ln in MLIR.splitlines()),
                         compile=" ".join(COMPILE), run=" ".join(RUN),
                         versions="\n".join(f"- {k}: {v}" for k, v in versions.items()))
    doc = {**spec(), "tracker": "iree-org/iree (root cause: llvm/llvm-project, open PR #199243)",
           "versions": versions, **facts}
    written = bundle.write_bundle(out, title=TITLE, program_mlir=MLIR, spec=doc, inputs={"a": A, "b": B},
                                  expected=expected, got=got, issue=issue)
    return cli.check(written)


def _run_once():
    """The bundle's own commands once (reproduce.py's functions) for the 'got' values."""
    from accel_regress.results.upstream.templates import reproduce
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "program.mlir").write_text(MLIR)
        (work / "inputs").mkdir()
        np.save(work / "inputs" / "a.npy", A, allow_pickle=False)
        np.save(work / "inputs" / "b.npy", B, allow_pickle=False)
        s = json.loads(json.dumps(spec()))
        try:
            reproduce.run(s["compile"], work, "iree-compile")
            reproduce.run(s["run"]["argv"], work, "iree-run-module")
        except RuntimeError as exc:
            print(f"could not run it: {exc}", file=sys.stderr)
            return None
        return {"c": np.load(work / "c.npy", allow_pickle=False)}


if __name__ == "__main__":
    sys.exit(main())
