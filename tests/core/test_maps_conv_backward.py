"""The index maps behind the Backward & transposed page (gpuops/maps/conv_backward.py), each against
an independent brute-force loop or against the operation itself run on one-hot / all-ones inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import gpuops
from gpuops.maps import conv_backward as maps
from tests.support.cases import ODD_GEOMETRIES


def geometry(case):
    H, W, K, S, P, D = case
    return gpuops.window_geometry(H, W, K, S, P, D)


def brute_taps(case):
    """Every (oh, ow, ki, kj, ih, iw) of the forward convolution whose tap reads a real input cell."""
    H, W, K, S, P, D = case
    g = geometry(case)
    found = []
    for oh, ow, ki, kj in itertools.product(range(g.H_out), range(g.W_out), range(K), range(K)):
        ih, iw = oh * S - P + ki * D, ow * S - P + kj * D
        if 0 <= ih < H and 0 <= iw < W:
            found.append((oh, ow, ki, kj, ih, iw))
    return found


@pytest.mark.parametrize("case", ODD_GEOMETRIES)
def test_scatter_targets_and_weight_pairs_are_the_forward_taps(case):
    g = geometry(case)
    taps = brute_taps(case)
    for oh, ow in itertools.product(range(g.H_out), range(g.W_out)):
        got = {tuple(r) for r in maps.scatter_targets(g, oh, ow).tolist()}
        assert got == {(ih, iw, ki, kj) for o1, o2, ki, kj, ih, iw in taps if (o1, o2) == (oh, ow)}
    for ki, kj in itertools.product(range(g.KH), range(g.KW)):
        got = {tuple(r) for r in maps.weight_pairs(g, ki, kj).tolist()}
        assert got == {(oh, ow, ih, iw) for oh, ow, k1, k2, ih, iw in taps if (k1, k2) == (ki, kj)}


@pytest.mark.parametrize("case", ODD_GEOMETRIES)
def test_output_padding_gives_back_the_input_size(case):
    """The smallest output_padding for which conv_transpose2d of the forward output's shape has
    the input's shape, found by trying."""
    H, W, K, S, P, D = case
    g = geometry(case)
    wanted = []
    for size, out in ((H, g.H_out), (W, g.W_out)):
        wanted.append(next(op for op in range(S) if (out - 1) * S - 2 * P + D * (K - 1) + op + 1 == size))
    assert maps.output_padding(g) == tuple(wanted)
    tg = maps.transposed_of(g)
    y = gpuops.conv_transpose2d(
        np.zeros((1, 1, g.H_out, g.W_out), np.float32),
        np.zeros((1, 1, K, K), np.float32),
        stride=S,
        padding=P,
        output_padding=tg.output_padding,
        dilation=D,
    )
    assert y.shape[-2:] == (H, W) == (tg.H_out, tg.W_out)


@pytest.mark.parametrize("case", ODD_GEOMETRIES)
def test_stamp_frames_add_one_stamp_each_and_end_at_conv_transpose2d(case, rng):
    H, W, K, S, P, D = case
    g = geometry(case)
    tg = maps.transposed_of(g)
    x = rng.integers(-3, 4, (g.H_out, g.W_out)).astype(np.float32)
    w = rng.integers(-2, 3, (K, K)).astype(np.float32)
    frames = maps.stamp_frames(tg, x, w)
    top, bottom, left, right = frames.canvas
    assert not frames.sums[0].any()
    for k in range(x.size):  # frame k + 1 adds x[i, j] * w[ki, kj] at (i*S - P + ki*D, j*S - P + kj*D)
        i, j = divmod(k, g.W_out)
        step = np.zeros_like(frames.sums[0])
        for ki, kj in itertools.product(range(K), range(K)):
            step[i * S - P + ki * D - top, j * S - P + kj * D - left] += x[i, j] * w[ki, kj]
        np.testing.assert_array_equal(frames.sums[k + 1] - frames.sums[k], step)
    expected = gpuops.conv_transpose2d(
        x[None, None], w[None, None], stride=S, padding=P, output_padding=tg.output_padding, dilation=D
    )[0, 0]
    np.testing.assert_allclose(frames.cropped(), expected, atol=1e-5)
    assert (top, left) == (min(0, -P), min(0, -P)) and bottom >= H - 1 and right >= W - 1


@pytest.mark.parametrize("case", ODD_GEOMETRIES)
def test_overlap_counts_per_axis_and_per_phase(case):
    _, _, K, S, _, D = case
    g = geometry(case)
    tg = maps.transposed_of(g)
    rows, cols = maps.axis_overlap(tg)
    np.testing.assert_array_equal(rows[:, None] * cols[None, :], maps.overlap_count(tg))
    # brute force along one axis of a long uncropped canvas: the stamps of 40 input cells
    canvas = np.zeros(40 * S + K * D)
    for i, k in itertools.product(range(40), range(K)):
        canvas[i * S + k * D] += 1
    middle = canvas[K * D + S : K * D + 2 * S]  # S cells far from both ends, starting at phase 0
    np.testing.assert_array_equal(maps.stamps_per_phase(K, S, D), middle[(np.arange(S) - (K * D + S)) % S])


