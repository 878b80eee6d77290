"""max_pool2d / avg_pool2d and their backward passes on NumPy and (-m gpu) on the CUDA kernels,
against PyTorch (values, indices, autograd) on seeded random geometries: ceil_mode, padding,
dilation, ties, NaN; and PyTorch's refusals, argument by argument."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import gpuops
from gpuops import pool
from gpuops.launch import kernel_signature
from gpuops.maps import pool as maps
from tests.support.helpers import BACKENDS, host, on

backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


@dataclass(frozen=True)
class PoolCase:
    shape: tuple[int, ...]
    kernel_size: tuple[int, int]
    stride: tuple[int, int] | None
    padding: tuple[int, int]
    dilation: tuple[int, int]
    ceil_mode: bool

    def max_args(self) -> tuple:
        return self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode

    def avg_args(self) -> tuple:
        return self.kernel_size, self.stride, self.padding, self.ceil_mode


def pool_cases(count: int, seed: int) -> list[PoolCase]:
    """Random geometries PyTorch accepts (padding <= kernel / 2, at least one output, no window
    of padding only), with a few fixed ones first: LeNet's 2x2, overlapping 3x3 / 2, ceil_mode."""
    cases = [
        PoolCase((2, 3, 8, 8), (2, 2), None, (0, 0), (1, 1), False),
        PoolCase((1, 2, 7, 9), (3, 3), (2, 2), (1, 1), (1, 1), True),
        PoolCase((3, 5, 6), (2, 3), (2, 2), (1, 0), (2, 1), True),
        PoolCase((2, 1, 4, 4), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ]
    rng = np.random.default_rng(seed)
    while len(cases) < count:
        lead = (int(rng.integers(0, 3)), int(rng.integers(1, 4)))[int(rng.integers(2)) :]
        if lead == (0,):
            lead = (1,)
        hw = tuple(int(v) for v in rng.integers(1, 14, 2))
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        stride = None if rng.random() < 0.2 else tuple(int(v) for v in rng.integers(1, 4, 2))
        pad = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k)
        dil = tuple(int(v) for v in rng.integers(1, 3, 2))
        case = PoolCase((*lead, *hw), k, stride, pad, dil, bool(rng.integers(2)))
        try:
            pool.pool_geometry(*hw, *case.max_args())
        except ValueError:
            continue
        cases.append(case)
    return cases


CASES = pool_cases(36, seed=29)


def _fits_without_dilation(case: PoolCase) -> bool:
    try:
        pool.pool_geometry(*case.shape[-2:], case.kernel_size, case.stride, case.padding, 1, case.ceil_mode)
    except ValueError:
        return False
    return True


AVG_CASES = [c for c in CASES if _fits_without_dilation(c)][::2]  # avg_pool2d has no dilation
AVG_RULES = [(True, None), (False, None), (True, 3), (False, -2)]


def _tied_input(rng, shape) -> np.ndarray:
    """Small integers: most windows hold ties, so the first-maximum rule is exercised."""
    return rng.integers(-2, 3, shape).astype(np.float32)


@backends
@pytest.mark.parametrize("case", CASES, ids=str)
def test_max_pool_values_and_indices_equal_pytorch(case, xp, rng, torch):
    x = _tied_input(rng, case.shape)
    ty, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), *case.max_args(), return_indices=True)
    y, index = gpuops.max_pool2d(*on(xp, x), *case.max_args(), return_indices=True)
    assert isinstance(y, xp.ndarray) and y.dtype == np.float32 and index.dtype == np.int64
    np.testing.assert_array_equal(host(y), ty.numpy())
    np.testing.assert_array_equal(host(index), ti.numpy())
    np.testing.assert_array_equal(host(gpuops.max_pool2d(*on(xp, x), *case.max_args())), ty.numpy())


@backends
@pytest.mark.parametrize("case", CASES[::3], ids=str)
@pytest.mark.parametrize("algorithm", pool.MAX_BACKWARD_ALGORITHMS)
def test_max_pool_backward_equals_autograd(case, algorithm, xp, rng, torch):
    x = _tied_input(rng, case.shape)
    xt = torch.from_numpy(x).requires_grad_()
    y = torch.nn.functional.max_pool2d(xt, *case.max_args())
    dy = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(torch.from_numpy(dy))
    dx = gpuops.max_pool2d_backward(*on(xp, dy, x), *case.max_args(), algorithm=algorithm)
    assert dx.shape == x.shape and dx.dtype == np.float32
    np.testing.assert_allclose(host(dx), xt.grad.numpy(), rtol=1e-6, atol=1e-6)


