"""Seed 003: bf16 x bf16 -> f32 matmuls (and f32 x f32 -> f32) that failed to compile, hung or
could be wrong on iree-amd-aie: m=n=k in {2048, 2304, 2432}, the sweep cubes {512, 640}^3 and
{2048, 2432}^3, and the edge shapes a tiling compiler gets wrong.

Exact inputs (small integers and powers of two) and the other bit-exact input classes are
compared bit for bit (any difference is a bug); normal and shifted inputs within the error model
of families/matmul/golden.py. A compile error or a hang is its own verdict (raised by
``run["out"]``), never a wrong number. The whole cube as a table, with its rule:
``python -m accel_regress sweep --op matmul --hw BACKEND --dims 512,640``.
"""
import pytest

from accel_regress.golden import assert_close, store
from accel_regress.golden import inputs as classes
from accel_regress.families.matmul import golden as mm
from accel_regress.core.budget import simulator_budget
from accel_regress.plugin.ahead import case_fixture

pytestmark = pytest.mark.family(mm.OP)

# Up to this many multiply-adds a case runs in a second or two on two cores, on emu and iree-cpu.
DEFAULT_RUN_MACS = 2432 ** 3
def _param(cfg: mm.MatmulConfig, prefix: str = "", large: bool = None):
    large = cfg.macs > DEFAULT_RUN_MACS if large is None else large
    return pytest.param(cfg, id=prefix + cfg.id, marks=[pytest.mark.large] * large + [*simulator_budget(cfg.macs)])


# The seed's three squares: 2304 and 2432 each broke the compiler in its own way. 2432^3 (the
# seed's example IR) runs by default; the other two only with -m large.
SQUARES = [_param(mm.MatmulConfig(d, d, d), "square-", large=(d != 2432)) for d in mm.SEED_SQUARES]
SQUARES_NORMAL = [_param(mm.MatmulConfig(d, d, d, inputs="normal"), "square-", large=True) for d in mm.SEED_SQUARES]

# The seed's two sweep tables; the small one runs by default, in bf16 and (seed: "passes") f32.
CUBE_SMALL = [_param(mm.MatmulConfig(*s), "cube-") for s in mm.cube(mm.SEED_CUBES[1])]
CUBE_SMALL_F32 = [_param(mm.MatmulConfig(*s, lhs="f32", rhs="f32", inputs="normal"), "cube-")
                  for s in mm.cube(mm.SEED_CUBES[1])]
CUBE_LARGE = [_param(mm.MatmulConfig(*s), "cube-", large=True) for s in mm.cube(mm.SEED_CUBES[0])]
# The seed's f32 remark: M=K=256, N=320 hangs where the bf16 cubes pass (the N extent in bytes).
F32_HALVED = [_param(mm.MatmulConfig(256, 256, 320, lhs="f32", rhs="f32"), "f32-halved-")]

EDGES = [_param(mm.MatmulConfig(*s, lhs=dt, rhs=dt, inputs=cls), "edge-")
         for s in mm.EDGE_SHAPES for dt, cls in (("bf16", "exact"), ("bf16", "normal"), ("f32", "normal"))]

# The other input classes (golden/inputs.py) on two edge shapes in bf16 by default; every edge
# shape in bf16 and f32 with -m input_classes.
CLASS_SHAPES = ((17, 17, 17), (31, 37, 41))
EDGE_CLASSES = [_param(mm.MatmulConfig(*s, lhs=dt, rhs=dt, inputs=cls), "edge-")
                for s in CLASS_SHAPES for dt in ("bf16",) for cls in ("shifted", "ties", "specials", "subnormal")]
EDGE_CLASSES += [pytest.param(c, id="edge-" + c.id, marks=pytest.mark.input_classes)
                 for s in mm.EDGE_SHAPES for dt in ("bf16", "f32") for cls in classes.CLASSES
                 for c in [mm.MatmulConfig(*s, lhs=dt, rhs=dt, inputs=cls)]
                 if c.id not in {p.id[len("edge-"):] for p in EDGES + EDGE_CLASSES}]

CONFIGS = SQUARES + SQUARES_NORMAL + CUBE_SMALL + CUBE_SMALL_F32 + CUBE_LARGE + F32_HALVED + EDGES + EDGE_CLASSES


@pytest.fixture(scope="module")
def cfg(request):
    return request.param


@case_fixture
def case(cfg, golden_seed):
    return mm.make_case(cfg, golden_seed)


@pytest.fixture(scope="module")
def inputs(case):
    return store.cached("inputs", case, lambda: mm.make_inputs(case))


@pytest.fixture(scope="module")
def expected(case, inputs):
    return store.cached("expected", case, lambda: mm.expected(case, inputs))


@pytest.fixture(scope="module")
def run(hw, case, inputs):
    return hw.run(case, inputs)


@pytest.mark.parametrize("cfg", CONFIGS, indirect=True)
def test_matmul(run, cfg, expected):
    ref, tol = expected
    got = run["out"]          # raises the run's COMPILE_ERROR / HANG / CRASH verdict, if any
    assert got.shape == (cfg.M, cfg.N), f"output shape {got.shape}, expected ({cfg.M}, {cfg.N})"
    how = f"bit for bit ({cfg.inputs} inputs)" if cfg.bit_exact else f"within the f32 error model ({cfg.inputs} inputs)"
    assert_close(got, ref, tol=tol, name=f"matmul {cfg.M}x{cfg.K}x{cfg.N} {cfg.lhs}->{cfg.acc} output, {how}")
