"""The findings/ bundles say what a maintainer can act on (issue 35): the right tracker and source,
the smallest program, the versions actually run, documented behaviour listed as such, and a
correction record for each finding changed or withdrawn."""
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FINDINGS = REPO / "findings"
BUNDLES = sorted(p for p in FINDINGS.iterdir() if (p / "bundle.json").is_file())
SUITE_WORDS = re.compile(r"accel-regress|vlen\d+|erf-\d+-|specials|R\d+-C\d+|padmin|reduced to `")


def test_versions_tried_are_the_versions_the_bisect_ran():
    for b in BUNDLES:
        spec = json.loads((b / "bundle.json").read_text())
        result = json.loads((FINDINGS / "bisect" / f"{b.name}.json").read_text())
        ran = [v for v in result["versions"] if v in {s["version"] for s in result["steps"]}]
        assert spec["versions_tried"] == ran == result["versions_tried"], b.name
        for doc in (spec, result):
            assert not (doc.get("last_good") is None and "first_bad" in doc), f"{b.name}: a first_bad with no good release"


def test_bf16_names_the_widening_and_the_pass_with_the_smallest_program():
    b = FINDINGS / "bf16-mulf-unrounded"
    assert len((b / "program.mlir").read_text().splitlines()) <= 12
    issue = (b / "ISSUE.md").read_text()
    for words in ("arith.extf", "ConvertBf16ArithToF32", "compiler/src/iree/compiler/Codegen/Common/ConvertBf16ArithToF32.cpp",
                  "ConvertTypeSensitiveArithCastOp", "iree-convert-bf16-arith-to-f32", "For: iree-org/iree"):
        assert words in issue, words
    assert not SUITE_WORDS.search(issue), SUITE_WORDS.search(issue)
    assert "iree-convert-bf16-arith-to-f32" in (b / "passes.mlir").read_text()


def test_erf_goes_to_llvm_project_without_suite_words():
    issue = (FINDINGS / "erf-neg-zero" / "ISSUE.md").read_text()
    assert "For: llvm/llvm-project (MLIR" in issue and "ErfPolynomialApproximation" in issue
    assert "mlir/lib/Dialect/Math/Transforms/PolynomialApproximation.cpp" in issue
    assert not SUITE_WORDS.search(issue), SUITE_WORDS.search(issue)


def test_i8_names_the_pass_and_the_rewrite_with_a_short_program():
    b = FINDINGS / "i8-matmul-spirv-sign"
    assert len((b / "program.mlir").read_text().splitlines()) <= 15
    issue = (b / "ISSUE.md").read_text()
    for words in ("For: iree-org/iree", "ConvertToSPIRVPass", "iree-convert-to-spirv", "RewriteExtOfBitCast",
                  "llvm/llvm-project#199243", "compiler/src/iree/compiler/Codegen/SPIRV/ConvertToSPIRV.cpp:763-781",
                  "mlir/lib/Dialect/Vector/Transforms/VectorEmulateNarrowType.cpp", "64768", "-768"):
        assert words in issue, words
    assert not SUITE_WORDS.search(issue), SUITE_WORDS.search(issue)
    passes = (b / "passes.mlir").read_text()
    assert "ConvertToSPIRVPass: iree-convert-to-spirv" in passes and "spirv.ShiftRightLogical" in passes
    assert json.loads((b / "bundle.json").read_text())["run"]["kind"] == "iree-run-module"


def test_exp_underflow_is_a_documented_limitation():
    readme = (FINDINGS / "README.md").read_text()
    limits = readme[readme.index("## Documented limitations"):readme.index("## Corrections")]
    assert "exp-underflow-riscv64" in limits and "since we flush denormals, we simply return 0" in limits
    table = readme[:readme.index("## Documented limitations")]
    assert "exp-underflow" not in table
    assert "Documented limitation, not filed" in (FINDINGS / "exp-underflow-riscv64" / "ISSUE.md").read_text()


def test_no_finding_claims_seed_004_and_each_change_has_a_correction_row():
    readme = (FINDINGS / "README.md").read_text()
    assert not (FINDINGS / "softmax-zvl512b-saturn-signature").exists()
    assert "Saturn" not in readme[:readme.index("## Documented limitations")]
    corrections = readme[readme.index("## Corrections"):]
    for row in ("| bf16 mulf unrounded |", "| erf(-0) |", "| exp underflow (riscv64) |", "| softmax +zvl512b", "| all: dates |"):
        assert row in corrections, row
    assert "oldest tried" in readme and "older lineage checked" in readme