@backends
def test_max_pool_backward_takes_the_forward_indices(xp, rng):
    x = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    dy = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)  # (9 + 2 - 3) // 2 + 1
    _, index = gpuops.max_pool2d(*on(xp, x), 3, 2, 1, return_indices=True)
    given = gpuops.max_pool2d_backward(*on(xp, dy, x), 3, 2, 1, indices=index)
    np.testing.assert_array_equal(host(given), host(gpuops.max_pool2d_backward(*on(xp, dy, x), 3, 2, 1)))


@backends
def test_nan_propagates_and_minus_infinity_reports_the_first_cell_inside(xp, torch):
    x = np.array([[[[1, np.nan, 3, np.nan, -np.inf, -np.inf]]]], np.float32)
    args = ((1, 2), (1, 2), (0, 1), 1, True)
    ty, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), *args, return_indices=True)
    y, index = gpuops.max_pool2d(*on(xp, x), *args, return_indices=True)
    np.testing.assert_array_equal(host(y), ty.numpy())  # [1, nan, nan, -inf]: NaN wins, -inf keeps cell 5
    np.testing.assert_array_equal(host(index), ti.numpy())
    assert host(index).ravel().tolist() == [0, 1, 3, 5]


@backends
@pytest.mark.parametrize("case", AVG_CASES, ids=str)
@pytest.mark.parametrize("rule", AVG_RULES, ids=str)
def test_avg_pool_and_its_backward_equal_pytorch(case, rule, xp, rng, torch):
    k, stride, padding, ceil_mode = case.avg_args()
    x = rng.standard_normal(case.shape).astype(np.float32)
    xt = torch.from_numpy(x).requires_grad_()
    ty = torch.nn.functional.avg_pool2d(xt, k, stride, padding, ceil_mode, *rule)
    dy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.from_numpy(dy))
    y = gpuops.avg_pool2d(*on(xp, x), k, stride, padding, ceil_mode, *rule)
    np.testing.assert_allclose(host(y), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    dx = gpuops.avg_pool2d_backward(*on(xp, dy), x.shape, k, stride, padding, ceil_mode, *rule)
    np.testing.assert_allclose(host(dx), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_refusals_agree_with_pytorch(torch):
    """Random arguments, many of them bad: we raise a ValueError exactly when PyTorch raises,
    except for windows of padding only, which PyTorch answers with -inf and an index that
    names another cell (we refuse those; checked here too)."""
    rng = np.random.default_rng(16)
    refused_only_by_us = 0
    for _ in range(400):
        H, W = (int(v) for v in rng.integers(1, 8, 2))
        k = tuple(int(v) for v in rng.integers(1, 5, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        padding = tuple(int(v) for v in rng.integers(0, 4, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 4, 2))
        ceil_mode = bool(rng.integers(2))
        x = np.ones((1, 1, H, W), np.float32)
        try:
            ty = torch.nn.functional.max_pool2d(torch.from_numpy(x), k, stride, padding, dilation, ceil_mode)
        except RuntimeError:
            ty = None
        try:
            gpuops.max_pool2d(x, k, stride, padding, dilation, ceil_mode)
            ours = None
        except ValueError as exc:
            ours = str(exc)
        if ty is not None and ours is not None:
            assert "reads padding only" in ours, ours
            assert np.isneginf(ty.numpy()).any()
            refused_only_by_us += 1
        else:
            assert (ty is None) == (ours is not None), (H, W, k, stride, padding, dilation, ceil_mode, ours)
    assert refused_only_by_us < 40


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda x: gpuops.max_pool2d(x, 2, padding=2), ["padding 2", "half the kernel size 2"]),
        (lambda x: gpuops.max_pool2d(x, 0), ["kernel_size 0", "at least 1"]),
        (lambda x: gpuops.max_pool2d(x, 2, stride=(1, 0)), ["stride 0 (width)", "at least 1"]),
        (lambda x: gpuops.max_pool2d(x, 6), ["kernel height 6", "padded input height 5"]),
        (lambda x: gpuops.max_pool2d(x, 2, ceil_mode=1), ["ceil_mode", "True or False"]),
        (lambda x: gpuops.max_pool2d(x[0, 0], 2), ["input must have 3 or 4 dimensions"]),
        (lambda x: gpuops.avg_pool2d(x, 2, divisor_override=0), ["divisor_override 0"]),
        (lambda x: gpuops.avg_pool2d(x, 2, divisor_override=1.5), ["divisor_override", "1.5"]),
        (
            lambda x: gpuops.max_pool2d_backward(np.ones((1, 2, 3, 3)), x, 2),
            ["grad_output shape", "(1, 2, 2, 2)"],
        ),
        (lambda x: gpuops.max_pool2d_backward(np.ones((1, 2, 2, 2)), x, 2, algorithm="x"), ["algorithm 'x'"]),
        (lambda x: gpuops.avg_pool2d_backward(np.ones((1, 2, 2, 2)), (2, 5, 5), 2), ["grad_output shape"]),
    ],
)
def test_bad_arguments_name_parameter_value_and_limit(call, words):
    x = np.ones((1, 2, 5, 5), np.float32)
    with pytest.raises(ValueError) as info:
        call(x)
    for word in words:
        assert word in str(info.value)


def test_empty_batch_gives_empty_outputs():
    x = np.ones((0, 2, 6, 6), np.float32)
    y, index = gpuops.max_pool2d(x, 2, return_indices=True)
    assert y.shape == index.shape == (0, 2, 3, 3)
    assert gpuops.avg_pool2d_backward(np.ones((0, 2, 3, 3)), x.shape, 2).shape == x.shape


CEIL_ROWS = [  # (size, pad, k, stride, dilation, ceil_mode, outputs), counted by hand
    (5, 0, 2, 2, 1, False, 2),  # windows at 0, 2; the last column is never read
    (5, 0, 2, 2, 1, True, 3),  # ceil: a third window at 4 starts inside the input
    (4, 1, 3, 2, 1, True, 3),  # windows at -1, 1, 3; the last one is cut at the padding
    (6, 1, 2, 3, 1, True, 3),  # windows at -1, 2, 5
    (1, 1, 2, 2, 1, True, 1),  # ceil asks for a window at 1 = size + pad: it would read padding only, dropped
    (7, 0, 3, 2, 2, True, 2),  # dilation 2 spans 5 cells: windows at 0, 2; ceil adds none (span 2 / 2 exact)
]


@pytest.mark.parametrize("row", CEIL_ROWS, ids=str)
def test_ceil_mode_output_size(row, torch):
    size, pad, k, stride, dil, ceil, expected = row
    assert pool.pool_count(size, pad, k, stride, dil, ceil) == expected
    x = torch.zeros((1, 1, 1, size))
    assert (
        torch.nn.functional.max_pool2d(x, (1, k), (1, stride), (0, pad), (1, dil), ceil).shape[-1] == expected
    )


# ---- index maps ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES[:12], ids=str)
def test_maps_agree_with_the_kernels(case, rng):
    """The window of every output holds its winner; outputs_reading is the inverse of
    window_taps; routes_to sums to the max's backward of dy; coverage is the avg's backward of
    ones with divisor 1."""
    x = _tied_input(rng, case.shape)
    H, W = case.shape[-2:]
    g = pool.pool_geometry(H, W, *case.max_args())
    _, index = gpuops.max_pool2d(x, *case.max_args(), return_indices=True)
    plane = index.reshape(-1, g.H_out, g.W_out)[0]
    reads = {(ih, iw): [] for ih in range(H) for iw in range(W)}
    for oh in range(g.H_out):
        for ow in range(g.W_out):
            taps = maps.window_taps(g, oh, ow)
            assert len(taps) == case.kernel_size[0] * case.kernel_size[1]
            inside = [(t.ih, t.iw) for t in taps if t.inside]
            assert maps.winner(plane, W, oh, ow) in inside
            for cell in inside:
                reads[cell].append((oh, ow))
    for (ih, iw), outputs in reads.items():
        assert sorted(maps.outputs_reading(g, ih, iw)) == sorted(outputs)
    dy = rng.standard_normal(index.shape).astype(np.float32)
    dx = gpuops.max_pool2d_backward(dy, x, *case.max_args()).reshape(-1, H, W)[0]
    dy0 = dy.reshape(-1, g.H_out, g.W_out)[0]
    for ih in range(H):
        for iw in range(W):
            routed = sum(float(dy0[o]) for o in maps.routes_to(g, plane, ih, iw))
            assert dx[ih, iw] == pytest.approx(routed, abs=1e-5)
    assert maps.wins_per_cell(g, plane).sum() == g.H_out * g.W_out


def test_coverage_of_lenet_pooling_is_one_window_per_cell():
    g = pool.pool_geometry(8, 8, 2)
    np.testing.assert_array_equal(maps.coverage(g), np.ones((8, 8), int))
    g = pool.pool_geometry(5, 5, 3, 2, 1)  # windows at -1, 1, 3: odd cells are shared
    expected_axis = np.array([1, 2, 1, 2, 1])
    np.testing.assert_array_equal(maps.coverage(g), np.outer(expected_axis, expected_axis))


def test_map_arguments_outside_the_grid_are_refused():
    g = pool.pool_geometry(4, 4, 2)
    with pytest.raises(ValueError, match="output cell"):
        maps.window_taps(g, 2, 0)
    with pytest.raises(ValueError, match="input cell"):
        maps.outputs_reading(g, 0, 4)


# ---- kernels: launches, and on the GPU poisoned outputs and who wrote each cell -------------------------
LAUNCHES = {
    "max": lambda g, rule: pool.max_pool2d_launch(6, g),
    "max_gather": lambda g, rule: pool.max_pool2d_backward_launch(6, g, "gather"),
    "max_scatter": lambda g, rule: pool.max_pool2d_backward_launch(6, g, "scatter"),
    "avg": lambda g, rule: pool.avg_pool2d_launch(6, g, rule),
    "avg_backward": lambda g, rule: pool.avg_pool2d_backward_launch(6, g, rule),
}


@pytest.mark.parametrize("name", LAUNCHES)
def test_launch_arguments_match_the_kernel_signature(name):
    g = pool.pool_geometry(9, 7, 3, 2, 1, 1, True)
    launch = LAUNCHES[name](g, pool.AvgRule(True, None))
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers
    assert [n for n, _ in launch.args] == scalars


def _poison(cp, shape, dtype) -> None:
    """Hand the memory pool a NaN-filled (or -1-filled) block of this shape: an output of that
    size reuses it, so a cell no thread writes keeps the junk."""
    cp.get_default_memory_pool().free_all_blocks()
    junk = cp.full(shape, cp.nan if dtype == np.float32 else -1, dtype=dtype)
    del junk


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES[:8], ids=str)
def test_every_output_is_written_on_the_gpu(case, rng, torch):
    import cupy as cp

    x = rng.standard_normal(case.shape).astype(np.float32)
    xt = torch.from_numpy(x).requires_grad_()
    ty, ti = torch.nn.functional.max_pool2d(xt, *case.max_args(), return_indices=True)
    dy = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ty.backward(torch.from_numpy(dy))
    _poison(cp, tuple(ty.shape), np.float32)
    y, index = gpuops.max_pool2d(cp.asarray(x), *case.max_args(), return_indices=True)
    np.testing.assert_array_equal(y.get(), ty.detach().numpy())
    np.testing.assert_array_equal(index.get(), ti.numpy())
    for algorithm in pool.MAX_BACKWARD_ALGORITHMS:
        _poison(cp, x.shape, np.float32)
        dx = gpuops.max_pool2d_backward(cp.asarray(dy), cp.asarray(x), *case.max_args(), algorithm=algorithm)
        assert not bool(cp.isnan(dx).any()), algorithm
        np.testing.assert_allclose(dx.get(), xt.grad.numpy(), rtol=1e-6, atol=1e-6, err_msg=algorithm)


