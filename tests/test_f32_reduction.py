"""f32 reductions (seed 004): every reduction and control against a float64 golden.

Each case is one program (families/f32_reduction/golden.py: kind, shape, RISC-V flag variant, VLEN); every
output is compared element by element within the f32-summation error model of
families/f32_reduction/golden.py. A hang is its own verdict (HANG, never a stalled suite); with
``--inject-fault saturn-f32-reduction-hang`` every reduction case is HANG and every control
passes.

Default cases: every kind at the seed's shape (baseline ``v`` build, VLEN 256), row sums whose
length leaves a tail for every VLEN (1, 7, 33, 127, 1000), every other row kind at a tail
length (33), with the normal and the shifted class (near-constant rows included) and, where the
kind has it, the specials class, VLEN 128 and 512, the seed's flag variants (novec, v-vw0, v-zvl512b at VLEN 512,
v-reassoc) on LayerNorm and softmax, and the seed's bisection variants (novec, v-vw0) on bmm.
``-m large``: every kind x shape x variant x VLEN (tails for the row kinds).

``test_saturn_codegen_signature`` scans the RISC-V assembly of each dispatch for seed 004's hang
signature: a stage of qemu-rvv and firesim (the backends that build that code), so it runs by
default wherever the IREE compiler and qemu-rvv's toolchain are.
"""
import pytest

from accel_regress.golden import assert_close, store
from accel_regress.families.f32_reduction import golden as R
from accel_regress.toolchains.iree import riscv
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(R.OP)

BASE = (riscv.BASELINE_VARIANT, riscv.BASELINE_VLEN)


def _p(kind, shape, variant, vlen, large=False, inputs="normal", marks=()):
    c = R.make_case(kind, shape, variant, vlen, inputs=inputs)
    return pytest.param((kind, tuple(shape), variant, vlen, inputs), id=R.test_id(c),
                        marks=([pytest.mark.large] if large else []) + list(marks))


# Input classes (golden/inputs.py; R.CLASS_KINDS says which kinds have which): a few kinds per
# class by default (the baseline build, and the reassociated tree order for ties), every kind of
# every class at the seed shape and a tail length, baseline and v-reassoc, with -m input_classes.
# log_softmax's shifted rows at the seed shape: where x - (max + log sum) (pytorch/pytorch#38839)
# errs by one constant per row that the row statistic sees (golden/statistics.py row_bias, issue 49).
CLASS_DEFAULT = {"shifted": ("mean_var", "softmax", "log_softmax"), "exact": ("row_sum", "matmul"),
                 "ties": ("row_sum", "matmul"), "specials": ("row_sum", "softmax", "divide", "erf"),
                 "subnormal": ("row_sum", "sqrt")}


# Every row kind also meets, by default, at a tail length (33: a tail at every VLEN): the shifted
# class (rows with a mean of 1000 spreads, and near-constant rows under the eps scale: R.near_constant)
# and, where the kind has it, the specials class next to the tail.
TAIL = (R.TAIL_ROWS, 33)
TAIL_CLASS_DEFAULT = {"shifted": R.ROW_KINDS, "specials": ("row_sum", "softmax", "log_softmax")}


def _classed():
    default, more = [], []
    for cls, kinds in R.CLASS_KINDS.items():
        if cls == "normal":
            continue
        for k in kinds:
            shapes = [R.SEED_SHAPES[k]] + ([TAIL] if k in R.ROW_KINDS else [])
            for shape in shapes:
                for variant in ("v", "v-reassoc"):
                    p = (k, shape, variant)
                    if k in CLASS_DEFAULT[cls] and shape == R.SEED_SHAPES[k] and (
                            variant == "v" or (cls, k) == ("ties", "row_sum")):
                        default.append(_p(k, shape, variant, 256, inputs=cls))
                    elif shape == TAIL and variant == "v" and k in TAIL_CLASS_DEFAULT.get(cls, ()):
                        default.append(_p(k, shape, variant, 256, inputs=cls))
                    else:
                        more.append(_p(*p, 256, inputs=cls, marks=[pytest.mark.input_classes]))
    return default, more


