"""Index maps for the pictures agree with the operations they describe (and with independent
loops where a map is the reverse of another)."""

import numpy as np
import pytest

import gpuops
from gpuops.maps import conv2d as conv_maps
from gpuops.maps import im2col as im2col_maps
from gpuops.maps import reflect_pad as reflect_maps
from gpuops.maps import unfold_fold as unfold_maps
from tests.support.cases import case_id, random_conv_cases

CASES = [c for c in random_conv_cases(30, seed=5) if c.padding_mode == "zeros"]
ALL_CASES = random_conv_cases(30, seed=5)


def _g(case):
    return gpuops.window_geometry(
        case.H, case.W, (case.kh, case.kw), case.stride, case.padding, case.dilation
    )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_unfold_source_map_reproduces_unfold(case, rng):
    x = rng.standard_normal((case.C, case.H, case.W)).astype(np.float32)
    g = _g(case)
    src = im2col_maps.unfold_source_map(case.C, g)
    via_map = np.where(src >= 0, x.reshape(-1)[np.maximum(src, 0)], 0)
    np.testing.assert_array_equal(
        via_map, gpuops.unfold(x, (case.kh, case.kw), case.dilation, case.padding, case.stride)
    )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_overlap_count_equals_fold_of_ones(case):
    g = _g(case)
    ones = np.ones((1, case.kh * case.kw, g.L), np.float32)
    folded = gpuops.fold(ones, (case.H, case.W), (case.kh, case.kw), case.dilation, case.padding, case.stride)
    np.testing.assert_array_equal(unfold_maps.overlap_count(g), folded[0, 0])