@pytest.mark.gpu
def test_large_planes_equal_the_numpy_twins(rng):
    """Rows longer than a block and many planes: the grid-stride loop and the thread walk."""
    import cupy as cp

    x = rng.standard_normal((3, 40, 70, 600)).astype(np.float32)
    for args in (((3, 3), (2, 2), (1, 1), (1, 1), True), ((2, 5), None, (1, 2), (2, 1), False)):
        y, index = gpuops.max_pool2d(x, *args, return_indices=True)
        yg, ig = gpuops.max_pool2d(cp.asarray(x), *args, return_indices=True)
        np.testing.assert_array_equal(yg.get(), y)
        np.testing.assert_array_equal(ig.get(), index)
        dy = rng.standard_normal(y.shape).astype(np.float32)
        dx = gpuops.max_pool2d_backward(dy, x, *args)
        np.testing.assert_allclose(
            gpuops.max_pool2d_backward(cp.asarray(dy), cp.asarray(x), *args).get(), dx, atol=1e-5
        )
    a = gpuops.avg_pool2d(x, 3, 2, 1, True, False)
    np.testing.assert_allclose(
        gpuops.avg_pool2d(cp.asarray(x), 3, 2, 1, True, False).get(), a, rtol=1e-5, atol=1e-6
    )
    dy = rng.standard_normal(a.shape).astype(np.float32)
    np.testing.assert_allclose(
        gpuops.avg_pool2d_backward(cp.asarray(dy), x.shape, 3, 2, 1, True, False).get(),
        gpuops.avg_pool2d_backward(dy, x.shape, 3, 2, 1, True, False),
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["max", "max_gather", "avg", "avg_backward"])
def test_thread_of_names_the_thread_that_wrote_each_output(name, rng):
    """Trace build: every output cell records the thread that stored it; thread_of agrees."""
    import cupy as cp

    from gpuops.launch import traced

    g = pool.pool_geometry(11, 9, 3, 2, 1, 1, True)
    launch = LAUNCHES[name](g, pool.AvgRule(False, None))
    x = cp.asarray(rng.standard_normal((6, 11, 9)).astype(np.float32))
    dy = cp.asarray(rng.standard_normal((6, g.H_out, g.W_out)).astype(np.float32))
    index = gpuops.max_pool2d(x, 3, 2, 1, 1, True, return_indices=True)[1]
    if name == "max":
        out = cp.full((6, g.H_out, g.W_out), cp.nan, cp.float32)
        arrays = (x, out, cp.full(out.shape, -1, cp.int64))  # traced watches the last: the indices
    elif name == "max_gather":
        out = cp.full((6, 11, 9), cp.nan, cp.float32)
        arrays = (dy, index, out)
    elif name == "avg":
        out = cp.full((6, g.H_out, g.W_out), cp.nan, cp.float32)
        arrays = (x, out)
    else:
        out = cp.full((6, 11, 9), cp.nan, cp.float32)
        arrays = (dy, out)
    writers, dims = traced(launch, *arrays)
    assert dims == (*launch.grid, *launch.block)
    assert not bool(cp.isnan(out).any()) and (writers > 0).all()
    for cell in np.ndindex(out.shape):
        assert writers[cell] == launch.thread_of(*cell).trace_id(launch.grid, launch.block), cell