def _default():
    out = [_p(k, R.SEED_SHAPES[k], *BASE) for k in R.KINDS]
    out += [_p("row_sum", (R.TAIL_ROWS, n), *BASE) for n in R.TAIL_LENGTHS]
    out += [_p(k, (R.TAIL_ROWS, 33), *BASE) for k in R.ROW_KINDS if k != "row_sum"]
    out += [_p(k, R.SEED_SHAPES[k], "v", vlen) for k in ("layernorm", "softmax") for vlen in (128, 512)]
    for k in ("layernorm", "softmax"):
        out += [_p(k, R.SEED_SHAPES[k], v, 256) for v in ("novec", "v-vw0", "v-reassoc")]
        out.append(_p(k, R.SEED_SHAPES[k], "v-zvl512b", 512))
    out += [_p("bmm", R.SEED_SHAPES["bmm"], v, 256) for v in ("novec", "v-vw0")]   # seed 004's bisection
    out.append(_p("cvt", R.SEED_SHAPES["cvt"], "novec", 256))
    return out


def _large(default_ids):
    out = []
    shapes = {k: [R.SEED_SHAPES[k]] for k in R.KINDS}
    for k in R.ROW_KINDS:
        shapes[k] = shapes[k] + [(R.TAIL_ROWS, n) for n in R.TAIL_LENGTHS]
    for k in R.KINDS:
        for shape in shapes[k]:
            for name, v in riscv.VARIANTS.items():
                for vlen in riscv.VLENS:
                    if vlen < v.min_vlen or (not v.vector and vlen != riscv.BASELINE_VLEN):
                        continue
                    p = _p(k, shape, name, vlen, large=True)
                    if p.id not in default_ids:
                        out.append(p)
    return out


DEFAULT = _default()
CLASS_CASES, MORE_CLASS_CASES = _classed()
CASES = DEFAULT + _large({p.id for p in DEFAULT}) + CLASS_CASES + MORE_CLASS_CASES


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg, golden_seed):
    kind, shape, variant, vlen, inputs = cfg
    return R.make_case(kind, shape, variant, vlen, golden_seed, inputs=inputs)


@pytest.fixture(scope="module")
def inputs(case):
    return store.cached("inputs", case, lambda: R.make_inputs(case))


@pytest.fixture(scope="module")
def expected(case, inputs):
    def compute():
        ref = R.reference(case, inputs)
        return ref, R.tolerances(case, inputs, ref)
    return store.cached("expected", case, compute)


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


@pytest.mark.parametrize("cfg", CASES, indirect=True)
def test_f32_reduction(run, case, expected):
    ref, tol = expected
    for name in R.output_names(case.params["kind"]):
        assert_close(run[name], ref[name], tol=tol[name], name=f"{case.params['kind']} output {name!r}",
                     zero_sign=R.zero_sign(case))


SCAN_CASES = [_p(k, R.SEED_SHAPES[k], name, max(v.min_vlen, riscv.BASELINE_VLEN))
              for k in R.REDUCTIONS for name, v in riscv.VARIANTS.items()]


@pytest.mark.backends("qemu-rvv", "firesim")
@pytest.mark.parametrize("cfg", SCAN_CASES, indirect=True)
def test_saturn_codegen_signature(hw, case):
    """No dispatch of a Saturn build may contain seed 004's candidate hang pattern (a loop whose
    ``vfmacc.vf`` itself runs single-lane under ``vsetivli zero, 1, e32, mf2``, with
    ``vslidedown.vi`` in the same loop: the listing of seed 004, which the seed calls an
    unconfirmed candidate). A static check of the code IREE generates for the case's flag variant:
    the compile stage of qemu-rvv and firesim, which build exactly this code (NOT_APPLICABLE on
    the other backends)."""
    from accel_regress.toolchains.iree import compiler
    if compiler.availability():
        pytest.skip(compiler.availability())
    from accel_regress.toolchains.iree.program import program_for
    from accel_regress.backends.qemu_rvv import build, scan
    variant = case.params["variant"]
    scans = build.program_scan(program_for(case), variant, name=case.id)
    assert scans, f"no dispatch assembly was dumped for {case.id}"
    bad = [d for d in scans if d["signature"]]
    assert not bad, (f"{len(bad)} of {len(scans)} dispatches of {case.id} contain seed 004's candidate hang "
                     "pattern (single-lane vfmacc.vf at VL=1, mf2 with vslidedown.vi in one loop; unconfirmed): "
                     + scan.summary(bad) + "; loops " + ", ".join(l for d in bad for l in d["signature_loops"]))
