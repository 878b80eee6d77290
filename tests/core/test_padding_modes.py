"""conv2d's padding strings "valid" and "same" (issue 27, item 5) against PyTorch: F.conv2d for
zero padding, nn.Conv2d for padding_mode="reflect" (the only other mode gpuops has), on
reproducible random geometries (odd and even kernels, dilation 1-3, groups, non-square), for
every algorithm, forward and backward; the CuPy half (-m gpu) runs the CUDA kernels, with NaN
poisoned outputs. "same" with an odd dilation*(k-1) pads one cell more on the bottom / right.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import gpuops
from gpuops.checks import same_pads
from gpuops.conv2d import HOPPER_ALGORITHMS, OPERAND_ROUNDING, PRECISIONS
from tests.support.helpers import BACKENDS, host, on

backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)
# v13 and v14 run groups of 32k channels only: their "same" and "valid" cases are in
# test_conv2d_precision and test_conv2d_pixel_rows
FORWARD_ALGORITHMS = (*(a for a in gpuops.ALL_ALGORITHMS if a not in HOPPER_ALGORITHMS), "auto")
INPUT_ALGORITHMS = (*gpuops.GRAD_INPUT_ALGORITHMS, "auto")
WEIGHT_ALGORITHMS = (*gpuops.GRAD_WEIGHT_ALGORITHMS, "auto")
TOL = dict(rtol=1e-4, atol=2e-4)


@dataclass(frozen=True)
class PadCase:
    N: int
    C: int
    H: int
    W: int
    M: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: str
    dilation: tuple[int, int]
    groups: int
    padding_mode: str
    bias: bool

    def arrays(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        x = rng.standard_normal((self.N, self.C, self.H, self.W)).astype(np.float32)
        w = rng.standard_normal((self.M, self.C // self.groups, self.kh, self.kw)).astype(np.float32)
        b = rng.standard_normal(self.M).astype(np.float32) if self.bias else None
        return x, w, b

    def kwargs(self) -> dict:
        return dict(
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
            padding_mode=self.padding_mode,
        )

    @property
    def asymmetric(self) -> bool:
        top, bottom, left, right = same_pads((self.kh, self.kw), self.dilation)
        return self.padding == "same" and (top != bottom or left != right)

    def torch_layer(self, w: np.ndarray, b: np.ndarray | None, torch):
        """nn.Conv2d with these weights and settings: the reference (a missing bias is zero)."""
        layer = torch.nn.Conv2d(self.C, self.M, (self.kh, self.kw), bias=True, **self.kwargs())
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b if b is not None else np.zeros(self.M, np.float32)))
        return layer


def _reflect_fits(H: int, W: int, pads: tuple[int, int, int, int]) -> bool:
    top, bottom, left, right = pads
    return max(top, bottom) < H and max(left, right) < W


def padding_cases(count: int, seed: int) -> list[PadCase]:
    """Hand-picked corners, then random cases: "same" at stride 1, "valid" at strides 1-3."""
    cases = [
        PadCase(1, 2, 6, 7, 3, 2, 2, (1, 1), "same", (1, 1), 1, "zeros", True),  # top/left 0, bottom/right 1
        PadCase(2, 3, 5, 8, 2, 4, 3, (1, 1), "same", (1, 1), 1, "zeros", False),  # 1 + 2 rows, 1 + 1 columns
        PadCase(1, 2, 9, 6, 2, 2, 5, (1, 1), "same", (3, 2), 1, "zeros", True),  # dilation 3: 1 + 2 rows
        PadCase(1, 4, 7, 9, 4, 3, 2, (1, 1), "same", (2, 3), 2, "reflect", True),  # 2 + 2 rows, 1 + 2 columns
        PadCase(1, 6, 8, 11, 6, 4, 4, (1, 1), "same", (1, 1), 6, "zeros", True),  # depthwise (v6), 1 + 2
        PadCase(1, 6, 8, 11, 12, 2, 3, (1, 1), "same", (1, 1), 6, "reflect", False),  # depthwise, 2 per group
        PadCase(1, 3, 1, 9, 2, 2, 2, (1, 1), "same", (1, 1), 1, "zeros", True),  # one row, even kernel
        PadCase(2, 3, 7, 4, 2, 1, 1, (1, 1), "same", (1, 1), 1, "zeros", True),  # 1x1: nothing to pad
        PadCase(1, 16, 19, 23, 20, 4, 4, (1, 1), "same", (1, 1), 1, "zeros", True),  # > 8 filters, 1 + 2
        PadCase(1, 2, 6, 9, 3, 3, 4, (2, 3), "valid", (1, 2), 1, "zeros", True),  # strided valid
        PadCase(1, 2, 5, 5, 1, 5, 5, (1, 1), "valid", (1, 1), 1, "reflect", False),  # kernel == input
    ]
    rng = np.random.default_rng(seed)
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        C, M = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
        kh, kw = (int(v) for v in rng.integers(1, 7, size=2))  # odd and even
        dil = tuple(int(v) for v in rng.integers(1, 4, size=2))
        H, W = (int(v) for v in rng.integers(1, 16, size=2))
        padding = str(rng.choice(["same", "same", "valid"]))
        stride = (1, 1) if padding == "same" else tuple(int(v) for v in rng.integers(1, 4, size=2))
        mode = str(rng.choice(["zeros", "reflect"]))
        if padding == "valid" and (dil[0] * (kh - 1) >= H or dil[1] * (kw - 1) >= W):
            continue  # the kernel must fit the unpadded input
        if mode == "reflect" and padding == "same" and not _reflect_fits(H, W, same_pads((kh, kw), dil)):
            continue  # PyTorch too refuses reflect pads as large as the input (test_reflect_pads_too_large)
        cases.append(
            PadCase(
                int(rng.integers(1, 3)),
                C,
                H,
                W,
                M,
                kh,
                kw,
                stride,
                padding,
                dil,
                groups,
                mode,
                bool(rng.integers(0, 2)),
            )
        )
    return cases


def case_id(case: PadCase) -> str:
    return (
        f"N{case.N}C{case.C}x{case.H}x{case.W}-M{case.M}k{case.kh}x{case.kw}-{case.padding}-s{case.stride}"
        f"d{case.dilation}g{case.groups}-{case.padding_mode}"
    ).replace(" ", "")


CASES = padding_cases(32, seed=27)


def torch_forward(case: PadCase, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, torch) -> np.ndarray:
    """F.conv2d for zero padding (its padding strings), nn.Conv2d for reflect."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "padding='same' with even kernel lengths ... a zero-padded copy"
        if case.padding_mode == "zeros":
            bias = None if b is None else torch.from_numpy(b)
            return torch.nn.functional.conv2d(
                torch.from_numpy(x),
                torch.from_numpy(w),
                bias,
                case.stride,
                case.padding,
                case.dilation,
                case.groups,
            ).numpy()
        return case.torch_layer(w, b, torch)(torch.from_numpy(x)).numpy()