def test_checkerboard_phases():
    assert list(maps.stamps_per_phase(3, 2, 1)) == [2, 1]
    assert list(maps.stamps_per_phase(4, 2, 1)) == [2, 2]
    assert list(maps.stamps_per_phase(3, 2, 2)) == [3, 0]


@pytest.mark.parametrize("case", ODD_GEOMETRIES)
def test_terms_sum_to_what_the_kernels_compute(case, rng):
    H, W, K, S, P, D = case
    g = geometry(case)
    x = rng.integers(0, 5, (H, W)).astype(np.float32)
    dy = rng.integers(-3, 4, (g.H_out, g.W_out)).astype(np.float32)
    w = rng.integers(-2, 3, (K, K)).astype(np.float32)
    dx, dw, _ = gpuops.conv2d_backward(
        dy[None, None], x[None, None], w[None, None], stride=S, padding=P, dilation=D
    )
    for ki, kj in itertools.product(range(K), range(K)):
        assert maps.weight_terms(dy, x, g, ki, kj).total == pytest.approx(float(dw[0, 0, ki, kj]))
    scattered = np.zeros((H, W))
    for oh, ow in itertools.product(range(g.H_out), range(g.W_out)):
        t = maps.scatter_terms(dy, w, g, oh, ow)
        np.add.at(scattered, (t.targets[:, 0], t.targets[:, 1]), t.product)
    np.testing.assert_allclose(scattered, dx[0, 0], atol=1e-5)


@pytest.mark.parametrize("H,W,pads", [(4, 5, (2, 1, 1, 2)), (1, 6, (3, 5, 0, 0)), (7, 3, (2, 2, 6, 0))])
def test_reflect_receivers_and_terms(H, W, pads, rng):
    left, right, top, bottom = pads
    ids = np.arange(H * W).reshape(H, W)
    padded = np.pad(ids, ((top, bottom), (left, right)), mode="reflect")  # NumPy's reflect = PyTorch's
    assert maps.padded_shape(H, W, pads) == padded.shape
    for oy, ox in itertools.product(range(padded.shape[0]), range(padded.shape[1])):
        assert maps.reflect_receiver(H, W, pads, oy, ox) == divmod(int(padded[oy, ox]), W)
    dy = rng.integers(-3, 4, padded.shape).astype(np.float32)
    dx = gpuops.reflect_pad_backward(dy, pads)
    for y, x in itertools.product(range(H), range(W)):
        t = maps.reflect_terms(dy, pads, y, x)
        assert {tuple(c) for c in t.cells.tolist()} == {
            tuple(c) for c in np.argwhere(padded == y * W + x).tolist()
        }
        assert t.total == pytest.approx(float(dx[y, x]))
    with pytest.raises(ValueError, match="outside the padded"):
        maps.reflect_receiver(H, W, pads, padded.shape[0], 0)


@pytest.mark.parametrize("side,pad,dil", [(2, 0, 1), (7, 1, 3), (3, 3, 2), (10, 0, 1)])
def test_setting_limits_are_the_largest_valid_values(side, pad, dil):
    def valid(k, p, d):
        try:
            gpuops.window_geometry(side, side, k, 1, p, d)
        except ValueError:
            return False
        return True

    k = maps.largest_kernel(side, pad, dil, cap=5)
    assert valid(k, pad, dil) and (k == 5 or not valid(k + 1, pad, dil))
    d = maps.largest_dilation(side, 3, pad, cap=3)
    assert valid(3, pad, d) or not valid(3, pad, 1)
    assert d == 3 or not valid(3, pad, d + 1)
    assert maps.largest_padding(3, dil, cap=3) == min(3, 2 * dil)
    assert maps.clamp_cell(9, -2, (side, side)) == (side - 1, 0)


def test_detail_crop_finds_the_textured_square(rng):
    plane = np.full((60, 80), 0.5, np.float32)
    plane[30:37, 50:58] = rng.random((7, 8))
    crop = maps.detail_crop(plane, 7, 8)
    assert (crop.top, crop.left, crop.bottom, crop.right) == (30, 50, 36, 57)
    np.testing.assert_array_equal(crop.values, plane[30:37, 50:58])
    assert maps.detail_crop(plane[:5, :5], 7, 8).values.shape == (5, 5)  # an image smaller than the crop


def test_flipped_kernel_pairs_with_the_flipped_taps():
    w = np.arange(6.0).reshape(2, 3)
    f = maps.flipped(w)
    for a, b in itertools.product(range(2), range(3)):
        assert f[a, b] == w[1 - a, 2 - b]
    g = gpuops.window_geometry(5, 5, (2, 3), 1, 1)
    src = maps.gradient_sources(g, 2, 2)
    for (ki, kj), (a, b) in zip(src.taps, src.flipped, strict=True):
        assert w[ki, kj] == f[a, b]
