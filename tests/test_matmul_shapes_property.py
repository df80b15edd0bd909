"""Property: every matmul shape is right, bit for bit, with small-integer bf16 inputs.

(M, K, N) are drawn by hypothesis from a strategy weighted toward tile boundaries: multiples of
8/16/32/64 and those +-1, +-small remainders, and 1s; seed 003's documented failures
(``SEED_EXAMPLES``) are tried first as explicit examples. When a shape fails (wrong numbers, compile
error, hang), hypothesis shrinks it to a minimal failing shape and prints it with the command that
reruns just that shape.

Deterministic by default (profile ``accel-ci``: fixed examples, no database written); for long
runs on hardware: ``pytest --hypothesis-profile explore`` (hardware/plugin/hypothesis_profiles.py).
"""
import shlex

import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st

from accel_regress.golden import assert_close
from accel_regress.families.matmul import golden as mm
from accel_regress import VerdictError
from accel_regress.plugin import hypothesis_profiles

pytestmark = pytest.mark.family(mm.OP)

TILES = (8, 16, 32, 64)
OFFSETS = (0, 0, -1, 1, -2, 2, -3, 3, -7, 7)        # exact multiples twice as likely
MAX_DIM = 2560 if hypothesis_profiles.exploring() else 320


def tile_boundary_dims(max_dim: int = MAX_DIM) -> st.SearchStrategy[int]:
    """One dimension. Plain integers come first so that shrinking ends at the smallest failing
    value; the boundary branches (three of five draws) are where tiling compilers break."""
    boundary = st.builds(lambda t, mult, off: min(max(1, t * mult + off), max_dim),
                         st.sampled_from(TILES), st.integers(1, max(1, max_dim // 8)), st.sampled_from(OFFSETS))
    return st.one_of(st.integers(1, max_dim), st.just(1), boundary, boundary, boundary)


shapes = st.tuples(tile_boundary_dims(), tile_boundary_dims(), tile_boundary_dims())

# Seed 003's documented failures, tried first in every run whatever the profile: 25 drawn shapes
# below 320 reach neither the seed's sizes nor the 256-byte herd extents, so without these the
# default run passes with the herd-hang fault in (the slow profile found 1x1x128 after 4 minutes).
# Each keeps the dimension the seed's finding is about and makes the others a tile, so it costs
# milliseconds where the seed's 2304**3 and 2432**3 would cost seconds on every backend.
SEED_EXAMPLES = (
    (512, 512, 640),     # the seed's {512,640}**3 sweep: hangs, N the odd size and M not
    (1, 1, 128),         # the smallest shape that rule holds for: N*2 B one 256 B herd extent
    (2304, 64, 64),      # the seed's 2304 square: a DMA wrap remainder (compile error 1)
    (64, 2432, 64),      # the seed's 2432 square: padded L2 packs (compile error 2)
)


def seed_examples(test):
    for shape in SEED_EXAMPLES:
        test = example(shape=shape)(test)
    return test


def rerun_command(hw, shape) -> str:
    argv = ["python", "repros/matmul_2432_sweep.py", "--hw", hw.name, "--shape", "x".join(map(str, shape))]
    if hw.fault:
        argv += ["--fault", hw.fault]
    if hw.golden_seed:
        argv += ["--golden-seed", str(hw.golden_seed)]
    return shlex.join(argv)


@pytest.fixture(scope="module")
def property_hw(hw):
    # A simulator runs ~1000x slower than the host: a default run would spend minutes here.
    if hw.backend.kind in ("simulator", "fpga-simulation") and not hypothesis_profiles.exploring():
        pytest.skip(f"{hw.name} is a simulator: the shape property runs there only with --hypothesis-profile explore")
    return hw


@settings(hypothesis_profiles.active())
@given(shape=shapes)
@seed_examples
def test_matmul_shape_exact(property_hw, shape):
    hw = property_hw
    M, K, N = shape
    cfg = mm.MatmulConfig(M, K, N, inputs="exact")
    case = mm.make_case(cfg, hw.golden_seed)
    inputs = mm.make_inputs(case)
    command = rerun_command(hw, shape)
    note(f"shape M={M} K={K} N={N}; rerun: {command}")
    run = hw.run(case, inputs)
    try:
        got = run["out"]
    except VerdictError as exc:          # keep the verdict, add how to rerun this one shape
        exc.detail.setdefault("rerun", command)
        raise
    ref, tol = mm.expected(case, inputs)
    assert got.shape == (M, N), f"output shape {got.shape}, expected ({M}, {N}); rerun: {command}"
    assert_close(got, ref, tol=tol, name=f"matmul {M}x{K}x{N} (rerun: {command})")