def test_padding_extent_reaches_the_last_window():
    g = pool.pool_geometry(5, 5, 2, 2, 0, 1, True)  # ceil: a third window at 4 reads column 5, past the input
    assert maps.padding_extent(g) == (0, 1, 0, 1)
    # rows: windows at -1, 1, 3 end at row 5; columns: windows at -1, 1, 3, 5 end at column 7
    g = pool.pool_geometry(6, 7, 3, 2, 1)
    assert maps.padding_extent(g) == (1, 1, 1, 1)


def test_window_values_and_ties():
    x = np.array([[3, 1, 3], [0, 3, 2]], np.float32)
    g = pool.pool_geometry(2, 3, 2, 1, 1)  # padding 1: output (1, 1) reads rows 0-1, columns 0-1
    _, index = gpuops.max_pool2d(x[None, None], 2, 1, 1, return_indices=True)
    assert maps.window_values(g, x, 1, 1) == [3.0, 1.0, 0.0, 3.0]
    assert maps.winner(index[0, 0], 3, 1, 1) == (0, 0)  # the first 3 in scan order
    assert maps.ties_with_winner(g, x, index[0, 0], 1, 1) == 2
    assert maps.window_values(g, x, 0, 0) == [3.0]  # three taps in the padding


def test_plans_hold_the_checked_geometry_shape_and_launches():
    plan = gpuops.plan_max_pool2d((2, 3, 9, 7), 3, 2, 1, 1, True)
    assert plan.out_shape == (2, 3, 5, 4) and plan.launch.kernel == "max_pool2d_v1"
    assert plan.launch.arg("rows") == 6 * 5 and plan.launches == (plan.launch,)
    back = gpuops.plan_max_pool2d_backward((2, 3, 5, 4), (2, 3, 9, 7), 3, 2, 1, 1, True, "scatter")
    assert back.out_shape == (2, 3, 9, 7) and back.launch.kernel == "max_pool2d_backward_v1_scatter"
    assert back.launches == (plan.launch, back.launch)  # the forward finds the winners first
    avg = gpuops.plan_avg_pool2d_backward((3, 2, 2), (3, 5, 5), 2, None, 0, False, False, None)
    assert avg.launch.kernel == "avg_pool2d_backward_v1_gather" and avg.rule == pool.AvgRule(False, None)
    assert gpuops.plan_avg_pool2d((0, 3, 4, 4), 2).launch is None  # an empty batch: nothing to launch
    with pytest.raises(ValueError, match="grad_output shape"):
        gpuops.plan_max_pool2d_backward((2, 3, 4, 4), (2, 3, 9, 7), 3, 2, 1)


