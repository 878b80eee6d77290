"""Every bad argument raises ValueError naming the parameter, its value and the limit."""

import numpy as np
import pytest

import gpuops

X = np.zeros((1, 4, 6, 5), np.float32)
W = np.zeros((2, 4, 3, 3), np.float32)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(stride=0), "stride 0 (height) must be at least 1"),
        (dict(stride=(1, -2)), "stride -2 (width) must be at least 1"),
        (dict(dilation=0), "dilation 0 (height) must be at least 1"),
        (dict(padding=-1), "padding -1 (height) must be at least 0"),
        (dict(padding=(0, 1, 2)), "padding must be an int or a pair of ints"),
        (dict(stride=1.5), "stride must be an int or a pair of ints, got 1.5"),
        (dict(groups=3), "groups 3 must divide the input channels 4"),
        (dict(groups=0), "groups 0 must be an int of at least 1"),
        (dict(padding_mode="circular"), "padding_mode 'circular' must be one of"),
        (dict(algorithm="winograd"), "algorithm 'winograd' must be one of"),
        (
            dict(padding=(6, 0), padding_mode="reflect"),
            "reflect padding 6 (top) must be smaller than the input height 6",
        ),
        (
            dict(padding=(0, 5), padding_mode="reflect"),
            "reflect padding 5 (left) must be smaller than the input width 5",
        ),
        (
            dict(dilation=4),
            "kernel height 3 with dilation 4 spans 9 cells, more than the padded input height 6",
        ),
    ],
)
def test_conv2d_rejects_bad_geometry(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gpuops.conv2d(X, W, **kwargs)


def test_kernel_larger_than_padded_input():
    with pytest.raises(ValueError, match=r"kernel width 7 with dilation 1 spans 7 cells, more than the padded "
                       r"input width 5 \(input 5 \+ 2 x padding 0\)"):  # fmt: skip
        gpuops.conv2d(X, np.zeros((1, 4, 3, 7), np.float32))


def test_groups_not_dividing_filters():
    with pytest.raises(ValueError, match=r"groups 2 must divide the output channels \(filters\) 3"):
        gpuops.conv2d(X, np.zeros((3, 2, 3, 3), np.float32), groups=2)


def test_weight_channel_mismatch():
    with pytest.raises(
        ValueError, match="weight has 3 input channels per filter, but input channels 4 / groups 1 = 4"
    ):
        gpuops.conv2d(X, np.zeros((2, 3, 3, 3), np.float32))


def test_bias_shape_mismatch():
    with pytest.raises(ValueError, match=r"bias shape \(3,\) must be \(2,\)"):
        gpuops.conv2d(X, W, np.zeros(3, np.float32))


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: gpuops.conv2d(np.zeros((4, 6)), W), r"input must have 3 or 4 dimensions .* got 2"),
        (lambda: gpuops.conv2d(X, np.zeros((2, 4, 3))), r"weight must have 4 dimensions .* got 3"),
        (lambda: gpuops.unfold(np.zeros((1, 1, 1, 4, 4)), 2), r"input must have 3 or 4 dimensions .* got 5"),
        (lambda: gpuops.fold(np.zeros((4,)), (3, 3), 2), r"input must have 2 or 3 dimensions .* got 1"),
        (lambda: gpuops.reflect_pad(np.zeros(5), 1), r"input must have 2 or 3 or 4 dimensions .* got 1"),
    ],
)
def test_wrong_ndim(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_non_numeric_input():
    with pytest.raises(ValueError, match="input must hold real numbers, got dtype <U1"):
        gpuops.reflect_pad(np.array([["a", "b"], ["c", "d"]]), 1)


def test_unfold_rejects_bad_arguments():
    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(ValueError, match=r"kernel_size 0 \(height\) must be at least 1"):
        gpuops.unfold(x, 0)
    with pytest.raises(ValueError, match="spans 5 cells, more than the padded input height 4"):
        gpuops.unfold(x, 5)
    with pytest.raises(ValueError, match=r"stride 0 \(width\) must be at least 1"):
        gpuops.unfold(x, 2, stride=(1, 0))


def test_fold_rejects_rows_not_multiple_of_kernel():
    with pytest.raises(
        ValueError, match="fold input has 10 rows, which is not a multiple of kernel_size 2x2 = 4"
    ):
        gpuops.fold(np.zeros((1, 10, 9)), (4, 4), 2)


def test_fold_rejects_wrong_block_count():
    with pytest.raises(ValueError, match=r"fold input has 8 columns .* gives 3 x 3 = 9 blocks"):
        gpuops.fold(np.zeros((1, 4, 8)), (4, 4), 2)


def test_fold_rejects_unknown_variant():
    with pytest.raises(ValueError, match="variant 'atomic' must be one of"):
        gpuops.fold(np.zeros((1, 4, 9)), (4, 4), 2, variant="atomic")


@pytest.mark.parametrize(
    "pads,message",
    [
        (3, "reflect padding 3 (left) must be smaller than the input width 3"),
        ((0, 0, 4, 0), "reflect padding 4 (top) must be smaller than the input height 4"),
        ((0, 0, 0, -1), "reflect padding -1 (bottom) must be at least 0"),
        ((1, 2), "padding must be an int or (left, right, top, bottom)"),
    ],
)
def test_reflect_pad_rejects_bad_pads(pads, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        gpuops.reflect_pad(np.zeros((1, 4, 3)), pads)


def test_empty_batch_gives_empty_output():
    y = gpuops.conv2d(np.zeros((0, 4, 6, 5), np.float32), W, padding=1)
    assert y.shape == (0, 2, 6, 5)