# ---- the rule --------------------------------------------------------------------------------------
def test_cases_cover_what_the_issue_asks():
    assert {c.padding for c in CASES} == {"same", "valid"}
    assert {c.padding_mode for c in CASES} == {"zeros", "reflect"}
    assert any(c.asymmetric for c in CASES) and any(c.padding == "same" and not c.asymmetric for c in CASES)
    assert any(c.groups > 1 for c in CASES) and any(c.H != c.W for c in CASES)
    assert {d for c in CASES for d in c.dilation} == {1, 2, 3}
    assert {c.kh % 2 for c in CASES} == {0, 1}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_same_splits_the_padding_as_nn_conv2d_does(case, torch):
    """nn.Conv2d(padding="same") keeps its F.pad amounts in _reversed_padding_repeated_twice:
    (left, right, top, bottom), the order of our geometry's pads."""
    plan = gpuops.plan_conv2d(
        (case.N, case.C, case.H, case.W),
        (case.M, case.C // case.groups, case.kh, case.kw),
        None,
        **case.kwargs(),
        algorithm="direct",
    )
    g = plan.geometry
    if case.padding == "valid":
        assert g.pads == (0, 0, 0, 0)
        return
    layer = torch.nn.Conv2d(
        case.C, case.M, (case.kh, case.kw), padding="same", dilation=case.dilation, groups=case.groups
    )
    assert g.pads == tuple(layer._reversed_padding_repeated_twice)
    assert (g.H_out, g.W_out) == (case.H, case.W)
    assert g.pad_bottom - g.pad_top in (0, 1) and g.pad_right - g.pad_left in (0, 1)


def test_same_pads_by_hand():
    assert same_pads((2, 2), (1, 1)) == (0, 1, 0, 1)  # the extra cell after, as PyTorch
    assert same_pads((4, 3), (1, 1)) == (1, 2, 1, 1)
    assert same_pads((2, 5), (3, 2)) == (1, 2, 4, 4)
    assert same_pads((1, 1), (3, 3)) == (0, 0, 0, 0)


# ---- forward -----------------------------------------------------------------------------------------
@backends
@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_same_and_valid_equal_torch(case, algorithm, xp, rng, torch):
    x, w, b = case.arrays(rng)
    y = gpuops.conv2d(*on(xp, x, w, b), algorithm=algorithm, **case.kwargs())
    assert isinstance(y, xp.ndarray) and y.dtype == np.float32
    precision = PRECISIONS.get(algorithm, "fp32")
    if precision != "fp32":  # the sums of the rounded operands (tests/core/test_conv2d_precision.py)
        x, w = OPERAND_ROUNDING[precision](x), OPERAND_ROUNDING[precision](w)
    ref = torch_forward(case, x, w, b, torch)
    assert y.shape == ref.shape
    if case.padding == "same":
        assert y.shape[2:] == (case.H, case.W)
    np.testing.assert_allclose(host(y), ref, **TOL)


@backends
def test_unbatched_input_with_same(xp, rng, torch):
    x = rng.standard_normal((3, 6, 9)).astype(np.float32)
    w = rng.standard_normal((2, 3, 2, 4)).astype(np.float32)
    y = gpuops.conv2d(*on(xp, x, w), padding="same")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding="same").numpy()
    assert y.shape == (2, 6, 9)
    np.testing.assert_allclose(host(y), ref, **TOL)


