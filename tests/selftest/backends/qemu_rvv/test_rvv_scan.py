"""The RVV codegen scan (hardware/backends/qemu_rvv/scan.py) on hand-written assembly and on real dumps."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from accel_regress.backends.qemu_rvv import scan

HEAD = """\t.text
\t.type\tmain_dispatch_0_softmax_64x64xf32,@function
main_dispatch_0_softmax_64x64xf32:
"""
TAIL = """\tret
.Lfunc_end0:
\t.size\tmain_dispatch_0_softmax_64x64xf32, .Lfunc_end0-main_dispatch_0_softmax_64x64xf32
"""

# Seed 004's own listing (/work/shared/seeds/004_*.txt, "Direct evidence from disassembling
# .../mt_bmm_opu/module_main_dispatch_0_embedded_elf_riscv_64.s"), its "..." lines left out: the
# FMA itself single-lane at VL=1, mf2, a slide at m1 between two such FMAs, in a loop.
SEED_LOOP = """.LBB0_2:
\tvmv1r.v\tv12, v14
\tflw\tfa5, -8(a5)
\tvsetivli\tzero, 1, e32, mf2, ta, ma
\tvfmacc.vf\tv12, fa5, v10
\tvsetivli\tzero, 1, e32, m1, ta, ma
\tvslidedown.vi\tv13, v14, 1
\tvsetivli\tzero, 1, e32, mf2, ta, ma
\tvfmacc.vf\tv13, fa4, v10
\taddi\ta5, a5, 8
\tbne\ta5, a6, .LBB0_2
"""


def _one(body):
    (d,) = scan.scan_text(HEAD + body + TAIL, "x.s")
    return d


def test_seed_disassembly_is_a_candidate():
    d = _one(SEED_LOOP)
    assert d.signature and d.signature_loops == [".LBB0_2"]
    assert d.vl1_mf2 == 2 and d.vfmacc_vf == 2 and d.vslidedown_vi == 1 and d.loops == 1


def test_same_instructions_outside_a_loop_are_not_the_signature():
    body = SEED_LOOP.replace("\tbne\ta5, a6, .LBB0_2\n", "")
    assert not _one(body).signature


def test_loop_without_slides_is_not_the_signature():
    body = SEED_LOOP.replace("\tvslidedown.vi\tv13, v14, 1\n", "")
    assert not _one(body).signature


def test_loop_at_whole_register_lmul_is_not_the_signature():
    body = SEED_LOOP.replace("mf2", "m1")
    assert not _one(body).signature


def test_full_width_fma_with_a_single_lane_slide_is_not_the_signature():
    """IREE 3.13's +zvl512b softmax shape: the FMAs at full width (e32, m2), only a one-element
    slide of the running sum at VL=1, mf2. Not the seed's pattern (the first scan flagged it)."""
    body = """.LBB0_3:
\tvsetvli\tzero, a4, e32, m2, ta, ma
\tvfmacc.vf\tv16, ft2, v18
\tvfmacc.vf\tv16, ft3, v18
\tvsetivli\tzero, 1, e32, mf2, ta, ma
\tvslidedown.vi\tv14, v4, 1
\tvsetvli\tzero, a4, e32, m2, ta, ma
\tbnez\ts3, .LBB0_3
"""
    d = _one(body)
    assert not d.signature and d.vl1_mf2 == 1 and d.vfmacc_vf == 2 and d.vslidedown_vi == 1


def test_single_lane_fma_with_the_slide_before_it_is_the_signature():
    """In a loop the FMA and the slide alternate whichever comes first in the text."""
    body = """.LBB0_2:
\tvsetivli\tzero, 1, e32, m1, ta, ma
\tvslidedown.vi\tv13, v14, 1
\tvsetivli\tzero, 1, e32, mf2, ta, ma
\tvfmacc.vf\tv12, fa5, v10
\tbne\ta5, a6, .LBB0_2
"""
    assert _one(body).signature


REPO = Path(__file__).resolve().parents[4]
REAL = REPO / "tests" / "selftest" / "fixtures" / "real" / "rvv"


def _real(name, dispatch_only=True):
    return scan.scan_text((REAL / name).read_text(), name, dispatch_only)


