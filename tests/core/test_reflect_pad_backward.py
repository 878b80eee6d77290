"""reflect_pad_backward on NumPy and (-m gpu) on the CUDA kernels: PyTorch's autograd of
F.pad(mode="reflect"), a loop reference, a hand-computed count map, and the adjoint identity."""

import numpy as np
import pytest

import gpuops
from gpuops.index_math import reflect_copies
from gpuops.maps import conv_backward as maps
from gpuops.reflect_pad import reflect_pad_backward_launch, reflect_source_rows, resolve_backward_algorithm
from tests.support.cases import reflect_pad_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import reflect_pad_backward_ref

backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)
ALGORITHMS = (*gpuops.REFLECT_BACKWARD_ALGORITHMS, "auto")
CASES = reflect_pad_cases(30, seed=7)


def _padded_shape(shape, pads):
    left, right, top, bottom = pads
    return (*shape[:-2], shape[-2] + top + bottom, shape[-1] + left + right)


@pytest.mark.parametrize("shape,pads", [c for c in CASES if len(c[0]) > 2], ids=str)
def test_equals_autograd_of_f_pad(shape, pads, rng, torch):
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).requires_grad_()
    dy = rng.standard_normal(_padded_shape(shape, pads)).astype(np.float32)
    torch.nn.functional.pad(x, pads, mode="reflect").backward(torch.from_numpy(dy))
    for algorithm in ALGORITHMS:
        got = gpuops.reflect_pad_backward(dy, pads, algorithm=algorithm)
        assert got.shape == shape and got.dtype == np.float32
        np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-6, atol=1e-6, err_msg=algorithm)


@backends
@pytest.mark.parametrize("shape,pads", CASES, ids=str)
def test_matches_loop_reference(shape, pads, xp, rng):
    dy = rng.standard_normal(_padded_shape(shape, pads)).astype(np.float32)
    ref = reflect_pad_backward_ref(dy, pads)
    for algorithm in ALGORITHMS:
        got = gpuops.reflect_pad_backward(*on(xp, dy), pads, algorithm=algorithm)
        assert isinstance(got, xp.ndarray) and got.shape == ref.shape
        np.testing.assert_allclose(host(got), ref, rtol=1e-5, atol=1e-5, err_msg=algorithm)


@backends
def test_documented_pad_2_example_counts_the_copies(xp):
    """ReflectionPad2d(2) on a 3x3 image (PyTorch's documented example): along an axis, input 0
    is copied to padded rows {0, 4} (2 copies), input 1 to {-1, 1, 3} (3), input 2 to {-2, 2} (2)."""
    expected = np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]], np.float32)
    ones = np.ones((1, 1, 7, 7), np.float32)
    for algorithm in ALGORITHMS:
        np.testing.assert_array_equal(
            host(gpuops.reflect_pad_backward(*on(xp, ones), 2, algorithm=algorithm))[0, 0], expected
        )
    np.testing.assert_array_equal(maps.reflect_backward_count(3, 3, (2, 2, 2, 2)), expected)


@backends
@pytest.mark.parametrize(
    "shape,pads", [((2, 3, 5, 700), (3, 4, 2, 1)), ((2, 3, 300, 9), (8, 1, 0, 299))], ids=str
)
def test_wide_and_narrow_rows(shape, pads, xp, rng):
    """Rows longer than a block (threads loop along the row) and rows shorter than a warp."""
    dy = rng.standard_normal(_padded_shape(shape, pads)).astype(np.float32)
    ref = reflect_pad_backward_ref(dy, pads)
    for algorithm in ALGORITHMS:
        got = gpuops.reflect_pad_backward(*on(xp, dy), pads, algorithm=algorithm)
        np.testing.assert_allclose(host(got), ref, rtol=1e-5, atol=1e-5, err_msg=algorithm)


@backends
def test_adjoint_of_reflect_pad(xp, rng):
    """<reflect_pad(x), y> = <x, reflect_pad_backward(y)>."""
    pads = (3, 1, 2, 4)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    y = rng.standard_normal(_padded_shape(x.shape, pads)).astype(np.float32)
    lhs = (host(gpuops.reflect_pad(*on(xp, x), pads)).astype(np.float64) * y).sum()
    rhs = (x.astype(np.float64) * host(gpuops.reflect_pad_backward(*on(xp, y), pads))).sum()
    assert lhs == pytest.approx(rhs, rel=1e-5)


@pytest.mark.parametrize("H,pads", [(5, (3, 2)), (4, (3, 3)), (1, (0, 0)), (2, (1, 1)), (7, (0, 6))])
def test_reflect_copies_are_the_cells_reflect_index_sends_there(H, pads):
    """The gather kernel's per-axis copies are exactly the padded positions whose source is i."""
    before, after = pads
    source = reflect_source_rows(H, before, after)  # padded position -> input index (the forward formula)
    coords, present = reflect_copies(np.arange(H), H, before, after)
    for i in range(H):
        expected = sorted(np.flatnonzero(source == i) - before)
        assert sorted(coords[present[:, i], i]) == expected, i