@pytest.mark.parametrize("case", CASES[:10], ids=case_id)
def test_patches_covering_are_the_columns_that_read_the_pixel(case):
    g = _g(case)
    src = im2col_maps.unfold_source_map(1, g)  # (KK, L) flat pixel index
    for y in range(case.H):
        for x in range(case.W):
            rows, cols = np.nonzero(src == y * case.W + x)
            expected = sorted((r // case.kw, r % case.kw, c) for r, c in zip(rows, cols, strict=True))
            assert sorted(unfold_maps.patches_covering(g, y, x)) == expected


def test_receptive_field_of_a_corner_with_padding():
    g = gpuops.window_geometry(5, 6, 3, stride=2, padding=1)
    rf = conv_maps.receptive_field(g, 0, 0)
    np.testing.assert_array_equal(rf.rows, [[-1, -1, -1], [0, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(rf.cols, [[-1, 0, 1]] * 3)
    assert rf.inside.sum() == 4
    reflected = conv_maps.receptive_field(g, 0, 0, "reflect")
    np.testing.assert_array_equal(reflected.source_rows[0], [1, 1, 1])  # row -1 mirrors row 1


def test_receptive_field_outside_output_is_rejected():
    g = gpuops.window_geometry(5, 5, 3)
    with pytest.raises(ValueError, match=r"output position \(3, 0\) is outside the output 3 x 3"):
        conv_maps.receptive_field(g, 3, 0)


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
                    rf = conv_maps.receptive_field(g, oh, ow)
                    want = x[0, 0, rf.rows[ki, kj], rf.cols[ki, kj]] if rf.inside[ki, kj] else 0
                    assert y[0, 0, oh, ow] == want


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_readers_of_is_the_reverse_of_the_receptive_field(case):
    """Every (output, tap) whose receptive field reads cell (ih, iw) -- after the padding rule --
    and nothing else: checked by brute force over all outputs."""
    g = _g(case)
    expected: dict[tuple[int, int], set] = {(ih, iw): set() for ih in range(case.H) for iw in range(case.W)}
    for oh in range(g.H_out):  # every output's receptive field, inverted
        for ow in range(g.W_out):
            rf = conv_maps.receptive_field(g, oh, ow, case.padding_mode)
            for ki, kj in zip(*np.nonzero(rf.source_rows >= 0), strict=True):
                cell = (int(rf.source_rows[ki, kj]), int(rf.source_cols[ki, kj]))
                expected[cell].add((oh, ow, int(ki), int(kj)))
    for (ih, iw), want in expected.items():
        got = {tuple(int(v) for v in r) for r in conv_maps.readers_of(g, ih, iw, case.padding_mode)}
        assert got == want, (ih, iw)


def test_readers_of_equals_the_gradient_of_conv_with_ones(rng):
    """Conv with all-ones weights: d(sum of outputs)/d(input cell) counts the taps that read it."""
    g = gpuops.window_geometry(7, 8, 3, stride=2, padding=1, dilation=2)
    counts = np.array([[len(conv_maps.readers_of(g, i, j)) for j in range(8)] for i in range(7)])
    # finite differences of the (linear) convolution: one-hot inputs
    w = np.ones((1, 1, 3, 3), np.float32)
    for i in range(7):
        for j in range(8):
            x = np.zeros((1, 1, 7, 8), np.float32)
            x[0, 0, i, j] = 1
            assert gpuops.conv2d(x, w, stride=2, padding=1, dilation=2).sum() == counts[i, j]


def test_copies_of_an_input_cell_in_x_unroll():
    g = gpuops.window_geometry(4, 5, 2, stride=1, padding=1)
    src = im2col_maps.unfold_source_map(2, g)
    for c, ih, iw in [(0, 0, 0), (1, 2, 3), (1, 3, 4)]:
        flat = (c * 4 + ih) * 5 + iw
        expected = sorted(map(tuple, np.argwhere(src == flat)))
        assert sorted(map(tuple, im2col_maps.copies_of(2, g, c, ih, iw))) == expected


def test_reflect_source_map_matches_reflect_pad():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    pads = (2, 4, 3, 1)
    rows, cols = reflect_maps.source_map(4, 5, pads)
    np.testing.assert_array_equal(x[rows, cols], gpuops.reflect_pad(x, pads))


def test_reflect_copies_of_a_cell_are_where_its_value_lands():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    pads = (2, 4, 3, 1)
    padded = gpuops.reflect_pad(x, pads)
    for y, xx in [(0, 0), (1, 2), (3, 4)]:
        expected = sorted(map(tuple, np.argwhere(padded == x[y, xx])))
        assert sorted(map(tuple, reflect_maps.copies_of(4, 5, pads, y, xx))) == expected


def test_column_and_position_round_trip():
    g = gpuops.window_geometry(6, 7, 2, stride=(1, 2))
    for l in range(g.L):
        assert im2col_maps.column_of(g, *im2col_maps.position_of(g, l)) == l
    assert im2col_maps.row_labels(2, g)[5] == (1, 0, 1)


def test_patch_cells_and_starts_agree():
    g = gpuops.window_geometry(9, 10, 3, stride=2, padding=1, dilation=2)
    starts_r, starts_c = unfold_maps.patch_starts(g)
    all_r, all_c = unfold_maps.all_patch_cells(g)
    for l in range(g.L):
        rows, cols = unfold_maps.patch_cells(g, l)
        oh, ow = divmod(l, g.W_out)
        assert (rows[0, 0], cols[0, 0]) == (starts_r[oh, ow], starts_c[oh, ow])
        np.testing.assert_array_equal(rows.ravel(), all_r[l])
        np.testing.assert_array_equal(cols.ravel(), all_c[l])


def test_shared_tile_holds_every_tap_of_the_block():
    from gpuops.conv2d import check_conv2d, tiled_launch

    p = check_conv2d((1, 2, 40, 50), (3, 2, 5, 5), None, 2, 2, 2)
    launch, g = tiled_launch(p), p.geometry
    for oh, ow in [(0, 0), (7, 13), (g.H_out - 1, g.W_out - 1)]:
        r0, r1, c0, c1 = conv_maps.shared_tile(launch, g, oh, ow)
        rf = conv_maps.receptive_field(g, oh, ow)
        assert r0 <= rf.rows.min() and rf.rows.max() < r1 and c0 <= rf.cols.min() and rf.cols.max() < c1


@pytest.mark.parametrize("side,pad", [(1, 0), (5, 0), (5, 2), (32, 0), (9, 4)])
def test_slider_limits_are_the_largest_settings_the_checks_accept(side, pad):
    """The largest kernel and dilation the pages offer, against the check stage: the window they
    allow is accepted by window_geometry and one step more is refused."""
    from gpuops.maps.limits import largest_dilation, largest_kernel

    def fits(k, dilation):
        try:
            gpuops.window_geometry(side, side, k, 1, pad, dilation)
        except ValueError:
            return False
        return True

    for dilation in (1, 2, 3):
        k = largest_kernel(side, pad, dilation)
        assert fits(k, dilation) and not fits(k + 1, dilation)
        assert largest_kernel(side, pad, dilation, cap=2) == min(2, k)
    for k in (2, 3, 5):
        dilation = largest_dilation(side, k, pad)
        if fits(k, 1):
            assert fits(k, dilation) and not fits(k, dilation + 1)
        else:  # no dilation fits: the slider stays at its floor
            assert dilation == 1
        assert largest_dilation(side, k, pad, cap=1) == 1
    assert largest_dilation(side, 1, pad) is None and largest_dilation(side, 1, pad, cap=4) == 4
