"""The census's Where names the whole output's rows and columns (a partition compared on its own
says where it sits in the output), and a rectangle wrong almost everywhere is a block, not
"scattered" (seed 000's C_1..C_3 are wrong in ~96 % of their elements)."""
import numpy as np
import pytest

from accel_regress.golden.compare import Mismatch, assert_close, census


def _block(shape=(64, 64), density=0.96, seed=0):
    rng = np.random.default_rng(seed)
    want = np.zeros(shape)
    got = np.where(rng.random(shape) < density, 1.0, 0.0)
    return got, want


def test_a_block_wrong_almost_everywhere_is_a_block():
    got, want = _block()
    c = census(got, want, atol=0.5)
    assert c.where() == f"block rows 0-63, cols 0-63: {c.over_tolerance} of 4096 elements " \
                        f"({100 * c.over_tolerance / 4096:.1f}%)"


def test_sparse_misses_stay_scattered():
    got, want = _block(density=0.3)
    assert census(got, want, atol=0.5).where().startswith("scattered over rows 0-63; cols 0-63")


def test_where_uses_the_outputs_own_columns():
    got, want = _block()
    with pytest.raises(Mismatch) as err:
        assert_close(got, want, atol=0.5, origin=(0, 1002), name="C_1 (columns 1002-1065)")
    assert "Where: block rows 0-63, cols 1002-1065:" in str(err.value)
    one = np.zeros((16, 256))
    bad = one.copy()
    bad[0, 1:16] = 9.0
    with pytest.raises(Mismatch) as err:
        assert_close(bad, one, atol=0.5, origin=(32, 256))
    assert "Where: row 32, cols 257-271: 15 elements" in str(err.value)
    assert err.value.census.to_json()["origin"] == [32, 256]
