"""Index maps for the pictures agree with the operations they describe."""

import numpy as np
import pytest

import gpuops
from gpuops import indexmaps
from gpuops.indexmath import reflect_index
from tests.cases import case_id, random_conv_cases

CASES = [c for c in random_conv_cases(30, seed=5) if c.padding_mode == "zeros"]


def _g(case):
    return gpuops.window_geometry(
        case.H, case.W, (case.kh, case.kw), case.stride, case.padding, case.dilation
    )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_unfold_source_map_reproduces_unfold(case, rng):
    x = rng.standard_normal((case.C, case.H, case.W)).astype(np.float32)
    g = _g(case)
    src = indexmaps.unfold_source_map(case.C, g)
    via_map = np.where(src >= 0, x.reshape(-1)[np.maximum(src, 0)], 0)
    np.testing.assert_array_equal(
        via_map, gpuops.unfold(x, (case.kh, case.kw), case.dilation, case.padding, case.stride)
    )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_overlap_count_equals_fold_of_ones(case):
    g = _g(case)
    ones = np.ones((1, case.kh * case.kw, g.L), np.float32)
    folded = gpuops.fold(ones, (case.H, case.W), (case.kh, case.kw), case.dilation, case.padding, case.stride)
    np.testing.assert_array_equal(indexmaps.overlap_count(g), folded[0, 0])


@pytest.mark.parametrize("case", CASES[:10], ids=case_id)
def test_fold_contributors_are_the_columns_that_read_the_pixel(case):
    g = _g(case)
    src = indexmaps.unfold_source_map(1, g)  # (KK, L) flat pixel index
    for y in range(case.H):
        for x in range(case.W):
            rows, cols = np.nonzero(src == y * case.W + x)
            expected = sorted((r // case.kw, r % case.kw, c) for r, c in zip(rows, cols, strict=True))
            assert sorted(indexmaps.fold_contributors(g, y, x)) == expected


def test_receptive_field_of_a_corner_with_padding():
    g = gpuops.window_geometry(5, 6, 3, stride=2, padding=1)
    rf = indexmaps.receptive_field(g, 0, 0)
    np.testing.assert_array_equal(rf.rows, [[-1, -1, -1], [0, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(rf.cols, [[-1, 0, 1]] * 3)
    assert rf.inside.sum() == 4
    np.testing.assert_array_equal(rf.padded_rows, rf.rows + 1)
    reflected = indexmaps.receptive_field(g, 0, 0, "reflect")
    np.testing.assert_array_equal(reflected.source_rows[0], [1, 1, 1])  # row -1 mirrors row 1


def test_receptive_field_outside_output_is_rejected():
    g = gpuops.window_geometry(5, 5, 3)
    with pytest.raises(ValueError, match=r"output position \(3, 0\) is outside the output 3 x 3"):
        indexmaps.receptive_field(g, 3, 0)


def test_receptive_field_reads_what_conv_multiplies(rng):
    """A one-hot weight at tap (ki, kj) makes conv2d copy exactly the cell the map names."""
    x = rng.standard_normal((1, 1, 7, 9)).astype(np.float32)
    g = gpuops.window_geometry(7, 9, (3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1))
    for ki in range(3):
        for kj in range(2):
            w = np.zeros((1, 1, 3, 2), np.float32)
            w[0, 0, ki, kj] = 1
            y = gpuops.conv2d(x, w, stride=(2, 3), padding=(1, 1), dilation=(2, 1))
            for oh in range(g.H_out):
                for ow in range(g.W_out):
                    rf = indexmaps.receptive_field(g, oh, ow)
                    want = x[0, 0, rf.rows[ki, kj], rf.cols[ki, kj]] if rf.inside[ki, kj] else 0
                    assert y[0, 0, oh, ow] == want


def test_reflect_source_map_matches_reflect_pad():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    pads = (2, 4, 3, 1)
    rows, cols = indexmaps.reflect_source_map(4, 5, pads)
    np.testing.assert_array_equal(x[rows, cols], gpuops.reflect_pad(x, pads))


def test_reflect_index_formula_examples():
    # i = -1 -> 1, -2 -> 2, size -> size-2, interior unchanged
    assert [int(reflect_index(i, 4)) for i in (-3, -2, -1, 0, 3, 4, 5, 6)] == [3, 2, 1, 0, 3, 2, 1, 0]


def test_column_and_position_round_trip():
    g = gpuops.window_geometry(6, 7, 2, stride=(1, 2))
    for l in range(g.L):
        assert indexmaps.column_of(g, *indexmaps.position_of(g, l)) == l
    assert indexmaps.row_labels(2, g)[5] == (1, 0, 1)
