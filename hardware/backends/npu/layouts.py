"""Manifest entries for operators whose buffer layout we know, and writing a manifest.

``gemm_partition_n`` follows IRON's AIEGEMM (iron/operators/gemm/op.py, the partition_N
version): M padded to tile_m * 4 (AIE rows), K to tile_k, each partition's N/partition_N columns
to tile_n * num_aie_columns; buffers A (M, K), B_i ((N, K) when b_col_maj else (K, N)) and C_i
((N, M) when c_col_maj else (M, N)), all bf16; one runlist entry (A, B_i, C_i) per partition.
IRON names its artifacts with the padded per-partition sizes, in one of two ways (see
hardware/backends/npu/iron_runner.py): seed 000's ``gemm_{M}x{K}x{N}_{tm}x{tk}x{tn}_{b}_{c}`` and the later
``gemm_{M}x{K}x{N}_{cols}_{tm}x{tk}x{tn}_{b}_{c}_bf16_bf16_sc0_acc0_embf16{e}_round1_ctiles1[_partN{P}]``
(AIEGEMM._get_artifact_name_base, with the options the suite builds with: bf16 in and out, no
scalar kernel, prio_accuracy off, round_conv_even on). ``python -m accel_regress.backends.npu.layouts
BUILD_DIR`` finds either.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

from accel_regress.golden.case import Case
from accel_regress.util.atomic import write_atomic

N_AIE_ROWS = 4


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def gemm_padded(p: dict) -> tuple[int, int, int]:
    n_part = p["N"] // p["partition_N"]
    return (_up(p["M"], p["tile_m"] * N_AIE_ROWS), _up(p["K"], p["tile_k"]),
            _up(n_part, p["tile_n"] * p["num_aie_columns"]))


def iron_gemm_basename(p: dict) -> str:
    """Seed 000's AIEGEMM (get_artifacts: file_name_total_base)."""
    Mp, Kp, Np = gemm_padded(p)
    return (f"gemm_{Mp}x{Kp}x{Np}_{p['tile_m']}x{p['tile_k']}x{p['tile_n']}"
            f"_{int(p['b_col_maj'])}_{int(p['c_col_maj'])}")


def iron_gemm_basename_later(p: dict) -> str:
    """The later partition_N AIEGEMM (_get_artifact_name_base, non-batched)."""
    Mp, Kp, Np = gemm_padded(p)
    P = p["partition_N"]
    return (f"gemm_{Mp}x{Kp}x{Np}_{p['num_aie_columns']}_{p['tile_m']}x{p['tile_k']}x{p['tile_n']}"
            f"_{int(p['b_col_maj'])}_{int(p['c_col_maj'])}_bf16_bf16_sc0_acc0"
            f"_embf16{int(p.get('emulate_bfp16', True))}_round1_ctiles1" + (f"_partN{P}" if P > 1 else ""))


def find_iron_gemm(build: Path, p: dict) -> Optional[str]:
    """The base name of this case's xclbin + .bin pair in an IRON build folder, either revision."""
    for base in (iron_gemm_basename_later(p), iron_gemm_basename(p)):
        if (build / f"{base}.xclbin").is_file() and (build / f"{base}.bin").is_file():
            return base
    return None


def gemm_partition_n(case: Case, xclbin: str, insts: str, kernel: Optional[str] = None) -> dict:
    p = case.params
    P, M, n = p["partition_N"], p["M"], p["N"] // p["partition_N"]
    Mp, Kp, Np = gemm_padded(p)
    buffers = {"A": {"dtype": "bfloat16", "shape": [Mp, Kp], "from": "A"}}
    runlist, outputs, parts = [], {}, []
    for i in range(P):
        b = {"dtype": "bfloat16", "from": "B", "cols": [i * n, (i + 1) * n]}
        b.update({"shape": [Np, Kp], "transpose": True} if p["b_col_maj"] else {"shape": [Kp, Np]})
        buffers[f"B_{i}"] = b
        buffers[f"C_{i}"] = {"dtype": "bfloat16", "shape": [Np, Mp] if p["c_col_maj"] else [Mp, Np]}
        runlist.append(["A", f"B_{i}", f"C_{i}"])
        read = {"buffer": f"C_{i}", "transpose": bool(p["c_col_maj"])}
        outputs[f"C_{i}"] = read
        parts.append(dict(read, rows=[0, M], cols=[0, n]))
    outputs["forward"] = {"concat": parts, "axis": 1, "expand_dims": 0}
    entry = {"op": case.op, "case": case.id, "xclbin": xclbin, "insts": insts,
             "macs": Mp * Kp * Np, "buffers": buffers, "runlist": runlist, "outputs": outputs}
    if kernel:
        entry["kernel"] = kernel
    return entry


LAYOUTS = {"gemm_partition_n": gemm_partition_n}


def write_manifest(path: Path, entries: list[dict]) -> None:
    """Written whole or not at all, readable as the umask says (hardware/util/atomic.py)."""
    from accel_regress.backends.npu.manifest import FORMAT
    write_atomic(path, json.dumps({"format": FORMAT, "entries": entries}, indent=1))


def main(argv=None) -> int:
    """python -m accel_regress.backends.npu.layouts BUILD_DIR [--large]: a manifest.json in BUILD_DIR for every
    GEMM partition_N case whose IRON artifacts are there (the partition_N=1 controls included)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(main.__doc__)
        return 0 if args else 2
    build = Path(args[0])
    from accel_regress.families.gemm_partition_n import golden as gemm
    configs = gemm.CI_CONFIGS + [gemm.VOCAB_MINI] + ([gemm.LLAMA_VOCAB] if "--large" in args else [])
    configs = configs + [c.standalone(i) for c in configs if c.partition_N > 1 for i in range(c.partition_N)]
    entries, missing = [], []
    for cfg in dict.fromkeys(configs):
        case = gemm.make_case(cfg)
        base = find_iron_gemm(build, case.params)
        if base is not None:
            entries.append(gemm_partition_n(case, f"{base}.xclbin", f"{base}.bin"))
        else:
            missing.append(iron_gemm_basename_later(case.params))
    write_manifest(build / "manifest.json", entries)
    print(f"{build / 'manifest.json'}: {len(entries)} entries; no artifacts for {len(missing)}: "
          + ", ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
