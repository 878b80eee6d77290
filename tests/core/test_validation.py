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
    with pytest.raises(
        ValueError,
        match=r"kernel width 7 with dilation 1 spans 7 cells, more than the padded "
        r"input width 5 \(input 5 \+ 2 x padding 0\)",
    ):
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


# ---- the backward pass and the transposed convolution ---------------------------------------------
XT = np.zeros((1, 4, 5, 6), np.float32)  # conv_transpose2d input: 4 channels
WT = np.zeros((4, 3, 3, 3), np.float32)  # (in_channels, out_channels/groups, kh, kw)


def _escaped(message):
    return message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(output_padding=1), "output_padding 1 (height) must be smaller than stride 1 or dilation 1"),
        (
            dict(stride=2, output_padding=(1, 2)),
            "output_padding 2 (width) must be smaller than stride 2 or dilation 1",
        ),
        (dict(output_padding=-1), "output_padding -1 (height) must be at least 0"),
        (dict(stride=0), "stride 0 (height) must be at least 1"),
        (dict(dilation=(1, 0)), "dilation 0 (width) must be at least 1"),
        (dict(padding=-2), "padding -2 (height) must be at least 0"),
        (dict(groups=3), "groups 3 must divide the input channels 4"),
        (dict(groups=0), "groups 0 must be an int of at least 1"),
        (dict(algorithm="fft"), "algorithm 'fft' must be one of"),
        (
            dict(padding=4),
            "conv_transpose2d output height -1 = (input 5 - 1) x stride 1 - 2 x padding 4 + dilation 1 x "
            "(kernel 3 - 1) + output_padding 0 + 1 must be at least 1",
        ),
    ],
)
def test_conv_transpose2d_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=_escaped(message)):
        gpuops.conv_transpose2d(XT, WT, **kwargs)


def test_conv_transpose2d_rejects_bad_shapes():
    with pytest.raises(
        ValueError, match=r"weight has 5 input channels \(its first dimension\), but the input has 4"
    ):
        gpuops.conv_transpose2d(XT, np.zeros((5, 3, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"bias shape \(3,\) must be \(6,\)"):
        gpuops.conv_transpose2d(XT, np.zeros((4, 3, 3, 3), np.float32), np.zeros(3, np.float32), groups=2)
    with pytest.raises(ValueError, match=r"input must have 3 or 4 dimensions .* got 2"):
        gpuops.conv_transpose2d(np.zeros((5, 6)), WT)
    with pytest.raises(ValueError, match=r"weight must have 4 dimensions .* got 3"):
        gpuops.conv_transpose2d(XT, np.zeros((4, 3, 3)))
    with pytest.raises(ValueError, match="weight kernel size 0x3 must be at least 1x1"):
        gpuops.conv_transpose2d(XT, np.zeros((4, 3, 0, 3)))


DY = np.zeros((1, 2, 4, 3), np.float32)  # conv2d(X, W) output: (1, 2, 4, 3)


@pytest.mark.parametrize(
    "call,message",
    [
        (
            lambda: gpuops.conv2d_backward(np.zeros((1, 2, 4, 4)), X, W),
            "grad_output shape (1, 2, 4, 4) must equal the forward output's shape (1, 2, 4, 3)",
        ),
        (
            lambda: gpuops.conv2d_backward(DY[0], X, W),
            "grad_output shape (2, 4, 3) must equal the forward output's shape (1, 2, 4, 3)",
        ),
        (
            lambda: gpuops.conv2d_backward(DY, X, W, algorithm="winograd"),
            "algorithm 'winograd' must be one of",
        ),
        (
            lambda: gpuops.conv2d_backward(DY, X, W, weight_algorithm="scatter"),
            "weight_algorithm 'scatter' must be one of",
        ),
        (lambda: gpuops.conv2d_backward(DY, X, W, groups=3), "groups 3 must divide the input channels 4"),
        (
            lambda: gpuops.conv2d_backward(DY, X, W, padding=(0, 5), padding_mode="reflect"),
            "reflect padding 5 (left) must be smaller than the input width 5",
        ),
        (lambda: gpuops.conv2d_backward(DY, X, W, stride=0), "stride 0 (height) must be at least 1"),
        (
            lambda: gpuops.conv2d_backward(DY, X, np.zeros((2, 3, 3, 3))),
            "weight has 3 input channels per filter, but input channels 4 / groups 1 = 4",
        ),
        (
            lambda: gpuops.conv2d_grad_input(DY, (4, 6), W),
            "input must have 3 or 4 dimensions ((C, H, W) or (N, C, H, W)), got 2",
        ),
        (
            lambda: gpuops.conv2d_grad_weight(DY, X, (2, 4, 3, 3), algorithm="gather"),
            "weight_algorithm 'gather' must be one of",
        ),
    ],
)
def test_conv2d_backward_rejects_bad_arguments(call, message):
    with pytest.raises(ValueError, match=_escaped(message)):
        call()


@pytest.mark.parametrize(
    "shape,pads,message",
    [
        (
            (1, 4, 6),
            (3, 3, 0, 0),
            "grad_output width 6 leaves an input width of 0 after padding left 3 + right 3",
        ),
        (
            (1, 3, 6),
            (0, 0, 2, 1),
            "grad_output height 3 leaves an input height of 0 after padding top 2 + bottom 1",
        ),
        ((1, 7, 6), (3, 0, 0, 0), "reflect padding 3 (left) must be smaller than the input width 3"),
        ((1, 7, 6), (0, 0, 1, 4), "reflect padding 4 (bottom) must be smaller than the input height 2"),
        ((1, 7, 6), (0, 0, -1, 0), "reflect padding -1 (top) must be at least 0"),
        ((1, 7, 6), (1, 2), "padding must be an int or (left, right, top, bottom)"),
        ((6,), 1, "grad_output must have 2 or 3 or 4 dimensions"),
    ],
)
def test_reflect_pad_backward_rejects_bad_arguments(shape, pads, message):
    with pytest.raises(ValueError, match=_escaped(message)):
        gpuops.reflect_pad_backward(np.zeros(shape, np.float32), pads)


def test_reflect_pad_backward_rejects_unknown_algorithm():
    with pytest.raises(ValueError, match="algorithm 'atomic' must be one of"):
        gpuops.reflect_pad_backward(np.zeros((5, 5), np.float32), 1, algorithm="atomic")


def test_gemm_refuses_matrices_that_do_not_multiply():
    with pytest.raises(ValueError, match="x_unroll has 26 rows, but filter_matrix has 27 columns"):
        gpuops.gemm(np.zeros((8, 27), np.float32), np.zeros((26, 40), np.float32))
    with pytest.raises(ValueError, match=r"filter_matrix must have 2 dimensions \(\(M, K\)\), got 3"):
        gpuops.gemm(np.zeros((1, 8, 27), np.float32), np.zeros((27, 40), np.float32))
