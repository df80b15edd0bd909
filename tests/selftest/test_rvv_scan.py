"""The RVV codegen scan (hardware/qemu_rvv/scan.py) on hand-written assembly and on real dumps."""
import pytest

from hardware.qemu_rvv import scan

HEAD = """\t.text
\t.type\tmain_dispatch_0_softmax_64x64xf32,@function
main_dispatch_0_softmax_64x64xf32:
"""
TAIL = """\tret
.Lfunc_end0:
\t.size\tmain_dispatch_0_softmax_64x64xf32, .Lfunc_end0-main_dispatch_0_softmax_64x64xf32
"""

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


def test_seed_disassembly_has_the_signature():
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
    from hardware.iree_common import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from golden import reductions as R
    from hardware.iree_common.program import program_for
    from hardware.qemu_rvv import build
    case = R.make_case(kind, R.SEED_SHAPES[kind], variant)
    return scan.scan_dir(build.compile_riscv(program_for(case), variant).dir / "dump")


def test_real_dumps_per_variant():
    """design.md's measurements: +v lowers f32 reductions to vfredosum, reassociation to
    vfredusum, novec to no vector code; +zvl512b softmax carries the seed-004 signature."""
    assert all(d["vfredosum"] > 0 and d["vfredusum"] == 0 for d in _live("layernorm", "v"))
    assert all(d["vfredusum"] > 0 and d["vfredosum"] == 0 for d in _live("layernorm", "v-reassoc"))
    assert all(d["vfredusum"] == d["vfredosum"] == d["vl1_mf2"] == 0 for d in _live("layernorm", "novec"))
    assert any(d["signature"] for d in _live("softmax", "v-zvl512b"))
    assert not any(d["signature"] for d in _live("softmax", "v"))