@pytest.mark.parametrize("name, sew, n", [("iree_rowsum_f16_v_zvfh.s", "e16", 8),
                                          ("iree_rowsum_f32_v_zvfh.s", "e32", 8),
                                          ("iree_rowsum_f64_v_zvfh.s", "e64", 4)])
def test_real_iree_reductions_carry_their_element_width(name, sew, n):
    """An f16 or f64 vfredosum is not an f32 one: the width is the SEW in force (README here)."""
    (d,) = _real(name)
    assert d.reductions == {"vfredosum": {sew: n}}
    assert d.vfredosum == (n if sew == "e32" else 0) and d.vfredusum == 0 and not d.signature


def test_real_softmax_zvl512b_is_not_the_seed_pattern():
    """IREE 3.13's +v,+zvl512b softmax (README here: how it was made): its loop .LBB0_3 has
    vfmacc.vf only at e32, m2 (the exp polynomial) and vslidedown.vi at VL=1, mf2; no FMA runs
    single-lane, so it is not seed 004's listing."""
    (d,) = _real("iree_softmax_64x64_v_zvl512b.s")
    assert not d.signature and d.signature_loops == [] and d.vl1_mf2 > 0 and d.vfmacc_vf > 0 and d.vslidedown_vi > 0
    assert d.reductions == {"vfredosum": {"e32": 8}, "vfredmax": {"e32": 8}} and d.vfredosum == 8


def test_real_clang_output_without_dispatch_symbols():
    scans = _real("clang16_sum_fastmath.s", dispatch_only=False)
    assert {d.function: d.reductions for d in scans} == {
        "sum_f16": {"vfredusum": {"e16": 1}}, "sum_f32": {"vfredusum": {"e32": 1}},
        "sum_f64": {"vfredusum": {"e64": 1}}}
    assert [d.vfredusum for d in scans] == [0, 1, 0]


def test_whole_real_corpus_has_no_false_signature():
    found = [(f.name, d.function) for f in sorted(REAL.glob("*.s"))
             for d in scan.scan_text(f.read_text(), f.name, dispatch_only=False) if d.signature]
    assert found == []


def test_sew_follows_vsetvli_and_unknown_after_vsetvl():
    body = """.LBB0_1:
\tvsetvli\ta0, zero, e16, m1, ta, ma
\tvfredosum.vs\tv8, v8, v9
\tvsetivli\tzero, 4, e64, m2, ta, ma
\tvfredusum.vs\tv8, v8, v9
\tvsetvl\ta0, a1, a2
\tvfwredosum.vs\tv8, v8, v9
\tbnez\ta1, .LBB0_1
"""
    d = _one(body)
    assert d.reductions == {"vfredosum": {"e16": 1}, "vfredusum": {"e64": 1}, "vfwredosum": {"e?": 1}}
    assert (d.vfredosum, d.vfredusum) == (0, 0)


def test_hand_written_assembly_without_type_directives():
    text = "\t.text\n\t.globl\tdot16\ndot16:\n\tvsetvli\tt0, a2, e16, m1, ta, ma\n" \
           "\tvfredusum.vs\tv8, v8, v9\n\tret\nhelper:\n\tret\n"
    scans = scan.scan_text(text, "k.s", dispatch_only=False)
    assert [(d.function, d.reductions) for d in scans] == [("dot16", {"vfredusum": {"e16": 1}}), ("helper", {})]