def test_valid_is_padding_zero(rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    for mode in ("zeros", "reflect"):
        np.testing.assert_array_equal(
            gpuops.conv2d(x, w, None, (2, 1), "valid", (1, 2), padding_mode=mode),
            gpuops.conv2d(x, w, None, (2, 1), 0, (1, 2), padding_mode=mode),
        )


# ---- refusals -------------------------------------------------------------------------------------------
X = np.zeros((1, 4, 6, 5), np.float32)
W = np.zeros((2, 4, 3, 2), np.float32)


@pytest.mark.parametrize("stride", [2, (2, 1), (1, 3)], ids=str)
def test_same_refuses_strides(stride, torch):
    pytorch = "padding='same' is not supported for strided convolutions"
    with pytest.raises(ValueError, match=pytorch):  # nn.Conv2d (F.conv2d raises a RuntimeError)
        torch.nn.Conv2d(4, 2, (3, 2), stride=stride, padding="same")
    with pytest.raises(RuntimeError, match=pytorch):
        torch.nn.functional.conv2d(torch.from_numpy(X), torch.from_numpy(W), stride=stride, padding="same")
    shown = (
        str(stride if isinstance(stride, tuple) else (stride, stride)).replace("(", r"\(").replace(")", r"\)")
    )
    message = rf"padding 'same' needs stride 1 in both dimensions, got stride {shown}"
    with pytest.raises(ValueError, match=message):
        gpuops.conv2d(X, W, stride=stride, padding="same")
    with pytest.raises(ValueError, match=message):  # the check stage alone refuses it (the app's plans)
        gpuops.plan_conv2d(X.shape, W.shape, None, stride, "same", algorithm="direct")
    with pytest.raises(ValueError, match=message):
        gpuops.conv2d_backward(np.zeros((1, 2, 3, 3), np.float32), X, W, stride=stride, padding="same")


@pytest.mark.parametrize("padding", ["full", "SAME", "Valid", ""])
def test_other_padding_strings_are_refused(padding, torch):
    with pytest.raises((ValueError, RuntimeError)):
        torch.nn.functional.conv2d(torch.from_numpy(X), torch.from_numpy(W), padding=padding)
    message = rf"padding '{padding}' must be an int, a pair of ints, or one of \('valid', 'same'\)"
    for algorithm in FORWARD_ALGORITHMS:
        with pytest.raises(ValueError, match=message):
            gpuops.conv2d(X, W, padding=padding, algorithm=algorithm)
    with pytest.raises(ValueError, match=message):
        gpuops.conv2d_backward(np.zeros((1, 2, 6, 5), np.float32), X, W, padding=padding)


def test_reflect_pads_too_large(torch):
    """reflect + "same" needs each pad smaller than the side it mirrors, as nn.Conv2d does."""
    x = np.zeros((1, 1, 2, 6), np.float32)
    w = np.zeros((1, 1, 4, 1), np.float32)  # 1 row on top, 2 on the bottom: 2 >= height 2
    layer = torch.nn.Conv2d(1, 1, (4, 1), padding="same", padding_mode="reflect")
    with pytest.raises((ValueError, RuntimeError)):
        layer(torch.from_numpy(x))
    with pytest.raises(
        ValueError, match=r"reflect padding 2 \(bottom\) must be smaller than the input height 2"
    ):
        gpuops.conv2d(x, w, padding="same", padding_mode="reflect")


def test_unfold_and_transpose_keep_refusing_strings():
    """F.unfold and F.conv_transpose2d take no padding strings: neither do ours."""
    with pytest.raises(ValueError, match="padding must be an int or a pair of ints, got 'same'"):
        gpuops.unfold(X, 3, padding="same")
    with pytest.raises(ValueError, match="padding must be an int or a pair of ints, got 'same'"):
        gpuops.conv_transpose2d(
            np.zeros((1, 2, 6, 5), np.float32), np.zeros((2, 4, 3, 3), np.float32), padding="same"
        )


# ---- backward -------------------------------------------------------------------------------------------
BACKWARD_CASES = (
    CASES[:8] + [c for c in CASES[8:] if c.asymmetric][:8] + [c for c in CASES if c.padding == "valid"][:4]
)


@backends
@pytest.mark.parametrize("case", BACKWARD_CASES, ids=case_id)
def test_conv2d_backward_same_and_valid_equal_autograd(case, xp, rng, torch):
    """Every algorithm of both gradients against torch autograd through nn.Conv2d."""
    x, w, b = case.arrays(rng)
    layer = case.torch_layer(w, b, torch)
    xt = torch.from_numpy(x).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = layer(xt)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.from_numpy(dy))
    dy_, x_, w_ = on(xp, dy, x, w)
    for algorithm in INPUT_ALGORITHMS:
        gx = gpuops.conv2d_grad_input(dy_, x.shape, w_, algorithm=algorithm, **case.kwargs())
        np.testing.assert_allclose(host(gx), xt.grad.numpy(), **TOL, err_msg=algorithm)
    for algorithm in WEIGHT_ALGORITHMS:
        gw = gpuops.conv2d_grad_weight(dy_, x_, w.shape, algorithm=algorithm, **case.kwargs())
        np.testing.assert_allclose(
            host(gw), layer.weight.grad.numpy(), rtol=1e-4, atol=1e-3, err_msg=algorithm
        )
    _, _, gb = gpuops.conv2d_backward(dy_, x_, w_, **case.kwargs())
    np.testing.assert_allclose(host(gb), layer.bias.grad.numpy(), rtol=1e-4, atol=1e-3)