def _outputs(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.gpu
def test_repeated_calls_reuse_their_ready_call_and_compute_the_new_values(rng):
    """Each pooling op and gradient: after a first call the ready-call cache holds its call for
    (op, device, shapes, arguments); a repeat with new values runs only its planned launches (no
    checks) and still equals the NumPy twins; the max backward finds the winners again from the
    new x. Passing the forward's indices never takes the ready path (they are int64)."""
    import cupy as cp

    from gpuops.launch import ready_call, ready_key, recorded

    shape, window = (2, 3, 11, 9), ((3, 3), (2, 2), (1, 1))
    dy_shape = (2, 3, 6, 5)
    max_args, avg_args = (*window, (1, 1), True), (*window, True, False, None)
    cases = [  # (op, the arrays it takes (shapes), its other arguments as given, call, launches run)
        ("max_pool2d", (shape,), (*max_args, True), lambda x: gpuops.max_pool2d(x, *max_args, True), 1),
        ("avg_pool2d", (shape,), avg_args, lambda x: gpuops.avg_pool2d(x, *avg_args), 1),
        (
            "avg_pool2d_backward",
            (dy_shape,),
            (shape, *avg_args),
            lambda dy: gpuops.avg_pool2d_backward(dy, shape, *avg_args),
            1,
        ),
    ] + [
        (
            "max_pool2d_backward",
            (dy_shape, shape),
            (*max_args, algorithm),
            lambda dy, x, a=algorithm: gpuops.max_pool2d_backward(dy, x, *max_args, algorithm=a),
            2,  # the forward (winners), then the routing kernel
        )
        for algorithm in pool.MAX_BACKWARD_ALGORITHMS
    ]
    for op, shapes, args, call, launches in cases:
        for repeat in (False, True):
            arrays = [rng.integers(0, 5, s).astype(np.float32) for s in shapes]  # ties are common
            with recorded() as ran:
                got = call(*(cp.asarray(a) for a in arrays))
            want = call(*arrays)
            for g, w in zip(_outputs(got), _outputs(want), strict=True):
                np.testing.assert_allclose(g.get(), w, rtol=1e-6, atol=1e-6, err_msg=f"{op} {args}")
            key = ready_key(op, tuple(cp.asarray(a) for a in arrays), args)
            assert ready_call(key) is not None, op
            if repeat:
                assert len(ran) == launches, op
    x = cp.asarray(rng.standard_normal(shape).astype(np.float32))
    y, index = gpuops.max_pool2d(x, *max_args, True)
    dy = cp.ones_like(y)
    with recorded() as ran:
        gpuops.max_pool2d_backward(dy, x, *max_args, indices=index)
    assert len(ran) == 1  # the given winners: only the routing kernel
