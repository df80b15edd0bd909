"""Seed 002's built-in faults and the tile error model: each is caught, clean runs never flagged."""
import numpy as np
import pytest

from accel_regress.families.rowexpandmul_fillpad import golden as tiles
from accel_regress import Crash
from accel_regress.families.rowexpandmul_fillpad import emu as emu

ALL = tiles.seed_configs() + tiles.sweep_configs()


def _run(cfg, seed=0):
    case = tiles.make_case(cfg, seed)
    inputs = tiles.make_inputs(case)
    return case, inputs, emu.run(case, inputs)


@pytest.mark.parametrize("seed", range(20))
def test_clean_emu_passes_every_case_over_20_seeds(seed):
    for cfg in ALL:
        _, inputs, out = _run(cfg, seed)
        ref = tiles.tile_reference(inputs, cfg)
        tiles.assert_tile_close(out["out"], ref, cfg)
        assert tiles.padded_region_report(out["out"], cfg)[0]


def test_seed_case_census_under_the_board_fault():
    cfg = tiles.seed_config(1)
    case, inputs, out = _run(cfg)
    bad = emu.FAULTS["pto-bare-tile-validshape"](case, dict(out))["out"]
    with pytest.raises(tiles.TileMismatch) as info:
        tiles.assert_tile_close(bad, tiles.tile_reference(inputs, cfg), cfg)
    c = info.value.census
    assert (c.over_tolerance, c.elements) == (255, 4096)
    assert c.where() == "row 0, cols 1-255: 255 elements"
    assert info.value.findings == [
        "valid region, wrong values: row 0, cols 1-15: 15 elements",
        "valid region, about 0 where the reference is not: row 0, cols 16-255: 240 elements",
        "padded region (rows 1-15) is right: 3840 / 3840 elements equal the pad value 0"]
    assert bad[0, 0] == out["out"][0, 0]


@pytest.mark.parametrize("name", sorted(emu.FAULTS))
def test_faults_hit_fused_only(name):
    fault = emu.FAULTS[name]
    for cfg in ALL:
        case, inputs, out = _run(cfg)
        ref = tiles.tile_reference(inputs, cfg)
        if cfg.variant != "fused":
            got = fault(case, dict(out))
            assert np.array_equal(got["out"], out["out"]), f"{name} touched control {cfg.id}"
            continue
        if name.endswith("-sim"):
            with pytest.raises(Crash, match="SIGSEGV"):
                fault(case, dict(out))
            continue
        got = fault(case, dict(out))["out"]
        if cfg.valid_row == 0 or cfg.valid_col == 0:
            assert np.array_equal(got, out["out"])      # no valid region: nothing to get wrong
            continue
        with pytest.raises(tiles.TileMismatch):
            tiles.assert_tile_close(got, ref, cfg)
        assert tiles.padded_region_report(got, cfg)[0], "the board's padded rows are right"


def test_error_model_is_tight():
    """Two units in the last place off in one valid element is caught; the pad must be exact."""
    for dtype in tiles.DTYPES:
        cfg = tiles.TileConfig(8, 64, 3, 48, dtype, "min", "fused")
        _, inputs, out = _run(cfg)
        ref = tiles.tile_reference(inputs, cfg)
        got = out["out"].copy()
        _, u, _, _ = tiles.DTYPES[dtype]
        got[1, 7] = tiles.round_to(got[1, 7] * (1 + 4 * u), dtype)
        with pytest.raises(tiles.TileMismatch, match=r"row 1, col 7: 1 element"):
            tiles.assert_tile_close(got, ref, cfg)
        got = out["out"].copy()
        got[5, 0] = np.finfo(np.float32).min         # the dtype's finite min is not PTO's -inf pad
        with pytest.raises(tiles.TileMismatch, match=r"padded region \(rows 3-7 and cols 48-63\) is wrong: "
                                                     r"1 / 368 elements differ from the pad value -inf"):
            tiles.assert_tile_close(got, ref, cfg)


def test_pad_values_follow_pto():
    assert tiles.pad_value("zero", "bf16") == 0.0
    assert tiles.pad_value("max", "f16") == np.inf and tiles.pad_value("min", "f32") == -np.inf
    with pytest.raises(ValueError, match="pad 'nan'"):
        tiles.pad_value("nan", "f32")


def test_unaligned_rows_are_padded_to_blocks_in_ub():
    cfg = tiles.TileConfig(5, 40, 2, 33, "f16", "zero", "fused")
    assert not cfg.aligned and tiles.TileConfig(5, 40, 2, 33, "f32").aligned
    ub = emu.UB("f16")
    assert ub.alloc("x", 5, 40).shape == (5, 48)