# ---- the CUDA kernels only ---------------------------------------------------------------------------------
def _poison(cp, shape: tuple[int, ...]) -> None:
    """Hand the memory pool a NaN-filled block of this shape: an output of that size reuses it,
    so a cell no thread writes stays NaN."""
    cp.get_default_memory_pool().free_all_blocks()
    junk = cp.full(shape, cp.nan, dtype=cp.float32)
    del junk


@pytest.mark.gpu
@pytest.mark.parametrize("padding_mode", ["zeros", "reflect"])
def test_every_output_is_written_with_same(padding_mode, rng, torch):
    """An even kernel pads one more row and column after: the last row and column of y read it."""
    import cupy as cp

    x = rng.standard_normal((2, 5, 37, 29)).astype(np.float32)
    w = rng.standard_normal((11, 5, 4, 2)).astype(np.float32)
    case = PadCase(2, 5, 37, 29, 11, 4, 2, (1, 1), "same", (1, 1), 1, padding_mode, False)
    ref = torch_forward(case, x, w, None, torch)
    for algorithm in gpuops.ALGORITHMS:
        _poison(cp, (2, 11, 37, 29))
        y = gpuops.conv2d(
            cp.asarray(x), cp.asarray(w), padding="same", padding_mode=padding_mode, algorithm=algorithm
        )
        assert not bool(cp.isnan(y).any()), algorithm
        np.testing.assert_allclose(y.get(), ref, **TOL, err_msg=algorithm)


@pytest.mark.gpu
def test_every_input_gradient_is_written_with_same(rng, torch):
    """gemm_fold folds an asymmetric geometry with its own fold launch: every cell of dx is set."""
    import cupy as cp

    case = PadCase(2, 4, 21, 18, 6, 2, 4, (1, 1), "same", (3, 1), 2, "zeros", False)
    x, w, _ = case.arrays(rng)
    layer = case.torch_layer(w, None, torch)
    xt = torch.from_numpy(x).requires_grad_()
    y = layer(xt)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.from_numpy(dy))
    for algorithm in gpuops.GRAD_INPUT_ALGORITHMS:
        _poison(cp, x.shape)
        gx = gpuops.conv2d_grad_input(
            cp.asarray(dy), x.shape, cp.asarray(w), algorithm=algorithm, **case.kwargs()
        )
        assert not bool(cp.isnan(gx).any()), algorithm
        np.testing.assert_allclose(gx.get(), xt.grad.numpy(), **TOL, err_msg=algorithm)


@pytest.mark.gpu
def test_a_repeated_same_call_takes_the_ready_path_and_stays_correct(rng, torch):
    """The second call with the same shapes skips the checks (padding "same" in the key)."""
    import cupy as cp

    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    case = PadCase(1, 3, 20, 22, 4, 2, 2, (1, 1), "same", (1, 1), 1, "zeros", False)
    for algorithm in (*gpuops.ALGORITHMS, "auto"):
        for _ in range(2):
            x = rng.standard_normal((1, 3, 20, 22)).astype(np.float32)
            got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), padding="same", algorithm=algorithm)
            np.testing.assert_allclose(
                got.get(), torch_forward(case, x, w, None, torch), **TOL, err_msg=algorithm
            )
