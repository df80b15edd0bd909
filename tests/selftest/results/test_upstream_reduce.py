"""`accel-regress upstream` reduces the program, not only the case (issue 35): ops dropped by
forwarding an operand while the wrong value stays, then dead ops and unread inputs, every candidate
parsed by MLIR and run as its own bundle. On the real bf16 case: 21 lines and five inputs -> 12
lines and two (fixtures/upstream/README.md)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from accel_regress.results.upstream import reduce

REPO = Path(__file__).resolve().parents[3]
BF16 = (REPO / "tests" / "selftest" / "fixtures" / "upstream" / "rowexpandmul_fillpad_bf16_1x1.mlir").read_text()
BF16_TEST = "tests/test_rowexpandmul_fillpad.py::test_tile[iree-cpu-R8-C64-vr3-vc48-bf16-padmin-fused-reuse-ties]"


def _iree():
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())


def test_forwarding_the_select_leaves_the_product_and_drops_what_only_the_select_read():
    _iree()
    (what, candidate), = [(w, c) for w, c in reduce.forwardings(BF16) if w.startswith("drop arith.select")
                          and w.endswith("read %p")]
    cleaned, steps = reduce.cleanup(candidate)
    assert reduce.parses(cleaned), cleaned
    assert reduce.arguments(cleaned) == ["gated", "scale"]
    assert "arith.select" not in cleaned and "linalg.index" not in cleaned and "arith.cmpi" not in cleaned
    assert "ins(%gated, %scale : tensor<1x1xf32>, tensor<1x1xf32>)" in cleaned
    assert "^bb0(%g: f32, %s: f32, %o: f32):" in cleaned
    assert {"drop unused input %pad", "drop unused argument %valid_row"} <= set(steps)


def test_a_candidate_that_does_not_parse_is_not_run():
    ran = []
    r = reduce.reduce_program(BF16, lambda m, n: ran.append(m) or True, check_parse=lambda text: False)
    assert ran == [] and r.mlir == BF16 and r.steps == []


def test_upstream_bundles_the_smallest_bf16_program(tmp_path):
    _iree()
    out = tmp_path / "bundle"
    proc = subprocess.run([sys.executable, "-m", "accel_regress", "upstream", BF16_TEST, "-o", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    program = (out / "program.mlir").read_text()
    assert len(program.splitlines()) <= 12, program
    assert "arith.mulf %gt, %st : bf16" in program and "arith.extf %pt : bf16 to f32" in program
    assert "arith.select" not in program
    spec = json.loads((out / "bundle.json").read_text())
    assert spec["run"]["inputs"] == ["gated", "scale"] and sorted(p.stem for p in (out / "inputs").iterdir()) == \
        ["gated", "scale"]
    assert np.load(out / "got" / "out.npy", allow_pickle=False).tolist() == [[54.375]]
    assert spec["program_reduction"] and "reproduce.py exit 1" in proc.stdout
