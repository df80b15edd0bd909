"""The census on hand-made arrays: counts, maxima, correlation and where the misses lie."""
import math

import numpy as np
import pytest

from accel_regress.golden.compare import Mismatch, assert_close, census


def test_identical_arrays_are_clean():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = census(x, x.copy())
    assert c.ok and c.differ == 0 and c.over_tolerance == 0 and c.max_abs == 0.0
    assert c.pearson == pytest.approx(1.0)


def test_counts_and_maxima():
    expected = np.zeros((4, 8))
    got = expected.copy()
    got[1, 2] = 0.5          # within atol
    got[2, 5] = -3.0         # over
    got[3, 7] = 2.0          # over
    c = census(got, expected, atol=1.0)
    assert (c.elements, c.differ, c.over_tolerance) == (32, 3, 2)
    assert c.max_abs == 3.0 and c.max_abs_index == (2, 5) and c.max_abs_allowed == 1.0
    assert c.mean_abs == pytest.approx(5.5 / 32)
    assert [w["index"] for w in c.worst] == [[2, 5], [3, 7]]
    assert c.worst[0]["got"] == -3.0 and c.worst[0]["expected"] == 0.0


def test_relative_tolerance_and_max_rel():
    expected = np.array([1.0, 10.0, 100.0])
    got = expected * np.array([1.01, 1.001, 1.2])
    c = census(got, expected, rtol=0.02)
    assert c.over_tolerance == 1 and c.max_rel == pytest.approx(0.2) and c.max_rel_index == (2,)


def test_per_element_tolerance_array():
    expected = np.zeros((2, 3))
    got = np.full((2, 3), 0.5)
    tol = np.array([[1.0, 1.0, 0.1], [1.0, 0.1, 1.0]])
    assert census(got, expected, tol=tol).over_tolerance == 2


def test_pearson_matches_numpy():
    rng = np.random.default_rng(0)
    e = rng.standard_normal(1000)
    g = e + 0.3 * rng.standard_normal(1000)
    assert census(g, e, atol=10).pearson == pytest.approx(np.corrcoef(g, e)[0, 1], rel=1e-9)


def test_min_corr_fails_an_uncorrelated_output_within_tolerance():
    rng = np.random.default_rng(1)
    e = rng.standard_normal(500)
    g = rng.standard_normal(500)
    with pytest.raises(Mismatch) as info:
        assert_close(g, e, atol=100, min_corr=0.99)
    assert "Pearson correlation" in str(info.value) and "0.99 required" in str(info.value)


def test_region_names_the_garbage_row_and_columns():
    # Seed 002's symptom: row 0 col 0 right, cols 1-15 garbage, padded rows right.
    e = np.zeros((16, 256), np.float32)
    e[0] = np.arange(1, 257)
    g = e.copy()
    g[0, 1:16] = 1e6
    c = census(g, e, atol=1e-6, rtol=1e-6)
    assert c.over_tolerance == 15
    assert c.where() == "row 0, cols 1-15: 15 elements"
    assert "row 0, cols 1-15" in c.describe()


def test_regions_merge_rows_with_the_same_columns():
    e = np.zeros((8, 10))
    g = e.copy()
    g[2:5, 3:6] = 1
    c = census(g, e)
    assert c.regions == [{"rows": [2, 4], "cols": [3, 5], "count": 9}]
    assert c.where() == "rows 2-4, cols 3-5: 9 elements"


def test_scattered_misses_are_summarized_by_row_and_column_spans():
    rng = np.random.default_rng(2)
    e = np.zeros((64, 256))
    g = e.copy()
    g[:, 64:128] = rng.standard_normal((64, 64)) + 5     # one wrong partition, 64 columns wide
    g[::2, 64:128:3] = 0                                   # holes make it fragmented
    c = census(g, e, atol=1e-3)
    assert c.spread == {"rows": [[0, 63]], "cols": [[64, 127]]}
    assert c.where().startswith("scattered over rows 0-63; cols 64-127")


def test_shape_mismatch_is_a_failure_with_both_shapes():
    c = census(np.zeros((1, 4, 3)), np.zeros((1, 4, 12)))
    assert not c.ok
    assert c.shape_error == "shape mismatch: got (1, 4, 3), expected (1, 4, 12)"


def test_nan_against_a_number_is_over_any_tolerance():
    c = census(np.array([1.0, np.nan]), np.array([1.0, 2.0]), atol=1e9)
    assert c.over_tolerance == 1 and math.isinf(c.max_abs)


def test_matching_nans_and_infinities_are_equal():
    x = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert census(x, x.copy()).ok


def test_large_arrays_are_processed_in_chunks_with_the_same_answer():
    rng = np.random.default_rng(3)
    e = rng.standard_normal((3000, 2000)).astype(np.float32)     # 6M elements: more than one chunk
    g = e.copy()
    g[2999, 1999] += 1
    g[1500, 7] -= 2
    c = census(g, e, atol=1e-3)
    assert c.over_tolerance == 2 and c.max_abs_index == (1500, 7)
    assert c.regions == [{"rows": [1500, 1500], "cols": [7, 7], "count": 1},
                         {"rows": [2999, 2999], "cols": [1999, 1999], "count": 1}]


def test_census_serializes_to_json():
    import json
    c = census(np.array([0.0, np.nan]), np.array([0.0, 1.0]))
    json.dumps(c.to_json())


def test_a_finite_value_where_the_reference_is_infinite_is_over_any_tolerance():
    expected = np.array([[1.0, -np.inf], [np.inf, 2.0]])
    got = np.array([[1.0, -3.0e38], [np.inf, 2.0]])
    c = census(got, expected, atol=1e-3, rtol=1e-2)
    assert c.over_tolerance == 1 and c.regions == [{"rows": [0, 0], "cols": [1, 1], "count": 1}]