def test_python_m_hardware_scan_rvv_on_any_file(tmp_path):
    run = subprocess.run([sys.executable, "-m", "accel_regress", "scan-rvv", str(REAL / "clang16_sum_fastmath.s"),
                          str(REAL / "iree_rowsum_f16_v_zvfh.s")], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "sum_f16: f32 vfredusum=0 vfredosum=0 (vfredusum[e16:1])" in run.stdout
    assert "rowsum_f16_dispatch_0_reduction_64x256_f16: f32 vfredusum=0 vfredosum=0 (vfredosum[e16:8])" in run.stdout
    assert "2 file(s)" in run.stdout and "4 with FP reductions, 0 with seed 004's candidate pattern" in run.stdout
    (tmp_path / "seed").mkdir()
    seed = tmp_path / "seed" / "seed.s"
    seed.write_text(HEAD + SEED_LOOP + TAIL)
    sig = subprocess.run([sys.executable, "-m", "accel_regress", "scan-rvv", "--json", "--dispatch-only",
                          str(seed), str(REAL / "iree_softmax_64x64_v_zvl512b.s")], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert sig.returncode == 1 and [d["signature"] for d in json.loads(sig.stdout)] == [True, False]
    bad = tmp_path / "x.s"
    bad.write_bytes(b"\xff\xfe")
    for args, words in (([str(tmp_path / "nope.s")], "no such file"), ([str(bad)], "not assembly text"),
                        ([str(tmp_path)], "no functions found")):
        if args == [str(tmp_path)]:
            bad.unlink()
        r = subprocess.run([sys.executable, "-m", "accel_regress", "scan-rvv", *args], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr


def test_reduction_counts():
    body = """.LBB0_1:
\tvsetvli\ta0, zero, e32, m1, ta, ma
\tvfredosum.vs\tv8, v8, v9
\tvfredusum.vs\tv10, v10, v9
\tvfredusum.vs\tv10, v10, v9
\tbnez\ta1, .LBB0_1
"""
    d = _one(body)
    assert (d.vfredosum, d.vfredusum, d.signature) == (1, 2, False)


def test_only_dispatch_functions_are_scanned():
    text = HEAD + SEED_LOOP + TAIL + "\t.type\tiree_h2f_ieee,@function\niree_h2f_ieee:\n" + SEED_LOOP + "\tret\n"
    assert [d.function for d in scan.scan_text(text)] == ["main_dispatch_0_softmax_64x64xf32"]


def _live(kind, variant):
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.families.f32_reduction import golden as R
    from accel_regress.toolchains.iree.program import program_for
    from accel_regress.backends.qemu_rvv import build
    case = R.make_case(kind, R.SEED_SHAPES[kind], variant)
    return scan.scan_dir(build.compile_riscv(program_for(case), variant).dir / "dump")


def test_real_dumps_per_variant():
    """design.md's measurements: +v lowers f32 reductions to vfredosum, reassociation to
    vfredusum, novec to no vector code; no variant's softmax has seed 004's candidate pattern."""
    assert all(d["vfredosum"] > 0 and d["vfredusum"] == 0 for d in _live("layernorm", "v"))
    assert all(d["vfredusum"] > 0 and d["vfredosum"] == 0 for d in _live("layernorm", "v-reassoc"))
    assert all(d["vfredusum"] == d["vfredosum"] == d["vl1_mf2"] == 0 for d in _live("layernorm", "novec"))
    assert not any(d["signature"] for d in _live("softmax", "v-zvl512b"))
    assert not any(d["signature"] for d in _live("softmax", "v"))


def test_a_dump_is_parsed_once_and_a_changed_dump_again(tmp_path, monkeypatch):
    """scan_dir keeps each scan under the digest of the assembly: the same dump (another process:
    the in-process memo cleared) is read back, not parsed; a changed or corrupt entry is parsed."""
    monkeypatch.setenv("ACCEL_RVV_SCAN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(scan, "_scans", {})
    parsed = []
    scan_files = scan.scan_files
    monkeypatch.setattr(scan, "scan_files", lambda files: (parsed.append(1), scan_files(files))[1])
    dump = tmp_path / "dump"
    dump.mkdir()
    (dump / "a.s").write_text(HEAD + SEED_LOOP + TAIL)
    first = scan.scan_dir(dump)
    assert len(parsed) == 1 and first[0]["signature"] and first[0]["file"] == "a.s"
    scan._scans.clear()
    assert scan.scan_dir(dump) == first and len(parsed) == 1
    first[0]["signature"] = "edited by a caller"          # every caller gets its own copy
    assert scan.scan_dir(dump)[0]["signature"] is True
    (dump / "a.s").write_text(HEAD + SEED_LOOP.replace("mf2", "m1") + TAIL)
    assert scan.scan_dir(dump)[0]["signature"] is False and len(parsed) == 2
    scan._scans.clear()
    for entry in (tmp_path / "cache").glob("*.json"):
        entry.write_text('[{"function": "x"}]')            # not a scan: parsed again
    assert scan.scan_dir(dump)[0]["signature"] is False and len(parsed) == 3
