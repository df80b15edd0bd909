"""Property: every matmul shape is right, bit for bit, with small-integer bf16 inputs.

(M, K, N) are drawn by hypothesis from a strategy weighted toward tile boundaries: multiples of
8/16/32/64 and those +-1, +-small remainders, and 1s. When a shape fails (wrong numbers, compile
error, hang), hypothesis shrinks it to a minimal failing shape and prints it with the command that
reruns just that shape.

Deterministic by default (profile ``accel-ci``: fixed examples, no database written); for long
runs on hardware: ``pytest --hypothesis-profile explore`` (hardware/plugin/hypothesis_profiles.py).
"""
import shlex

import pytest
from hypothesis import given, note, settings
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
