"""conv2d_backward and conv_transpose2d: the NumPy twins and (-m gpu) the CUDA kernels against
PyTorch's autograd / F.conv_transpose2d, independent float64 loop references, the adjoint
identity, and the index maps of the page."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest

import gpuops
from gpuops import conv_backward as cb
from gpuops.launch import source_text
from gpuops.maps import conv_backward as maps
from tests.support.cases import case_id, random_conv_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import conv2d_backward_ref, conv_transpose2d_ref
from tests.support.traces import assert_the_map_names_each_writer

CASES = random_conv_cases(24, seed=21)  # 8 hand-picked corners (1x1, kernel == input, ...) + 16 random
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)
INPUT_ALGORITHMS = (*gpuops.GRAD_INPUT_ALGORITHMS, "auto")
WEIGHT_ALGORITHMS = (*gpuops.GRAD_WEIGHT_ALGORITHMS, "auto")
TOL = dict(rtol=1e-4, atol=2e-4)


@dataclass(frozen=True)
class TransposeCase:
    N: int
    C_in: int
    H: int
    W: int
    C_out: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    output_padding: tuple[int, int]
    groups: int
    dilation: tuple[int, int]
    bias: bool

    def arrays(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        x = rng.standard_normal((self.N, self.C_in, self.H, self.W)).astype(np.float32)
        w = rng.standard_normal((self.C_in, self.C_out // self.groups, self.kh, self.kw)).astype(np.float32)
        b = rng.standard_normal(self.C_out).astype(np.float32) if self.bias else None
        return x, w, b

    def kwargs(self) -> dict:
        return dict(
            stride=self.stride,
            padding=self.padding,
            output_padding=self.output_padding,
            groups=self.groups,
            dilation=self.dilation,
        )


def _out_size(size: int, k: int, s: int, p: int, op: int, d: int) -> int:
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def random_transpose_cases(count: int, seed: int = 0) -> list[TransposeCase]:
    """Valid transposed convolutions: output_padding up to max(stride, dilation) - 1 (so also
    >= stride when dilation allows it), groups, non-square, 1x1, a 1 x 1 input."""
    rng = np.random.default_rng(seed)
    cases = [
        TransposeCase(1, 1, 2, 2, 1, 3, 3, (2, 2), (0, 0), (0, 0), 1, (1, 1), False),  # the checkerboard
        TransposeCase(2, 3, 5, 4, 2, 1, 1, (1, 1), (0, 0), (0, 0), 1, (1, 1), True),  # 1x1
        TransposeCase(1, 2, 1, 1, 3, 3, 2, (1, 1), (0, 0), (0, 0), 1, (1, 1), True),  # one input cell
        TransposeCase(2, 4, 4, 6, 6, 3, 2, (2, 3), (1, 1), (1, 2), 2, (1, 1), True),  # groups, output_padding
        TransposeCase(
            1, 2, 3, 5, 2, 2, 3, (1, 2), (2, 1), (2, 1), 1, (3, 2), False
        ),  # output_padding >= stride
        TransposeCase(1, 6, 5, 5, 6, 3, 3, (2, 2), (1, 1), (1, 1), 6, (1, 1), False),  # depthwise
    ]
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 2, 3]))
        s = tuple(int(v) for v in rng.integers(1, 4, size=2))
        d = tuple(int(v) for v in rng.integers(1, 3, size=2))
        k = tuple(int(v) for v in rng.integers(1, 5, size=2))
        p = tuple(int(v) for v in rng.integers(0, 3, size=2))
        op = tuple(int(rng.integers(0, max(si, di))) for si, di in zip(s, d, strict=True))
        H, W = (int(v) for v in rng.integers(1, 8, size=2))
        if min(_out_size(H, k[0], s[0], p[0], op[0], d[0]), _out_size(W, k[1], s[1], p[1], op[1], d[1])) < 1:
            continue
        C_in, C_out = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
        cases.append(
            TransposeCase(
                int(rng.integers(1, 3)), C_in, H, W, C_out, *k, s, p, op, groups, d, bool(rng.integers(0, 2))
            )
        )
    return cases


TRANSPOSE_CASES = random_transpose_cases(20, seed=4)


def transpose_id(c: TransposeCase) -> str:
    return (
        f"N{c.N}C{c.C_in}x{c.H}x{c.W}-O{c.C_out}k{c.kh}x{c.kw}-s{c.stride}p{c.padding}"
        f"op{c.output_padding}d{c.dilation}g{c.groups}"
    ).replace(" ", "")


def _autograd(case, x, w, b, dy, torch):
    """What autograd gives for nn.Conv2d(padding_mode=...) with these weights."""
    layer = case.torch_layer(w, b, torch)
    tx = torch.from_numpy(x).requires_grad_()
    layer(tx).backward(torch.from_numpy(dy))
    return tx.grad.numpy(), layer.weight.grad.numpy(), layer.bias.grad.numpy()


def _dy(case, rng):
    g = gpuops.window_geometry(case.H, case.W, (case.kh, case.kw), case.stride, case.padding, case.dilation)
    return rng.standard_normal((case.N, case.M, g.H_out, g.W_out)).astype(np.float32)


# ---- the CPU path equals PyTorch ---------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_backward_equals_autograd(case, rng, torch):
    x, w, b = case.arrays(rng)
    dy = _dy(case, rng)
    ref_x, ref_w, ref_b = _autograd(case, x, w, b, dy, torch)
    for algorithm, weight_algorithm in itertools.zip_longest(
        INPUT_ALGORITHMS, WEIGHT_ALGORITHMS, fillvalue="auto"
    ):
        gx, gw, gb = gpuops.conv2d_backward(
            dy, x, w, algorithm=algorithm, weight_algorithm=weight_algorithm, **case.kwargs()
        )
        for got, ref in ((gx, ref_x), (gw, ref_w), (gb, ref_b)):
            assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == ref.shape
            np.testing.assert_allclose(got, ref, **TOL, err_msg=f"{algorithm} / {weight_algorithm}")


@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=transpose_id)
def test_conv_transpose2d_equals_torch(case, rng, torch):
    x, w, b = case.arrays(rng)
    ref = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b), **case.kwargs()
    ).numpy()
    for algorithm in INPUT_ALGORITHMS:
        got = gpuops.conv_transpose2d(x, w, b, algorithm=algorithm, **case.kwargs())
        assert got.shape == ref.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, ref, **TOL, err_msg=algorithm)


# ---- both backends against the float64 loop references --------------------------------------------------
@backends
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_backward_matches_loop_reference(case, xp, rng):
    """Every algorithm of both gradients, on NumPy and (-m gpu) on the CUDA kernels."""
    x, w, _ = case.arrays(rng)
    dy = _dy(case, rng)
    ref_x, ref_w, ref_b = conv2d_backward_ref(dy, x, w, **case.kwargs())
    dy_, x_, w_ = on(xp, dy, x, w)
    for algorithm in INPUT_ALGORITHMS:
        gx = gpuops.conv2d_grad_input(dy_, x.shape, w_, algorithm=algorithm, **case.kwargs())
        assert isinstance(gx, xp.ndarray) and gx.dtype == np.float32
        np.testing.assert_allclose(host(gx), ref_x, **TOL, err_msg=algorithm)
    for algorithm in WEIGHT_ALGORITHMS:
        gw = gpuops.conv2d_grad_weight(dy_, x_, w.shape, algorithm=algorithm, **case.kwargs())
        assert isinstance(gw, xp.ndarray) and gw.dtype == np.float32
        np.testing.assert_allclose(host(gw), ref_w, **TOL, err_msg=algorithm)
    _, _, gb = gpuops.conv2d_backward(dy_, x_, w_, **case.kwargs())
    np.testing.assert_allclose(host(gb), ref_b, **TOL)


@backends
@pytest.mark.parametrize("case", TRANSPOSE_CASES, ids=transpose_id)
def test_conv_transpose2d_matches_loop_reference(case, xp, rng):
    x, w, b = case.arrays(rng)
    ref = conv_transpose2d_ref(x, w, b, **case.kwargs())
    for algorithm in INPUT_ALGORITHMS:
        got = gpuops.conv_transpose2d(*on(xp, x, w, b), algorithm=algorithm, **case.kwargs())
        assert isinstance(got, xp.ndarray)
        np.testing.assert_allclose(host(got), ref, **TOL, err_msg=algorithm)


@backends
def test_unbatched_arrays_give_unbatched_gradients(xp, rng):
    x = rng.standard_normal((3, 8, 7)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((4, 8, 7)).astype(np.float32)
    gx, gw, gb = gpuops.conv2d_backward(*on(xp, dy, x, w), padding=1)
    ref_x, ref_w, _ = conv2d_backward_ref(dy[None], x[None], w, padding=(1, 1))
    assert gx.shape == (3, 8, 7) and gw.shape == w.shape and gb.shape == (4,)
    np.testing.assert_allclose(host(gx), ref_x[0], **TOL)
    np.testing.assert_allclose(host(gw), ref_w, **TOL)
    # conv2d's grad_input IS the transposed convolution of grad_output with the same weight
    y = gpuops.conv_transpose2d(*on(xp, dy, w), padding=1)
    assert y.shape == (3, 8, 7)
    np.testing.assert_allclose(host(y), ref_x[0], **TOL)


@backends
def test_hand_computed_transposed_convolution(xp):
    """A 2x2 input, a 3x3 kernel of ones, stride 2: four stamps, overlapping on the middle row
    and column (the checkerboard's seed)."""
    x = np.array([[[[1, 2], [3, 4]]]], np.float32)
    w = np.ones((1, 1, 3, 3), np.float32)
    expected = np.array(
        [
            [1, 1, 3, 2, 2],
            [1, 1, 3, 2, 2],
            [4, 4, 10, 6, 6],
            [3, 3, 7, 4, 4],
            [3, 3, 7, 4, 4],
        ],
        np.float32,
    )
    for algorithm in INPUT_ALGORITHMS:
        got = gpuops.conv_transpose2d(*on(xp, x, w), stride=2, algorithm=algorithm)
        np.testing.assert_array_equal(host(got)[0, 0], expected, err_msg=algorithm)


@backends
@pytest.mark.parametrize(
    "geometry",
    [
        dict(stride=1, padding=0, dilation=1, groups=1),
        dict(stride=(2, 3), padding=(1, 2), dilation=1, groups=2),
        dict(stride=2, padding=1, dilation=(2, 1), groups=1),
        dict(stride=3, padding=0, dilation=1, groups=4),
    ],
    ids=str,
)
def test_adjoint_identity_with_numbers(geometry, xp, rng):
    """<conv(x), y> = <x, conv_T(y)>: the transposed convolution is the adjoint of conv2d."""
    x = rng.standard_normal((2, 4, 11, 10)).astype(np.float32)
    w = rng.standard_normal((8, 4 // geometry["groups"], 3, 3)).astype(np.float32)
    y_shape = gpuops.conv2d(x, w, **geometry).shape
    y = rng.standard_normal(y_shape).astype(np.float32)
    lhs, rhs = gpuops.adjoint_identity(*on(xp, x, y, w), **geometry)
    # both sides add the same x[i]*w[k]*y[o] terms in another order: float32 rounding only
    assert abs(lhs) > 1 and lhs == pytest.approx(rhs, rel=1e-5)
    # and the identity is what the float64 references give too
    forward = gpuops.conv2d(x, w, **geometry).astype(np.float64)
    assert (forward * y).sum() == pytest.approx(lhs, rel=1e-5)


# ---- flipped_conv and batch_gemm: the compositions, on geometries the random cases rarely draw -------------
FLIPPED_GEOMETRIES = [  # (C, H, W, M, (kh, kw), conv2d keywords)
    (4, 9, 8, 6, (3, 3), dict(padding="same", dilation=(1, 2), groups=2)),  # even reach: asymmetric pads
    (3, 7, 10, 3, (4, 2), dict(padding="same")),  # even kernels: one more cell after
    (2, 6, 5, 4, (1, 1), dict(padding=2)),  # padding past the window's reach: dY is cut, not padded
    (2, 9, 7, 4, (3, 2), dict(padding=(4, 3), dilation=(1, 2))),
    (6, 11, 12, 9, (3, 3), dict(stride=2, padding=1, dilation=2, groups=3)),  # phases, groups
    (3, 13, 9, 5, (2, 3), dict(stride=(3, 2), padding=(1, 0))),  # a phase no tap reaches
    (1, 5, 6, 1, (3, 3), dict(stride=3, padding=2)),
    (2, 12, 10, 4, (4, 3), dict(stride=(2, 3), dilation=(3, 2), padding=(3, 1))),  # gcd(stride, dilation) 1
    (2, 12, 11, 2, (3, 3), dict(stride=(4, 2), dilation=(2, 4), padding=2)),  # gcd 2: half the phases empty
    (4, 8, 9, 4, (3, 3), dict(padding=(1, 2), groups=4, padding_mode="reflect")),  # depthwise, reflect
    (3, 6, 7, 5, (5, 3), dict(padding="same", padding_mode="reflect")),
]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
@pytest.mark.parametrize("geometry", FLIPPED_GEOMETRIES, ids=str)
def test_flipped_conv_and_batch_gemm_equal_autograd(geometry, rng, torch):
    """grad_input as conv2d(dY, flipped filter) and grad_weight as one GEMM over the batch, against
    autograd through F.conv2d (reflect: F.pad first, as nn.Conv2d does)."""
    C, H, W, M, (kh, kw), conv = geometry
    groups = conv.get("groups", 1)
    x = rng.standard_normal((3, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C // groups, kh, kw)).astype(np.float32)
    tx, tw = torch.from_numpy(x).requires_grad_(), torch.from_numpy(w).requires_grad_()
    plain = {k: v for k, v in conv.items() if k != "padding_mode"}
    if conv.get("padding_mode") == "reflect":
        pads = gpuops.plan_conv2d(x.shape, w.shape, None, **conv).geometry.pads  # (left, right, top, bottom)
        plain["padding"] = 0
        y = torch.nn.functional.conv2d(torch.nn.functional.pad(tx, pads, mode="reflect"), tw, **plain)
    else:
        y = torch.nn.functional.conv2d(tx, tw, **plain)
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.from_numpy(dy))
    gx = gpuops.conv2d_grad_input(dy, x.shape, w, algorithm="flipped_conv", **conv)
    gw = gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm="batch_gemm", **conv)
    np.testing.assert_allclose(gx, tx.grad.numpy(), **TOL)
    np.testing.assert_allclose(gw, tw.grad.numpy(), **TOL)


def test_flipped_filter_swaps_in_and_out_and_flips_the_taps(rng):
    """W'[g*Cg + c, o, a, b] = w[g*Mg + o, c, KH-1-a, KW-1-b], checked entry by entry."""
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)  # M = 6, C = 4 in 2 groups
    flipped = cb.flipped_filter(w, groups=2)
    assert flipped.shape == (4, 3, 3, 2) and flipped.flags.c_contiguous
    for group, c, o, a, b in np.ndindex(2, 2, 3, 3, 2):
        assert flipped[group * 2 + c, o, a, b] == w[group * 3 + o, c, 2 - a, 1 - b]


P = cb.Phase


@pytest.mark.parametrize(
    "axis,expected",
    [  # (n_dy, size, k, stride, dilation, pad): (first, count, taps, dilation, cut, pad) per phase
        ((7, 7, 3, 1, 1, 1), [P(0, 7, slice(0, 3, 1), 1, (0, 0), (1, 1))]),  # pad 1: as the forward
        ((5, 7, 3, 1, 1, 0), [P(0, 7, slice(0, 3, 1), 1, (0, 0), (2, 2))]),  # "valid": the full reach
        ((11, 7, 1, 1, 1, 2), [P(0, 7, slice(0, 1, 1), 1, (2, 2), (0, 0))]),  # past a 1x1's reach: cut
        (  # stride 2: even cells take tap 1 (dx[2j] = dY[j] w[1]), odd ones taps 0 and 2
            (4, 8, 3, 2, 1, 1),
            [P(0, 4, slice(1, 2, 2), 1, (0, 0), (0, 0)), P(1, 4, slice(0, 3, 2), 1, (0, 0), (0, 1))],
        ),
        (  # stride 2, dilation 2: every tap lands on even cells; odd cells take nothing
            (5, 9, 3, 2, 2, 2),
            [P(0, 5, slice(0, 3, 1), 1, (0, 0), (1, 1)), P(1, 4, None)],
        ),
        (  # stride 3 > k: the third phase has no tap
            (2, 7, 2, 3, 1, 0),
            [P(0, 3, slice(0, 1, 3), 1, (0, 0), (0, 1)), P(1, 2, slice(1, 2, 3), 1), P(2, 2, None)],
        ),
    ],
)
def test_phases_of_grad_input(axis, expected):
    """Hand-derived phases; each phase's convolution gives its count of cells, and the phases
    together give every cell of dx once."""
    got = cb.phases(*axis)
    assert got == expected
    _, size, _, stride, _, _ = axis
    assert sorted(i for p in got for i in range(p.first, size, stride)) == list(range(size))
    for p in got:
        if p.taps is not None:
            kept = axis[0] - sum(p.cut)
            taps = len(range(p.taps.start, p.taps.stop, p.taps.step))
            assert kept + sum(p.pad) - p.dilation * (taps - 1) == p.count


@pytest.mark.parametrize(
    "geometry",
    [
        dict(padding=1),
        dict(stride=2, padding=1),  # 12 + 2 = 14 columns: a block of 14, 7 outputs of which 6 are real
        dict(stride=3, padding=(0, 2), dilation=2),  # 12 + 4 = 16 -> 18 columns, 6 outputs, 4 real
        dict(stride=(1, 4)),  # stride 4 > k: 12 columns, 3 outputs, all real
    ],
    ids=str,
)
def test_side_by_side_windows_read_each_sample_as_the_forward(geometry, rng):
    """The wide image's unfold, cut back to each sample's real output columns, equals the
    sample's own unfold; the other columns are what the zeros of the wide dY meet."""
    x = rng.standard_normal((3, 2, 9, 12)).astype(np.float32)
    g = gpuops.window_geometry(9, 12, 3, **geometry)
    layout = cb.side_by_side(g, 3)
    assert layout.block % g.stride_w == 0 and layout.block >= g.W + g.pad_left + g.pad_right
    assert (layout.wide.H_out, layout.wide.W_out) == (g.H_out, 3 * layout.outputs_per_block)
    wide = np.zeros((2, 9, 3, layout.block), np.float32)
    wide[..., g.pad_left : g.pad_left + 12] = x.transpose(1, 2, 0, 3)
    cols = cb.unfold_numpy(wide.reshape(1, 2, 9, -1), layout.wide).reshape(18, g.H_out, 3, -1)
    own = cb.unfold_numpy(x, g).reshape(3, 18, g.H_out, g.W_out)
    np.testing.assert_array_equal(cols[..., : g.W_out].transpose(2, 0, 1, 3), own)


def test_batch_gemm_chunks_fit_the_budget():
    q = _problem(4, 3, 10, 10, 2, 3, padding=1)
    per_sample = cb.side_by_side_bytes(q)
    # the wide input (3 x 10 x 12), its cols (27 x 10 x 12) and the wide dY (2 x 10 x 12), in floats
    assert per_sample == 4 * (3 * 10 * 12 + 27 * 10 * 12 + 2 * 10 * 12)
    assert cb.side_by_side_chunk(q, 2 * per_sample + 1) == 2 and cb.side_by_side_chunk(q, 10**9) == 4
    with pytest.raises(ValueError, match=r"batch_gemm \(its wide image\) needs [0-9,]+ bytes for one sample"):
        cb.side_by_side_chunk(q, per_sample - 1)


# ---- launches (CPU: geometry and thread maps) ------------------------------------------------------------
def _problem(N, C, H, W, M, K, groups=1, **kw):
    g = gpuops.window_geometry(H, W, K, kw.get("stride", 1), kw.get("padding", 0), kw.get("dilation", 1))
    dy_shape = (N, M, g.H_out, g.W_out)
    return cb.check_conv2d_backward(dy_shape, (N, C, H, W), (M, C // groups, K, K), groups=groups, **kw)[1]


def test_scatter_launch_is_one_thread_per_output_gradient():
    q = _problem(2, 4, 40, 30, 6, 3, groups=2, padding=1)  # dy 40 x 30 = 1200 pixels
    launch = cb.input_scatter_launch(q)
    assert launch.block == (256, 1, 1) and launch.grid == (5, 6, 2)
    # sample 1, filter 5, pixel (33, 17): p = 33*30 + 17 = 1007 -> block 3, thread 239
    ref = launch.thread_of(1, 5, 33, 17)
    assert (ref.block, ref.thread) == ((3, 5, 1), (239, 0, 0))
    small = cb.input_scatter_launch(_problem(1, 1, 5, 5, 1, 3))  # 9 pixels: one warp-sized block
    assert small.block == (32, 1, 1) and small.grid == (1, 1, 1)


def test_gather_launch_is_a_row_kernel_over_grad_input():
    q = _problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)
    launch = cb.input_gather_launch(q)
    assert launch.arg("rows") == 2 * 4 * 11 and launch.block == (16, 16, 1)
    assert launch.index == "(n, c, ih, iw) of dx"


def test_weight_reduce_launch_is_one_block_per_weight():
    q = _problem(3, 6, 12, 10, 4, 3, groups=2)
    launch = cb.weight_reduce_launch(q)
    assert launch.grid == (4 * 3 * 9, 1, 1) and launch.block == cb.REDUCE_BLOCK
    ref = launch.thread_of(2, 1, 0, 2)  # ((2*3 + 1)*3 + 0)*3 + 2 = 65
    assert (ref.block, ref.thread) == ((65, 0, 0), (0, 0, 0))
    text = source_text("conv_backward.cu")
    x, y, _ = cb.REDUCE_BLOCK
    assert f"#define REDUCE_X {x} " in text and f"#define REDUCE_Y {y} " in text


def test_weight_pairs_launch_is_a_block_per_pair_and_slice():
    """grad_weight_v3 on a depthwise layer (256 pairs): the 32 x 56 = 1792 output rows cut into
    17 slices of 106 rows (17 x 256 blocks, the first count past 32 x 132), a warp per tap."""
    q = _problem(32, 256, 56, 56, 256, 3, groups=256, padding=1)
    launch = cb.weight_pairs_launch(q)
    assert launch.grid == (256, 17, 1) and launch.block == (32, 9, 1)
    assert launch.arg("rows_per_slice") == 106
    ref = launch.thread_of(2, 7, 0, 1, 2)  # slice 2 of pair (7, 0), tap 1*3 + 2 = 5
    assert (ref.block, ref.thread, ref.step) == ((7, 2, 0), (0, 5, 0), (0,))
    dense = cb.weight_pairs_launch(_problem(2, 64, 8, 8, 64, 3, padding=1))  # 4096 pairs: two slices
    assert dense.grid == (4096, 2, 1) and dense.arg("rows_per_slice") == 8
    wide = cb.weight_pairs_launch(_problem(1, 2, 20, 20, 3, 7, padding=3))  # 49 taps on 16 warps
    ref = wide.thread_of(0, 2, 1, 5, 5)  # tap 40 = 8 + 2 x 16: warp 8, its third pass
    assert wide.block == (32, 16, 1) and (ref.block, ref.thread, ref.step) == ((5, 0, 0), (0, 8, 0), (2,))


def test_weight_pairs_shared_launch_stages_chunks_of_rows():
    """grad_weight_v4 on the depthwise layer: v3's grid, 256 threads; chunks of a whole sample's
    56 output rows (4096 // 56 = 73 rows asked), whose dy rows and the 58 x rows they read take
    (58*56 + 56*56) floats; a 300-wide layer gets 13 rows (4096 // 300); tap t's team of 28
    threads starts at thread 28t. 289 taps (17 x 17) take two passes."""
    q = _problem(32, 256, 56, 56, 256, 3, groups=256, padding=1)
    launch = cb.weight_pairs_shared_launch(q)
    assert launch.grid == (256, 17, 1) and launch.block == (256, 1, 1)
    assert launch.arg("chunk_rows") == 56 and launch.shared_bytes == 4 * (58 * 56 + 56 * 56)
    assert cb.shared_pairs_chunk(_problem(1, 3, 20, 300, 4, 7, padding=3)) == (13, 4 * (19 * 300 + 13 * 300))
    ref = launch.thread_of(2, 7, 0, 1, 2)  # slice 2 of pair (7, 0), tap 5
    assert (ref.block, ref.thread, ref.step) == ((7, 2, 0), (140, 0, 0), (0,))
    big = cb.weight_pairs_shared_launch(_problem(1, 1, 20, 20, 1, 17, padding=8))
    first, second = big.thread_of(0, 0, 0, 0, 3), big.thread_of(0, 0, 0, 16, 16)  # taps 3 and 288
    assert (first.thread, first.step) == ((3, 0, 0), (0,))  # 256 taps, teams of one
    assert (second.thread, second.step) == ((32 * 7, 0, 0), (1,))  # tap 288 = 256 + 32: 33 taps, teams of 7


def test_weight_columns_launch_is_a_block_per_pair_and_a_few_slices():
    """grad_weight_v5 on the depthwise layer: v3's grid with slices for about 8 blocks an SM
    (ceil(1056 / 256) = 5 slices of 359 rows), 256 threads on 56 columns, 4 runners down the
    rows; thread t stores tap t, past 9 taps in passes. A 14 x 14 layer of 512 pairs gets 3
    slices of 150 rows; a 300-wide one, columns past the block's 256 threads."""
    q = _problem(32, 256, 56, 56, 256, 3, groups=256, padding=1)
    launch = cb.weight_columns_launch(q)
    assert launch.grid == (256, 5, 1) and launch.block == (256, 1, 1) and launch.shared_bytes == 0
    assert launch.arg("rows_per_slice") == 359
    ref = launch.thread_of(2, 7, 0, 1, 2)  # slice 2 of pair (7, 0), tap 5
    assert (ref.block, ref.thread, ref.step) == ((7, 2, 0), (5, 0, 0), (0,))
    assert "256 threads stand on 56 output columns side by side, 4 down the rows" in launch.describe()
    small = cb.weight_columns_launch(_problem(32, 512, 14, 14, 512, 3, groups=512, padding=1))
    assert small.grid == (512, 3, 1) and small.arg("rows_per_slice") == 150
    wide = cb.weight_columns_launch(_problem(2, 3, 12, 300, 4, 7, padding=3))
    ref = wide.thread_of(0, 3, 2, 6, 6)  # tap 48 = 5 x 9 + 3: thread 3 of the sixth pass
    assert (ref.thread, ref.step) == ((3, 0, 0), (5,))
    assert "on 256 output columns side by side, 1 down the rows" in wide.describe()
    text = source_text("conv_backward.cu")
    assert f"#define V5_THREADS {cb.COLUMNS_THREADS}\n" in text
    assert f"#define V5_TAPS {cb.COLUMNS_TAPS} " in text


def test_weight_pairs_shared_refuses_rows_wider_than_shared_memory():
    q = _problem(1, 1, 4, 6000, 1, 3, padding=1)
    assert cb.shared_pairs_chunk(_problem(1, 1, 4, 3000, 1, 3, padding=1))[0] >= 1
    with pytest.raises(
        ValueError, match=r"one output row needs 96,000 bytes of shared memory with rows of 6000"
    ):
        cb.weight_pairs_shared_launch(q)


def test_weight_pairs_refuse_rows_past_32_bits():
    q = cb.GradProblem(70000, 1, 1, 1, gpuops.window_geometry(40000, 4, 1), 40000, 4)
    with pytest.raises(ValueError, match=r"direct_pairs weight-gradient kernel counts output rows N x H_out"):
        cb.weight_pairs_launch(q)


def test_auto_measures_v3_in_place_of_v1_on_depthwise_layers(monkeypatch):
    """On the GPU auto never times direct (v1): direct_pairs makes the same sums in one pass
    instead of KH*KW, and is timed where filters see one channel (depthwise) only."""
    measured = []

    def fastest(which, q, run, algorithms, fallback):
        measured.append(set(algorithms))
        return algorithms[0]

    monkeypatch.setattr(cb, "array_module", lambda a: None)  # not NumPy: the GPU's branch
    monkeypatch.setattr(cb, "_fastest", fastest)
    cb.resolve_weight_algorithm(None, None, _problem(32, 8, 9, 9, 8, 3, padding=1))
    cb.resolve_weight_algorithm(None, None, _problem(32, 8, 9, 9, 8, 3, groups=8, padding=1))
    dense, depthwise = measured
    assert {"gemm", "batch_gemm", "forward_conv"} <= dense and not {"direct", *cb.PAIR_ALGORITHMS} & dense
    assert depthwise == dense | {"direct_pairs", "direct_pairs_shared", "direct_columns"}


def test_plans_name_the_launches_they_make():
    plan = gpuops.plan_conv2d_backward(
        (1, 4, 8, 8), (1, 2, 8, 8), (4, 2, 3, 3), padding=1, algorithm="gemm_fold", weight_algorithm="gemm"
    )
    assert plan.input_launch.kernel == "fold_v2_gather" and plan.weight_launch.kernel == "unfold_v1"
    auto = gpuops.plan_conv_transpose2d((1, 4, 8, 8), (4, 2, 3, 3))
    assert auto.input_launch is None  # "auto" is resolved per call
    reflect = gpuops.plan_conv2d_backward(
        (1, 4, 8, 8), (1, 2, 8, 8), (4, 2, 3, 3), padding=1, padding_mode="reflect", algorithm="gather"
    )
    assert reflect.pads == (1, 1, 1, 1) and reflect.problem.dx_shape == (1, 2, 10, 10)


def test_pointwise_gemm_paths_need_no_kernel_of_ours():
    """1x1, stride 1, no padding: cols is the image itself; cuBLAS alone writes both gradients."""
    plan = gpuops.plan_conv2d_backward(
        (2, 6, 5, 7), (2, 4, 5, 7), (6, 2, 1, 1), groups=2, algorithm="gemm_fold", weight_algorithm="gemm"
    )
    assert plan.input_launch is None and plan.weight_launch is None
    assert cb.batch_chunk(plan.problem, 1) == 2  # nothing unfolded: no budget needed
    strided = gpuops.plan_conv_transpose2d((2, 6, 5, 7), (6, 2, 1, 1), stride=2, algorithm="gemm_fold")
    assert strided.input_launch.kernel == "fold_v2_gather"  # stride 2 spreads the cells: a fold


def test_direct_weight_kernel_refuses_rows_past_32_bits():
    q = cb.GradProblem(70000, 1, 1, 1, gpuops.window_geometry(40000, 4, 1), 40000, 4)
    with pytest.raises(
        ValueError, match=r"N x H_out = 2,800,000,000 with 32-bit ints \(limit 2,147,483,647\)"
    ):
        cb.weight_reduce_launch(q)


def test_gemm_paths_refuse_matrices_past_cublas_32_bit_sizes():
    q = cb.GradProblem(1, 1, 1, 1, gpuops.window_geometry(50000, 50000, 1), 50000, 50000)
    with pytest.raises(
        ValueError, match=r"2,500,000,000 output pixels per sample, more than cuBLAS's 32-bit limit"
    ):
        cb.batch_chunk(q, 2**40)


def test_auto_on_the_cpu_runs_scatter_and_direct(rng):
    x = rng.standard_normal((1, 2, 9, 8)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((1, 3, 7, 6)).astype(np.float32)
    q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape)[1]
    assert cb.resolve_input_algorithm(dy, w, q) == "scatter"
    assert cb.resolve_weight_algorithm(dy, x, q) == "direct"


def test_empty_batch_gives_empty_gradients():
    gx, gw, gb = gpuops.conv2d_backward(
        np.zeros((0, 2, 4, 4)), np.zeros((0, 3, 6, 6)), np.zeros((2, 3, 3, 3))
    )
    assert gx.shape == (0, 3, 6, 6) and gw.shape == (2, 3, 3, 3) and not gw.any() and not gb.any()
    assert gpuops.conv_transpose2d(np.zeros((0, 2, 3, 3)), np.zeros((2, 1, 3, 3))).shape == (0, 1, 5, 5)


# ---- index maps ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["zeros", "reflect"])
def test_gradient_terms_sum_to_the_input_gradient(mode, rng):
    x = rng.standard_normal((1, 4, 7, 8)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    kw = dict(stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2, padding_mode=mode)
    g = gpuops.window_geometry(7, 8, (3, 2), (2, 1), (1, 1), (1, 2))
    dy = rng.standard_normal((1, 6, g.H_out, g.W_out)).astype(np.float32)
    gx = gpuops.conv2d_backward(dy, x, w, **kw)[0]
    for c, ih, iw in [(0, 0, 0), (3, 3, 4), (1, 6, 7), (2, 1, 1)]:
        terms = maps.gradient_terms(dy[0], w, g, c, ih, iw, groups=2, padding_mode=mode)
        assert terms.total == pytest.approx(float(gx[0, c, ih, iw]), abs=1e-5)
        assert set(terms.filter) <= set(range((c // 2) * 3, (c // 2 + 1) * 3))  # only the group's filters


def test_gradient_sources_meet_the_flipped_filter():
    """Stride 1: input cell (ih, iw) gets dy[ih + pad - ki, iw + pad - kj] * w[ki, kj], i.e. the
    flipped filter slid over dy: flipped tap (a, b) pairs with output (ih + pad - (K-1) + a, ...)."""
    g = gpuops.window_geometry(6, 6, 3, padding=1)
    src = maps.gradient_sources(g, 2, 3)
    assert len(src) == 9
    for (oh, ow), (a, b) in zip(src.outputs, src.flipped, strict=True):
        assert (oh, ow) == (2 + 1 - 2 + a, 3 + 1 - 2 + b)
    corner = maps.gradient_sources(g, 0, 0)  # only 4 windows cover the corner
    assert len(corner) == 4


def test_stamp_positions_are_where_a_one_hot_input_lands(rng):
    tg = gpuops.transpose_geometry(
        4, 5, (3, 2), stride=(2, 3), padding=(1, 0), output_padding=(1, 1), dilation=(1, 2)
    )
    w = (1 + np.arange(6, dtype=np.float32)).reshape(1, 1, 3, 2)
    for i, j in [(0, 0), (2, 3), (3, 4)]:
        x = np.zeros((1, 1, 4, 5), np.float32)
        x[0, 0, i, j] = 1
        y = gpuops.conv_transpose2d(
            x, w, stride=(2, 3), padding=(1, 0), output_padding=(1, 1), dilation=(1, 2)
        )
        rows, cols, inside = maps.stamp_positions(tg, i, j)
        expected = np.zeros((tg.H_out, tg.W_out), np.float32)
        expected[rows[inside], cols[inside]] = w[0, 0][inside]
        np.testing.assert_array_equal(y[0, 0], expected)
    all_rows, all_cols = maps.all_stamps(tg)
    rows, cols, _ = maps.stamp_positions(tg, 2, 3)
    np.testing.assert_array_equal(all_rows[2 * 5 + 3], rows.ravel())
    np.testing.assert_array_equal(all_cols[2 * 5 + 3], cols.ravel())


@pytest.mark.parametrize("k,stride", [(3, 2), (4, 2), (3, 1), (5, 3)])
def test_overlap_count_is_the_transposed_convolution_of_ones(k, stride):
    tg = gpuops.transpose_geometry(6, 5, k, stride)
    ones = gpuops.conv_transpose2d(
        np.ones((1, 1, 6, 5), np.float32), np.ones((1, 1, k, k), np.float32), stride=stride
    )
    np.testing.assert_array_equal(maps.overlap_count(tg), ones[0, 0])


def test_overlap_count_shows_the_checkerboard():
    """Kernel 3, stride 2: away from the border the counts alternate 1, 2 along each axis (1, 2, 4
    in 2-D); kernel 4, stride 2 covers evenly."""
    uneven = maps.overlap_count(gpuops.transpose_geometry(5, 5, 3, 2))
    # along an axis: [1, 1, 2, 1, 2, 1, 2, 1, 2, 1, 1] (output row o gets tap 2 of input o/2 - 1 and
    # tap 0 of input o/2 when o is even, only tap 1 when it is odd)
    assert list(uneven[4, 2:9]) == [4, 2, 4, 2, 4, 2, 4] and list(uneven[5, 2:9]) == [2, 1, 2, 1, 2, 1, 2]
    even = maps.overlap_count(gpuops.transpose_geometry(5, 5, 4, 2))
    assert (even[2:-2, 2:-2] == 4).all()


def test_stamp_outside_the_input_is_rejected():
    tg = gpuops.transpose_geometry(3, 3, 2)
    with pytest.raises(ValueError, match=r"input cell \(3, 0\) is outside the input 3 x 3"):
        maps.stamp_positions(tg, 3, 0)


# ---- on the GPU: each kernel against the CPU path, every output written, determinism ------------------
GPU_SHAPES = [  # (N, C, H, W, M, K, stride, pad, dilation, groups): several blocks of every kernel
    (2, 16, 40, 33, 24, 3, 1, 1, 1, 1),
    (3, 6, 29, 31, 9, 5, 2, 2, 2, 3),
    (1, 3, 20, 300, 4, 7, 1, 3, 1, 1),  # rows longer than a block
    (4, 8, 17, 9, 8, 1, 1, 0, 1, 2),  # 1x1
]


def _gpu_problem(shape, rng):
    N, C, H, W, M, K, S, P, D, G = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C // G, K, K)).astype(np.float32)
    g = gpuops.window_geometry(H, W, K, S, P, D)
    dy = rng.standard_normal((N, M, g.H_out, g.W_out)).astype(np.float32)
    return x, w, dy, dict(stride=S, padding=P, dilation=D, groups=G)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["zeros", "reflect"])
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=str)
def test_each_kernel_equals_the_cpu_path(shape, mode, rng):
    """Same inputs on both backends; the atomic scatter adds in another order: a tolerance."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(shape, rng)
    cpu_x, cpu_w, cpu_b = gpuops.conv2d_backward(dy, x, w, padding_mode=mode, **kw)
    dx_, x_, w_ = cp.asarray(dy), cp.asarray(x), cp.asarray(w)
    for algorithm in INPUT_ALGORITHMS:
        got = gpuops.conv2d_grad_input(dx_, x.shape, w_, padding_mode=mode, algorithm=algorithm, **kw)
        np.testing.assert_allclose(got.get(), cpu_x, rtol=1e-4, atol=1e-4, err_msg=algorithm)
    for algorithm in WEIGHT_ALGORITHMS:
        got = gpuops.conv2d_grad_weight(dx_, x_, w.shape, padding_mode=mode, algorithm=algorithm, **kw)
        np.testing.assert_allclose(got.get(), cpu_w, rtol=1e-4, atol=1e-3, err_msg=algorithm)
    np.testing.assert_allclose(
        gpuops.conv2d_backward(dx_, x_, w_, padding_mode=mode, **kw)[2].get(), cpu_b, rtol=1e-4, atol=1e-3
    )


@pytest.mark.gpu
def test_every_output_is_written():
    """Poison the memory pool with NaN first: an output a kernel skips would stay NaN."""
    import cupy as cp

    x = cp.ones((2, 6, 37, 29), cp.float32)
    w = cp.ones((10, 3, 3, 3), cp.float32)
    dy = cp.ones((2, 10, 19, 15), cp.float32)  # stride 2, padding 1
    kw = dict(stride=2, padding=1, groups=2)
    pool = cp.get_default_memory_pool()
    for algorithm in INPUT_ALGORITHMS:
        pool.free_all_blocks()
        junk = cp.full(x.shape, cp.nan, dtype=cp.float32)
        del junk  # back to the pool NaN-filled; the next output of that size reuses it
        assert not bool(
            cp.isnan(gpuops.conv2d_grad_input(dy, x.shape, w, algorithm=algorithm, **kw)).any()
        ), algorithm
    for algorithm in WEIGHT_ALGORITHMS:
        pool.free_all_blocks()
        junk = cp.full(w.shape, cp.nan, dtype=cp.float32)
        del junk
        assert not bool(
            cp.isnan(gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm=algorithm, **kw)).any()
        ), algorithm


@pytest.mark.gpu
def test_gather_and_direct_kernels_are_deterministic(rng):
    """No atomics: the same bits on every run (3 runs), also for gemm_fold (cuBLAS + gather fold)."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(GPU_SHAPES[0], rng)
    x, w, dy = cp.asarray(x), cp.asarray(w), cp.asarray(dy)
    for algorithm in ("gather", "gemm_fold"):
        runs = [gpuops.conv2d_grad_input(dy, x.shape, w, algorithm=algorithm, **kw) for _ in range(3)]
        assert all(bool((r == runs[0]).all()) for r in runs), algorithm
    for algorithm in ("direct", "direct_pairs", "direct_pairs_shared", "direct_columns"):
        runs = [gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm=algorithm, **kw) for _ in range(3)]
        assert all(bool((r == runs[0]).all()) for r in runs), algorithm


@pytest.mark.gpu
@pytest.mark.parametrize(
    "algorithm, shape",
    [
        ("direct_pairs", (1, 3, 20, 300, 4, 7, 1, 3, 1, 1)),
        ("direct_pairs", (4, 16, 30, 70, 16, 3, 2, 1, 1, 16)),
        ("direct_pairs_shared", (1, 3, 20, 300, 4, 7, 1, 3, 1, 1)),
        ("direct_pairs_shared", (4, 16, 30, 70, 16, 3, 2, 1, 1, 16)),
        ("direct_pairs_shared", (3, 2, 30, 23, 2, 17, 1, 8, 1, 2)),
        ("direct_columns", (4, 16, 30, 70, 16, 3, 2, 1, 1, 16)),
        ("direct_columns", (3, 2, 30, 23, 2, 5, 1, 2, 2, 2)),
        ("direct_columns", (13, 544, 7, 9, 544, 3, 2, 2, 2, 544)),
        ("direct_columns", (2, 3, 12, 300, 4, 7, 1, 3, 1, 1)),
    ],
    ids=[
        "v3 7x7, 49 taps on 16 warps",
        "v3 depthwise, stride 2, rows longer than a warp",
        "v4 7x7, chunks of 3 rows",
        "v4 depthwise, stride 2, chunks across samples",
        "v4 17x17, two passes of taps",
        "v5 depthwise, stride 2",
        "v5 5x5, dilation 2: three passes of 9 taps, 2 filters a channel",
        "v5 4 x 5 outputs: 51 runners of 5 columns, runs across samples",
        "v5 7x7 on 300 columns: columns past the 256 threads, six passes",
    ],
)
def test_weight_pairs_partial_sums_are_written_where_the_map_says(algorithm, shape, rng):
    """Trace build of grad_weight_v3 / v4 into NaN-poisoned partial sums: every one is written by
    the thread the map names, and the host's sum of the slices equals the float64 reference."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(shape, rng)
    q = gpuops.plan_conv2d_backward(dy.shape, x.shape, w.shape, **kw).problem
    launch = cb.weight_launch(q, algorithm)
    assert launch.grid[1] > 1  # several slices
    partial = cp.full((launch.grid[1], *w.shape), cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, cp.asarray(dy), cp.asarray(x), partial)
    pairs = {k: (v, v) for k, v in kw.items() if k != "groups"}  # the reference takes (h, w) pairs
    ref = conv2d_backward_ref(dy, x, w, groups=kw["groups"], **pairs)[1]
    np.testing.assert_allclose(partial.sum(axis=0).get(), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_the_launches_that_ran_are_the_planned_ones(rng):
    import cupy as cp

    from gpuops import launch as launch_module

    x, w, dy, kw = _gpu_problem(GPU_SHAPES[1], rng)
    x, w, dy = cp.asarray(x), cp.asarray(w), cp.asarray(dy)
    for algorithm, weight_algorithm in (("scatter", "direct"), ("gather", "direct")):
        plan = gpuops.plan_conv2d_backward(
            dy.shape, x.shape, w.shape, algorithm=algorithm, weight_algorithm=weight_algorithm, **kw
        )
        with launch_module.recorded() as ran:
            gpuops.conv2d_grad_input(dy, x.shape, w, algorithm=algorithm, **kw)
            gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm=weight_algorithm, **kw)
        assert ran == [plan.input_launch, plan.weight_launch]
    plan = gpuops.plan_conv2d_backward(
        dy.shape, x.shape, w.shape, algorithm="gemm_fold", weight_algorithm="gemm", **kw
    )
    with launch_module.recorded() as ran:
        gpuops.conv2d_grad_input(dy, x.shape, w, algorithm="gemm_fold", **kw)
        gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm="gemm", **kw)
    assert ran == [plan.input_launch, plan.weight_launch]  # the fold after cuBLAS, the unfold before it
    plan = gpuops.plan_conv2d_backward(dy.shape, x.shape, w.shape, weight_algorithm="batch_gemm", **kw)
    with launch_module.recorded() as ran:
        gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm="batch_gemm", **kw)
    block = cb.side_by_side(plan.problem.geometry, 1).block
    assert (
        ran == [plan.weight_launch] and plan.weight_launch.arg("W") == 3 * block
    )  # the 3 samples' wide image
    x, w, dy, kw = _gpu_problem(GPU_SHAPES[3], rng)  # 1x1: cuBLAS alone
    with launch_module.recorded() as ran:
        gx = gpuops.conv2d_grad_input(cp.asarray(dy), x.shape, cp.asarray(w), algorithm="gemm_fold", **kw)
        gw = gpuops.conv2d_grad_weight(cp.asarray(dy), cp.asarray(x), w.shape, algorithm="gemm", **kw)
    assert ran == []
    ref_x, ref_w, _ = conv2d_backward_ref(dy, x, w, groups=2)
    np.testing.assert_allclose(gx.get(), ref_x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gw.get(), ref_w, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
def test_auto_measures_once_and_stays_correct(rng):
    import cupy as cp

    from gpuops import autotune

    x, w, dy, kw = _gpu_problem(GPU_SHAPES[0], rng)
    ref = conv2d_backward_ref(dy, x, w, stride=(1, 1), padding=(1, 1))
    x_, w_, dy_ = cp.asarray(x), cp.asarray(w), cp.asarray(dy)
    for _ in range(2):
        gx, gw, _ = gpuops.conv2d_backward(dy_, x_, w_, **kw)
        np.testing.assert_allclose(gx.get(), ref[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gw.get(), ref[1], rtol=1e-4, atol=1e-3)
    choices = {k: v for k, v in autotune.remembered().items() if "conv_backward" in str(k)}
    known = gpuops.GRAD_INPUT_ALGORITHMS + gpuops.GRAD_WEIGHT_ALGORITHMS + gpuops.HOPPER_WEIGHT_ALGORITHMS
    assert set(choices.values()) <= set(known)
    assert any("conv_backward_input" in str(k) for k in choices) and any(
        "conv_backward_weight" in str(k) for k in choices
    )


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["zeros", "reflect"])
@pytest.mark.parametrize("algorithms", [("auto", "auto"), ("gather", "gemm")])
def test_repeat_calls_take_the_ready_path_with_new_values(algorithms, mode, rng, monkeypatch):
    """The second conv2d_grad_input / conv2d_grad_weight with the same shapes and arguments skips
    the checks and the plan (plan_conv2d_backward would raise) and computes from its new values;
    an unbatched call has its own entry."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(GPU_SHAPES[0], rng)
    kw = {**kw, "padding_mode": mode}
    alg, walg = algorithms
    first = [rng.standard_normal(a.shape).astype(np.float32) for a in (x, w, dy)]
    rounds = []
    for x_, w_, dy_ in (first, (x, w, dy)):
        for batched in (True, False):
            xb, wb, dyb = (x_, w_, dy_) if batched else (x_[0], w_, dy_[0])
            rounds.append((xb, wb, dyb, gpuops.conv2d_backward(dyb, xb, wb, **kw)))  # NumPy: the twins
    for i, (xb, wb, dyb, (ref_x, ref_w, _)) in enumerate(rounds):
        if i == 2:  # the second round: every check and plan is behind us
            monkeypatch.setattr(cb, "plan_conv2d_backward", lambda *a, **k: pytest.fail("planned again"))
        gx = gpuops.conv2d_grad_input(cp.asarray(dyb), xb.shape, cp.asarray(wb), **kw, algorithm=alg)
        gw = gpuops.conv2d_grad_weight(cp.asarray(dyb), cp.asarray(xb), wb.shape, **kw, algorithm=walg)
        np.testing.assert_allclose(gx.get(), ref_x, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gw.get(), ref_w, rtol=1e-4, atol=1e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ["auto", "gather"])
def test_conv_transpose2d_repeats_take_the_ready_path_with_new_values(algorithm, rng, monkeypatch):
    """The second conv_transpose2d with the same shapes and arguments (bias and none, batched
    and not) skips the checks, the plan and auto's lookup (plan_conv_transpose2d and autotune
    would fail) and computes from its new values: the NumPy twin's result each time."""
    import cupy as cp

    from gpuops import autotune

    N, C, H, W, M, K, S, P, D, G = GPU_SHAPES[1]
    kw = dict(stride=S, padding=P, output_padding=1, groups=G, dilation=D)
    shapes = ((N, C, H, W), (C, M // G, K, K), (M,))
    rounds = []
    for _ in range(2):
        x, w, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
        for xb, bb in ((x, b), (x[0], b), (x, None)):
            rounds.append((xb, w, bb, gpuops.conv_transpose2d(xb, w, bb, **kw)))  # NumPy: the twin
    for i, (xb, wb, bb, ref) in enumerate(rounds):
        if i == 3:  # the second round: every check, plan and lookup is behind us
            monkeypatch.setattr(cb, "plan_conv_transpose2d", lambda *a, **k: pytest.fail("planned again"))
            monkeypatch.setattr(autotune, "fastest", lambda *a, **k: pytest.fail("looked up again"))
        args = (cp.asarray(xb), cp.asarray(wb), None if bb is None else cp.asarray(bb))
        got = gpuops.conv_transpose2d(*args, **kw, algorithm=algorithm)
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)


def test_flipped_conv_holds_nothing_on_numpy(rng):
    """On NumPy there is no planned pair to hold: input_grad_call runs input_grad (its twin)."""
    dy = rng.standard_normal((2, 8, 9, 7)).astype(np.float32)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
    _, q = cb.check_conv2d_backward(dy.shape, (2, 4, 9, 7), w.shape, padding=1)
    assert cb.flipped_conv_call(dy, w, q) is None
    got = cb.input_grad_call(dy, w, q, "flipped_conv")(dy, w)
    np.testing.assert_array_equal(got, cb.input_grad(dy, w, q, "flipped_conv"))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "layer",
    [
        (2, 16, 12, 10, 24, 3, 1, 1, 1, 1),  # stride 1: one phase covers dx, held
        (2, 16, 12, 10, 8, 5, 1, 4, 2, 2),  # dilation 2, groups: one phase, held
        (2, 16, 12, 10, 8, 3, 2, 1, 1, 1),  # stride 2: four phases, input_flipped_conv each call
    ],
    ids=str,
)
def test_flipped_conv_repeats_run_the_held_flip_and_forward(layer, rng, monkeypatch):
    """conv2d_grad_input and conv_transpose2d with flipped_conv: where one phase covers dx the
    ready call holds the flip's launch and the forward's call (a repeat works out no phases and
    runs no input_flipped_conv, and its first launch is the flip); elsewhere input_flipped_conv
    runs each call. Values: the NumPy twin's, round after round."""
    import cupy as cp

    from gpuops import launch as launch_module

    N, C, H, W, M, K, S, P, D, G = layer
    kw = dict(stride=S, padding=P, dilation=D, groups=G)
    x_shape, w_shape = (N, C, H, W), (M, C // G, K, K)
    dy_shape = gpuops.plan_conv2d(x_shape, w_shape, None, S, P, D, G).out_shape
    output_padding = (H + 2 * P - D * (K - 1) - 1) % S
    _, q = cb.check_conv2d_backward(dy_shape, x_shape, w_shape, **kw)
    held = S == 1
    for round_ in range(3):
        dy, w = (rng.standard_normal(s).astype(np.float32) for s in (dy_shape, w_shape))
        ref = gpuops.conv2d_grad_input(dy, x_shape, w, **kw)  # NumPy: the twin
        dy_, w_ = cp.asarray(dy), cp.asarray(w)
        if round_ == 0:
            assert isinstance(cb.input_grad_call(dy_, w_, q, "flipped_conv"), cb.FlippedConvCall) == held
        if round_ == 2 and held:  # the ready calls of both ops exist: nothing is worked out again
            monkeypatch.setattr(cb, "phase_plan", lambda *a: pytest.fail("phases worked out again"))
            monkeypatch.setattr(cb, "input_flipped_conv", lambda *a, **k: pytest.fail("not held"))
        with launch_module.recorded() as ran:
            got = gpuops.conv2d_grad_input(dy_, x_shape, w_, **kw, algorithm="flipped_conv")
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)
        assert (ran[0].kernel == "flip_filter") or not held
        got = gpuops.conv_transpose2d(dy_, w_, None, S, P, output_padding, G, D, algorithm="flipped_conv")
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)
        got = gpuops.conv2d_grad_input(dy_[1], x_shape[1:], w_, **kw, algorithm="flipped_conv")  # (C, H, W)
        np.testing.assert_allclose(got.get(), ref[1], rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "layer",
    [
        (4, 16, 7, 9, 24, 1, 1, 0, 1, "zeros"),  # 1x1: x is the columns
        (3, 16, 6, 5, 8, 1, 1, 0, 4, "zeros"),  # 1x1, four groups
        (2, 6, 9, 8, 4, 3, 2, 1, 2, "zeros"),  # 3x3, stride 2, two groups: unfolded columns
        (2, 4, 8, 7, 6, 3, 1, 2, 1, "reflect"),  # the padded input, made again each call
    ],
    ids=str,
)
def test_gemm_repeats_run_the_planned_weight_gemm(layer, rng, monkeypatch):
    """conv2d_grad_weight with gemm: the ready call is the WeightGemm planned on the first call;
    a repeat neither plans nor takes the unplanned path. Outputs come from memory the pool held
    NaNs in; values are the NumPy twin's, round after round, batched and for one sample."""
    import cupy as cp

    N, C, H, W, M, K, S, P, G, mode = layer
    kw = dict(stride=S, padding=P, groups=G, padding_mode=mode)
    x_shape, w_shape = (N, C, H, W), (M, C // G, K, K)
    padded = (N, C, H + 2 * P, W + 2 * P) if mode == "reflect" else x_shape
    dy_shape = gpuops.plan_conv2d(padded, w_shape, None, S, 0 if mode == "reflect" else P, 1, G).out_shape
    q = cb.check_conv2d_backward(dy_shape, x_shape, w_shape, **kw)[1]
    for round_ in range(3):
        x, dy = (rng.standard_normal(s).astype(np.float32) for s in (x_shape, dy_shape))
        ref = gpuops.conv2d_grad_weight(dy, x, w_shape, **kw)  # NumPy: the twin
        want = gpuops.conv2d_grad_weight(dy[1], x[1], w_shape, **kw)
        x_, dy_ = cp.asarray(x), cp.asarray(dy)
        if round_ == 0:
            assert isinstance(cb.weight_grad_call(dy_, x_, q, "gemm"), cb.WeightGemm)
        if round_ == 2:  # the ready call exists: nothing is planned or looked up again
            monkeypatch.setattr(cb.WeightGemm, "plan", lambda *a: pytest.fail("planned again"))
            monkeypatch.setattr(cb, "weight_grad", lambda *a: pytest.fail("not held"))
        products = (N, M, (C // G) * K * K)
        poison = [cp.full(s, cp.nan, cp.float32) for s in (products, w_shape, products, w_shape)]
        del poison  # freed to the pool: the next allocations of these sizes reuse NaN-filled blocks
        got = gpuops.conv2d_grad_weight(dy_, x_, w_shape, **kw, algorithm="gemm")
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)
        one = gpuops.conv2d_grad_weight(dy_[1], x_[1], w_shape, **kw, algorithm="gemm")  # (C, H, W)
        np.testing.assert_allclose(one.get(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_weight_gemm_refuses_arrays_it_was_not_planned_for(rng):
    """A WeightGemm reads dy and x through offsets planned for C-contiguous arrays: a strided
    view is refused, not read as if it were contiguous."""
    import cupy as cp

    x = cp.asarray(rng.standard_normal((2, 8, 6, 10)).astype(np.float32))
    dy = cp.asarray(rng.standard_normal((2, 4, 6, 5)).astype(np.float32))
    q = cb.check_conv2d_backward(dy.shape, (2, 8, 6, 5), (4, 8, 1, 1))[1]
    with pytest.raises(ValueError, match="C-contiguous dy and x"):
        cb.weight_gemm_plan(q, 2)(dy, x[..., ::2])


@pytest.mark.gpu
def test_gemm_paths_split_a_batch_that_outgrows_the_budget(rng):
    """With a budget of 1.5 samples of cols, the GEMM paths run sample by sample and still agree."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(GPU_SHAPES[1], rng)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape, **kw)
    budget = q.cols_bytes_per_sample * 3 // 2
    assert cb.batch_chunk(q, budget) == 1
    x_, w_, dy_ = cp.asarray(x), cp.asarray(w), cp.asarray(dy)
    ref_x, ref_w, _ = gpuops.conv2d_backward(dy, x, w, **kw)
    np.testing.assert_allclose(cb._input_gemm_fold_gpu(dy_, w_, q, budget).get(), ref_x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(cb._weight_gemm_gpu(dy_, x_, q, budget).get(), ref_w, rtol=1e-4, atol=1e-3)
    # batch_gemm: a budget of 1.5 samples' wide images gives one sample per chunk; they add up
    side_budget = cb.side_by_side_bytes(q) * 3 // 2
    assert cb.side_by_side_chunk(q, side_budget) == 1
    got = cb.weight_batch_gemm(dy_, x_, q, side_budget).get()
    np.testing.assert_allclose(got, ref_w, rtol=1e-4, atol=1e-3)
    with pytest.raises(
        ValueError, match=r"the GEMM path \(its unfolded columns\) needs [0-9,]+ bytes for one sample"
    ):
        cb.batch_chunk(q, q.cols_bytes_per_sample - 1)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "shape", [*GPU_SHAPES, (2, 6, 19, 23, 8, 4, 1, 0, 1, 2), (2, 4, 16, 16, 4, 3, 1, 1, 1, 4)], ids=str
)
def test_flipped_conv_on_every_forward_kernel(shape, rng):
    """grad_input as conv2d(dY, flipped filter) on each fp32 forward kernel (auto picks one per
    shape), against the float64 loop reference; a depthwise shape reaches v6."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem(shape, rng)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape, **kw)
    stride, padding, dilation = ((kw[k],) * 2 for k in ("stride", "padding", "dilation"))
    ref_x, _, _ = conv2d_backward_ref(dy, x, w, stride, padding, dilation, kw["groups"])
    for forward in gpuops.ALGORITHMS:
        got = cb.input_flipped_conv(cp.asarray(dy), cp.asarray(w), q, forward=forward)
        assert got.shape == x.shape
        np.testing.assert_allclose(got.get(), ref_x, rtol=1e-4, atol=1e-4, err_msg=forward)


@pytest.mark.gpu
def test_stride_1_flipped_conv_flips_the_filter_in_one_planned_launch(rng):
    """Where one phase takes every tap (stride 1), flipped_conv copies the filter with the
    flip_filter launch (its result equal to flipped_filter's, entry by entry) and then runs the
    forward's kernel: two launches. A strided layer's phases keep the array library's copies."""
    import cupy as cp

    from gpuops import launch as launch_module

    x, w, dy, kw = _gpu_problem((2, 4, 11, 9, 6, 3, 1, 1, 1, 2), rng)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape, **kw)
    w_ = cp.asarray(w)
    flip = cb.flip_filter_launch(q)
    flipped = cp.full(cb.flipped_shape(q), cp.nan, cp.float32)
    launch_module.run(flip, w_, flipped)
    np.testing.assert_array_equal(flipped.get(), cb.flipped_filter(w, q.groups))
    forward = gpuops.plan_conv2d(dy.shape, flipped.shape, None, 1, 1, 1, 2, algorithm="direct").launch
    with launch_module.recorded() as ran:
        got = cb.input_flipped_conv(cp.asarray(dy), w_, q, forward="direct")
    assert ran == [flip, forward]
    ref_x, _, _ = conv2d_backward_ref(dy, x, w, (1, 1), (1, 1), (1, 1), 2)
    np.testing.assert_allclose(got.get(), ref_x, rtol=1e-4, atol=1e-4)
    x, w, dy, kw = _gpu_problem((2, 4, 11, 9, 6, 3, 2, 1, 1, 2), rng)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape, **kw)
    with launch_module.recorded() as ran:
        cb.input_flipped_conv(cp.asarray(dy), cp.asarray(w), q, forward="direct")
    assert flip not in ran and all(launch.kernel != cb.FLIP_KERNEL for launch in ran)


@pytest.mark.gpu
def test_pair_versions_add_their_slices_in_one_planned_launch(rng):
    """v3-v5's partial sums of several slices become dw through add_slices: its result equals
    the slices' sum, and weight_pairs runs the pair kernel, then it."""
    import cupy as cp

    from gpuops import launch as launch_module

    x, w, dy, kw = _gpu_problem((4, 8, 40, 36, 8, 3, 1, 1, 1, 8), rng)
    _, q = cb.check_conv2d_backward(dy.shape, x.shape, w.shape, **kw)
    for algorithm in cb.PAIR_ALGORITHMS:
        slices = cb.slices_of(q, algorithm)[0]
        assert slices > 1, algorithm
        partial = cp.asarray(rng.standard_normal((slices, *q.w_shape)).astype(np.float32))
        summed = cp.full(q.w_shape, cp.nan, cp.float32)
        adder = cb.add_slices_launch(q, slices)
        launch_module.run(adder, partial, summed)
        np.testing.assert_allclose(summed.get(), partial.get().sum(axis=0), rtol=1e-6, atol=1e-6)
        with launch_module.recorded() as ran:
            got = cb.weight_pairs(cp.asarray(dy), cp.asarray(x), q, algorithm)
        assert [launch.kernel for launch in ran] == [cb.KERNELS[algorithm], cb.SLICES_KERNEL]
        _, ref_w, _ = conv2d_backward_ref(dy, x, w, groups=8, padding=(1, 1))
        np.testing.assert_allclose(got.get(), ref_w, rtol=1e-4, atol=1e-3, err_msg=algorithm)


@pytest.mark.gpu
def test_batch_gemm_is_one_gemm_per_chunk_on_a_late_stage_layer(rng):
    """Many channels on a 7 x 7 plane (where one GEMM per sample has an inner side of 49):
    batch_gemm against the per-sample gemm and the CPU twin."""
    import cupy as cp

    x, w, dy, kw = _gpu_problem((8, 64, 7, 7, 96, 3, 1, 1, 1, 1), rng)
    x_, dy_ = cp.asarray(x), cp.asarray(dy)
    cpu = gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm="batch_gemm", **kw)
    for algorithm in ("batch_gemm", "gemm"):
        got = gpuops.conv2d_grad_weight(dy_, x_, w.shape, algorithm=algorithm, **kw).get()
        np.testing.assert_allclose(got, cpu, rtol=1e-4, atol=1e-3, err_msg=algorithm)


@pytest.mark.gpu
def test_forward_conv_grad_weight_is_a_forward_convolution(rng):
    """forward_conv on 32 samples: dW is conv2d's output (the batch as the channels; on Hopper
    auto may run v13 there: 32 channels), equal to the loop reference, groups and stride too."""
    import cupy as cp

    from gpuops import launch as launch_module

    x = rng.standard_normal((32, 64, 11, 13)).astype(np.float32)
    w_shape = (48, 32, 3, 3)
    kw = dict(stride=(2, 2), padding=(1, 1), groups=2)
    g = gpuops.window_geometry(11, 13, 3, 2, 1, 1)
    dy = rng.standard_normal((32, 48, g.H_out, g.W_out)).astype(np.float32)
    _, ref_w, _ = conv2d_backward_ref(dy, x, np.zeros(w_shape, np.float32), **kw)
    dy_, x_ = cp.asarray(dy), cp.asarray(x)
    with launch_module.recorded() as ran:
        got = gpuops.conv2d_grad_weight(dy_, x_, w_shape, algorithm="forward_conv", **kw)
    assert ran, "conv2d's kernels ran"
    assert np.abs(got.get() - ref_w).max() <= 1e-5 * np.abs(ref_w).max()
