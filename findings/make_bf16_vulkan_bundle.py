"""Makes findings/vulkan-bf16-matmul-bitcast/: a bf16 x bf16 -> f32 matmul that takes IREE's
vectorized SPIR-V pipeline fails to compile ("failed to legalize operation 'vector.bitcast'").

The suite's cases ({512,640}^3, 2432^3 and the property test's shapes on iree-vulkan) fail so with
the device's own target; this bundle is the smallest such shape found here (64x64x64) on IREE's
default Vulkan target, made with the same writer as ``accel-regress upstream`` and checked by
reproduce.py's "compile-error" kind. No Vulkan device is needed: only iree-compile runs.

    python findings/make_bf16_vulkan_bundle.py [OUT]     # default findings/vulkan-bf16-matmul-bitcast

The "since when" lines and bundle.json's facts come from findings/bisect/vulkan-bf16-matmul-bitcast.json
(a ``bisect --json`` result of this bundle) when it is there.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from accel_regress.results.upstream import bundle, cli

M = K = N = 64
MLIR = f"""func.func @matmul(%lhs: tensor<{M}x{K}xbf16>, %rhs: tensor<{K}x{N}xbf16>) -> tensor<{M}x{N}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{M}x{N}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %c = linalg.matmul ins(%lhs, %rhs : tensor<{M}x{K}xbf16>, tensor<{K}x{N}xbf16>) outs(%acc : tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  return %c : tensor<{M}x{N}xf32>
}}
"""
COMPILE = ["iree-compile", "program.mlir", "--iree-hal-target-device=vulkan", "-o", "module.vmfb"]
ERROR = r"failed to legalize operation 'vector\.bitcast'[^\n]*"
TITLE = ("[SPIR-V] bf16 x bf16 -> f32 matmul fails to compile on every Vulkan target tried: failed to legalize "
         "'vector.bitcast' (vector<2xf32> -> vector<4xbf16>), the bf16 twin of #22717")
ISSUE = """# {title}

For: iree-org/iree (codegen/spirv), as a comment on the open #22717 ("[vulkan] compile error on
f16 matmuls", the same error for f16) rather than a new issue: the mechanism is the same, but for
bf16 no target tried avoids it.

## What is wrong

{program}

    $ {compile}
    {error}

The same with `--iree-vulkan-target=llvmpipe` (a table target with 16-bit storage, fp16 compute
and all subgroup ops) and with a target written from lavapipe's own features (`storage =
b32|b64|b16|b8`, `compute = fp32|int32|fp64|fp16|int64|int16|int8`), at 64x64x64 and 512x512x512
(IREE 3.13.0). The f16 twin of the program compiles with `--iree-vulkan-target=llvmpipe` at 512^3 and
fails only on the default target, as #22717 reports.

## Where

`--mlir-print-ir-after-all`: `SPIRVVectorizeLoadStorePass` (`iree-spirv-vectorize-load-store`)
rewrites the bf16 buffers as `memref<...xvector<4xf32>>` with `vector.bitcast %w : vector<4xf32> to
vector<8xbf16>`; `OptimizeVectorTransferPass` splits that into `vector<2xf32> to vector<4xbf16>`
feeding `arith.extf ... : vector<4xbf16> to vector<4xf32>`; `ConvertToSPIRVPass`
(`iree-convert-to-spirv`) is the pass that fails: it has no SPIR-V type for a bf16 vector.

The f32 container comes from `getVectorizedMemRefType`
(iree-org/iree@b48a5955575cf8924ffc191f3b0804976e5738b9
`compiler/src/iree/compiler/Codegen/SPIRV/SPIRVVectorizeLoadStore.cpp:566-572`): when a 128-bit
access holds more than 4 elements, an integer element type is widened to i32 and *any* float type,
bf16 included, to f32. For f16 the result is legal where the target has fp16 (`vector<4xf16>`
exists in SPIR-V); bf16 has no SPIR-V type here (IREE knows no bf16 capability:
`git grep BFloat16TypeKHR compiler/` at b48a5955 finds only the C API export), so no target
features make it legal. Packing bf16 (a storage-only type on this path: IREE computes it in f32)
into i32 words, as integers are, would avoid the bf16 vector.

## Reproduce (the toolchain alone)

    pip install iree-base-compiler==3.13.0 numpy
    python reproduce.py     # exit 1 while iree-compile fails so, 0 when the program compiles

## Versions

{versions}

## Since when

{since}
"""
BISECT = Path(__file__).resolve().parent / "bisect" / "vulkan-bf16-matmul-bitcast.json"


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["findings/vulkan-bf16-matmul-bitcast"])[0])
    error = _compile_error()
    if error is None:
        print("the program compiles here: nothing to bundle", file=sys.stderr)
        return 2
    from accel_regress.core import runner
    versions = {"iree-compiler": runner.versions_of("iree-cpu").get("iree-compiler", "?")}
    since_lines, facts = cli.since(BISECT if BISECT.is_file() else None)
    issue = ISSUE.format(title=TITLE, since="\n".join(since_lines), program="\n".join(f"    {ln}" for ln in MLIR.splitlines()),
                         compile=" ".join(COMPILE), error=error,
                         versions="\n".join(f"- {k}: {v}" for k, v in versions.items()))
    spec = {"compile": COMPILE, "run": {"kind": "compile-error", "inputs": []}, "error": ERROR,
            "tracker": "iree-org/iree (comment on #22717)", "versions": versions, **facts}
    written = bundle.write_bundle(out, title=TITLE, program_mlir=MLIR, spec=spec, inputs={}, issue=issue)
    return cli.check(written)


def _compile_error():
    import re
    from accel_regress.results.upstream.templates import reproduce
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "program.mlir").write_text(MLIR)
        proc = subprocess.run([reproduce.tool("iree-compile"), *COMPILE[1:]], cwd=tmp, capture_output=True,
                              text=True, timeout=600)
    found = re.search(ERROR, proc.stderr) if proc.returncode else None
    return found.group(0) if found else None


if __name__ == "__main__":
    sys.exit(main())