@pytest.mark.parametrize("shape,pads", CASES[:12], ids=str)
def test_count_map_is_the_backward_of_ones(shape, pads):
    H, W = shape[-2:]
    ones = np.ones(_padded_shape((H, W), pads), np.float32)
    np.testing.assert_array_equal(
        maps.reflect_backward_count(H, W, pads), gpuops.reflect_pad_backward(ones, pads)
    )


def test_backward_launches():
    scatter = reflect_pad_backward_launch(6, 10, 20, (2, 3, 1, 4), "scatter")
    assert scatter.arg("rows") == 6 * 15 and scatter.index == "(plane, oy, ox) of dy"
    gather = reflect_pad_backward_launch(6, 10, 20, (2, 3, 1, 4), "gather")
    assert gather.arg("rows") == 6 * 10 and gather.block == (32, 8, 1)
    ref = gather.thread_of(5, 9, 19)  # row 59 of 8-row blocks: block 7, thread row 3
    assert (ref.block, ref.thread) == ((7, 0, 0), (19, 3, 0))


# ---- on the GPU ---------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_both_kernels_equal_the_cpu_path_on_a_large_input(rng):
    import cupy as cp

    dy = rng.standard_normal((4, 16, 70, 90)).astype(np.float32)
    pads = (5, 7, 3, 6)
    cpu = gpuops.reflect_pad_backward(dy, pads)
    for algorithm in ALGORITHMS:
        got = gpuops.reflect_pad_backward(cp.asarray(dy), pads, algorithm=algorithm)
        np.testing.assert_allclose(got.get(), cpu, rtol=1e-6, atol=1e-6, err_msg=algorithm)


@pytest.mark.gpu
def test_gather_writes_every_cell_and_is_deterministic(rng):
    import cupy as cp

    dy = cp.asarray(rng.standard_normal((3, 5, 41, 37)).astype(np.float32))
    pads = (4, 2, 3, 5)
    in_shape = (3, 5, 33, 31)
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    junk = cp.full(in_shape, cp.nan, dtype=cp.float32)
    del junk  # back to the pool NaN-filled; the output of that size reuses it
    runs = [gpuops.reflect_pad_backward(dy, pads, algorithm="gather") for _ in range(3)]
    assert runs[0].shape == in_shape and not bool(cp.isnan(runs[0]).any())
    assert all(bool((r == runs[0]).all()) for r in runs)


@pytest.mark.gpu
def test_the_launch_that_ran_is_the_planned_one(rng):
    import cupy as cp

    from gpuops import launch as launch_module

    dy = cp.asarray(rng.standard_normal((2, 3, 12, 15)).astype(np.float32))
    with launch_module.recorded() as ran:
        gpuops.reflect_pad_backward(dy, (1, 2, 3, 4), algorithm="scatter")
        gpuops.reflect_pad_backward(dy, (1, 2, 3, 4), algorithm="gather")
    assert ran == [
        reflect_pad_backward_launch(6, 5, 12, (1, 2, 3, 4), "scatter"),
        reflect_pad_backward_launch(6, 5, 12, (1, 2, 3, 4), "gather"),
    ]


def test_auto_runs_scatter_on_the_cpu(rng):
    """Without a GPU auto measures nothing: it runs scatter's twin (slices per axis)."""
    dy = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    assert resolve_backward_algorithm(dy, 2) == "scatter"
    np.testing.assert_array_equal(
        gpuops.reflect_pad_backward(dy, 2), gpuops.reflect_pad_backward(dy, 2, algorithm="scatter")
    )


@pytest.mark.gpu
def test_auto_launches_the_algorithm_it_resolves_to(rng):
    """resolve_backward_algorithm (what the benchmark records as auto's choice) names the kernel
    auto launches, on its first call for a shape and on the ready path after it."""
    import cupy as cp

    from gpuops import launch as launch_module

    dy = cp.asarray(rng.standard_normal((2, 3, 16, 21)).astype(np.float32))
    chose = resolve_backward_algorithm(dy, (2, 1, 3, 2))
    assert chose in gpuops.REFLECT_BACKWARD_ALGORITHMS
    for _ in range(2):
        with launch_module.recorded() as ran:
            gpuops.reflect_pad_backward(dy, (2, 1, 3, 2))
        assert ran == [reflect_pad_backward_launch(6, 11, 18, (2, 1, 3, 2), chose)]  # dx: 11 x 18


@pytest.mark.gpu
def test_a_repeated_call_takes_the_ready_path_and_stays_correct(rng):
    """The second call with the same shape skips the checks; it must compute the new values."""
    import cupy as cp

    for algorithm in ALGORITHMS:
        for _ in range(2):
            dy = rng.standard_normal((2, 3, 14, 17)).astype(np.float32)
            got = gpuops.reflect_pad_backward(cp.asarray(dy), (3, 2, 4, 1), algorithm=algorithm)
            np.testing.assert_allclose(
                got.get(), reflect_pad_backward_ref(dy, (3, 2, 4, 1)), rtol=1e-5, atol=1e-5
            )
