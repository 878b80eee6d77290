"""conv2d on NumPy and on the CUDA kernels (-m gpu) against an independent float64 loop reference.

One test body per check; the CuPy half runs on a machine with an NVIDIA GPU.
"""

import numpy as np
import pytest

import gpuops
from gpuops.conv2d import check_conv2d, tiled_launch
from tests.support.cases import case_id, random_conv_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import conv2d_ref

CASES = random_conv_cases(60, seed=11)
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_matches_loop_reference(case, algorithm, xp, rng):
    x, w, b = case.arrays(rng)
    y = gpuops.conv2d(*on(xp, x, w, b), algorithm=algorithm, **case.kwargs())
    ref = conv2d_ref(x, w, b, **case.kwargs())
    assert isinstance(y, xp.ndarray)
    assert y.dtype == np.float32
    assert y.shape == ref.shape
    np.testing.assert_allclose(host(y), ref, rtol=1e-4, atol=1e-4)


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize(
    "shape",
    [(2, 64, 28, 30, 40, 3, 1, 1, 1), (1, 3, 67, 45, 16, 7, 2, 3, 1), (3, 12, 33, 17, 9, 5, 1, 4, 3)],
    ids=str,
)
def test_conv2d_on_multi_tile_shapes(shape, algorithm, xp, rng):
    """Shapes that span several tiles, filter blocks and pixel blocks of every kernel."""
    N, C, H, W, M, K, S, P, D = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, K, K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    kw = dict(stride=S, padding=P, dilation=D)
    got = gpuops.conv2d(*on(xp, x, w, b), algorithm=algorithm, **kw)
    ref = conv2d_ref(x, w, b, stride=(S, S), padding=(P, P), dilation=(D, D))
    np.testing.assert_allclose(host(got), ref, rtol=1e-4, atol=2e-4)


@backends
def test_unbatched_input_gives_unbatched_output(xp, rng):
    x = rng.standard_normal((3, 8, 5)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    y = gpuops.conv2d(*on(xp, x, w), padding=1)
    assert y.shape == (2, 8, 5)
    np.testing.assert_allclose(host(y), conv2d_ref(x[None], w, padding=(1, 1))[0], rtol=1e-4, atol=1e-4)


@backends
def test_uint8_image_is_computed_in_float32(xp):
    img = np.arange(3 * 4 * 4, dtype=np.uint8).reshape(1, 3, 4, 4) * 5  # values up to 235
    ones = np.ones((1, 3, 2, 2), dtype=np.float64)
    y = gpuops.conv2d(*on(xp, img, ones))
    assert y.dtype == np.float32
    # each output sums 12 uint8 values: far above 255, so nothing wrapped around
    np.testing.assert_allclose(host(y), conv2d_ref(img.astype(np.float64), ones), rtol=1e-6)
    assert float(y.max()) == 12 * 142.5


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
def test_identity_kernel_returns_the_image(algorithm, xp, rng):
    x = rng.standard_normal((1, 1, 6, 9)).astype(np.float32)
    ident = np.zeros((1, 1, 3, 3), np.float32)
    ident[0, 0, 1, 1] = 1
    np.testing.assert_array_equal(host(gpuops.conv2d(*on(xp, x, ident), padding=1, algorithm=algorithm)), x)


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
def test_hand_computed_stride_two_example(algorithm, xp):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.ones((1, 1, 2, 2), np.float32)
    # 2x2 sums of non-overlapping blocks: [[0+1+4+5, 2+3+6+7], [8+9+12+13, 10+11+14+15]]
    expected = np.array([[[[10, 18], [42, 50]]]], np.float32)
    np.testing.assert_array_equal(host(gpuops.conv2d(*on(xp, x, w), stride=2, algorithm=algorithm)), expected)


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
def test_pmpp_worked_example(algorithm, xp):
    """PMPP ch. 16's example: C=3 maps of 3x3, M=2 filters of 2x2 -> 2 outputs of 2x2."""
    x = np.array(
        [
            [[1, 2, 0], [1, 1, 3], [0, 2, 2]],
            [[0, 2, 1], [0, 3, 2], [1, 1, 0]],
            [[1, 2, 1], [0, 1, 3], [3, 3, 2]],
        ],
        np.float32,
    )
    w = np.array(
        [
            [[[1, 1], [2, 2]], [[1, 1], [1, 1]], [[0, 1], [1, 0]]],
            [[[1, 0], [0, 1]], [[2, 1], [2, 1]], [[1, 2], [2, 0]]],
        ],
        np.float32,
    )
    # the book's result: filter 0 -> [[14, 20], [15, 24]], filter 1 -> [[12, 24], [17, 26]]
    expected = np.array([[[14, 20], [15, 24]], [[12, 24], [17, 26]]], np.float32)
    np.testing.assert_array_equal(host(gpuops.conv2d(*on(xp, x, w), algorithm=algorithm)), expected)


def test_auto_on_the_cpu_runs_direct(rng):
    x = rng.standard_normal((1, 2, 9, 8)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    assert gpuops.resolve_algorithm(x, w) == "direct"
    np.testing.assert_array_equal(
        gpuops.conv2d(x, w, algorithm="auto"), gpuops.conv2d(x, w, algorithm="direct")
    )


@backends
@pytest.mark.parametrize("groups", [1, 2])
def test_implicit_gemm_on_many_filters_and_a_batch_split_across_blocks(groups, xp, rng):
    """136 filters (68 per group: two filter blocks of 64, the second nearly empty) and a batch
    of 5 samples of 13 x 13 pixels (169 each: blocks of 128 pixels straddle samples)."""
    x = rng.standard_normal((5, 8, 13, 13)).astype(np.float32)
    w = rng.standard_normal((136, 8 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(136).astype(np.float32)
    expected = conv2d_ref(x, w, b, padding=(1, 1), groups=groups)
    got = gpuops.conv2d(*on(xp, x, w, b), padding=1, groups=groups, algorithm="implicit_gemm")
    np.testing.assert_allclose(host(got), expected, rtol=1e-4, atol=2e-4)


@backends
@pytest.mark.parametrize("algorithm", ["tiled_basic", "tiled"])
def test_tiled_kernels_shrink_their_tile_for_a_wide_halo(algorithm, xp, rng):
    """K=15, dilation 5, stride 4: a 16 x 16 tile's halo does not fit in shared memory."""
    x = rng.standard_normal((1, 2, 120, 130)).astype(np.float32)
    w = rng.standard_normal((3, 2, 15, 15)).astype(np.float32)
    plan = gpuops.plan_conv2d(x.shape, w.shape, stride=4, dilation=5, algorithm=algorithm)
    assert plan.launch.block[:2] != (16, 16)
    got = gpuops.conv2d(*on(xp, x, w), stride=4, dilation=5, algorithm=algorithm)
    np.testing.assert_allclose(
        host(got), conv2d_ref(x, w, stride=(4, 4), dilation=(5, 5)), rtol=1e-4, atol=1e-3
    )


@backends
@pytest.mark.parametrize(
    "shape, kernel",
    [
        ((4, 6, 37, 61, 6, 3, 1, 1, 1, "zeros"), "v15"),  # depthwise: one filter per channel
        ((2, 3, 70, 45, 9, 5, 2, 2, 1, "reflect"), "v15"),  # three filters per channel, stride 2, reflect
        ((3, 5, 9, 300, 5, 3, 2, 0, 1, "zeros"), "v15"),  # stride 2, no padding: 4 rows, one strip
        ((2, 4, 6, 5, 4, 5, 1, 2, 1, "reflect"), "v15"),  # 5x5 on a 6 x 5 plane: strips past the edge
        ((1, 1, 300, 517, 1, 3, 1, 1, 1, "zeros"), "v15"),  # one greyscale image, one filter
        ((2, 3, 41, 29, 3, 5, 2, 1, 1, "zeros"), "v15"),  # 5x5, stride 2, padding 1 of the 2 a side
        ((1, 4, 33, 130, 28, 3, 1, 3, 3, "zeros"), "v6"),  # seven filters per channel, dilation 3
        ((2, 2, 19, 23, 2, 7, 3, 3, 2, "reflect"), "v6"),  # a wide dilated window on a small image
        ((2, 3, 40, 40, 3, 3, 3, 1, 1, "zeros"), "v6"),  # stride 3: no v15 kernel
    ],
    ids=str,
)
def test_tiled_on_filters_that_see_one_channel(shape, kernel, xp, rng):
    """tiled's v15 (3x3 and 5x5 windows, stride 1 or 2) and v6 (any other window) where
    C/groups == 1 and a group has fewer than 8 filters, against the loop reference."""
    N, C, H, W, M, K, S, P, D, mode = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, 1, K, K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    kw = dict(stride=S, padding=P, dilation=D, groups=C, padding_mode=mode)
    ran = gpuops.plan_conv2d(x.shape, w.shape, b.shape, algorithm="tiled", **kw).launch.kernel
    assert ran.startswith(f"conv2d_{kernel}_depthwise")
    got = gpuops.conv2d(*on(xp, x, w, b), algorithm="tiled", **kw)
    ref = conv2d_ref(x, w, b, stride=(S, S), padding=(P, P), dilation=(D, D), groups=C, padding_mode=mode)
    np.testing.assert_allclose(host(got), ref, rtol=1e-4, atol=2e-4)


def test_tiled_launch_geometry_for_a_wide_halo():
    p = check_conv2d((1, 2, 120, 130), (3, 2, 15, 15), None, 4, 0, 5)
    assert tiled_launch(p).threads.tile != (16, 32)


@pytest.mark.gpu
def test_every_output_is_written():
    """Poison the memory pool with NaN first: an output the kernel skips would stay NaN."""
    import cupy as cp

    x = cp.ones((2, 5, 37, 29), cp.float32)
    w = cp.ones((11, 5, 3, 3), cp.float32)
    for algorithm in gpuops.ALGORITHMS:
        cp.get_default_memory_pool().free_all_blocks()
        junk = cp.full((2, 11, 37, 29), cp.nan, dtype=cp.float32)
        del junk  # the block goes back to the pool NaN-filled; the output of that size reuses it
        y = gpuops.conv2d(x, w, padding=1, algorithm=algorithm)
        assert not bool(cp.isnan(y).any()), algorithm


@pytest.mark.gpu
def test_matches_torch_cuda_where_present(rng):
    import cupy as cp

    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    torch.backends.cudnn.allow_tf32 = False
    x = rng.standard_normal((2, 8, 31, 27)).astype(np.float32)
    w = rng.standard_normal((12, 4, 3, 5)).astype(np.float32)
    ref = (
        torch.nn.functional.conv2d(
            torch.from_numpy(x).cuda(),
            torch.from_numpy(w).cuda(),
            stride=(2, 1),
            padding=(1, 2),
            dilation=(1, 2),
            groups=2,
        )
        .cpu()
        .numpy()
    )
    for algorithm in gpuops.ALGORITHMS:
        got = gpuops.conv2d(
            cp.asarray(x),
            cp.asarray(w),
            stride=(2, 1),
            padding=(1, 2),
            dilation=(1, 2),
            groups=2,
            algorithm=algorithm,
        )
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_auto_picks_a_measured_algorithm_and_remembers_it(rng):
    import cupy as cp

    from gpuops import autotune

    x = cp.asarray(rng.standard_normal((2, 8, 40, 40)).astype(np.float32))
    w = cp.asarray(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))
    choice = gpuops.resolve_algorithm(x, w, None, 1, 1)
    assert choice in gpuops.ALGORITHMS
    assert choice in autotune.remembered().values()
    before = autotune.remembered()
    got = gpuops.conv2d(x, w, padding=1, algorithm="auto")
    assert autotune.remembered() == before  # no new measurement for the same shape
    np.testing.assert_allclose(got.get(), gpuops.conv2d(x.get(), w.get(), padding=1), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_a_repeated_call_takes_the_ready_path_and_stays_correct(rng):
    """The second call with the same shapes skips the checks; it must compute the new values."""
    import cupy as cp

    w = cp.asarray(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    for algorithm in ("direct", "tiled", "implicit_gemm", "auto"):
        for _ in range(2):
            x = rng.standard_normal((1, 3, 20, 22)).astype(np.float32)
            got = gpuops.conv2d(cp.asarray(x), w, padding=1, algorithm=algorithm)
            np.testing.assert_allclose(
                got.get(), conv2d_ref(x, w.get(), padding=(1, 1)), rtol=1e-4, atol=1e-4
            )


# ---- TF32 on the tensor cores (opt-in) -------------------------------------------------------------
def test_tf32_rounding_matches_the_tensor_cores_rule():
    """cvt.rna.tf32.f32: keep 10 mantissa bits, round to nearest, ties away from zero."""
    from gpuops.conv2d import to_tf32

    values = np.array([1.0, 1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 1 + 2**-12, 3.14159265], np.float32)
    expected = [1.0, 1 + 2**-10, 1 + 2**-9, -(1 + 2**-10), 1.0, 3.140625]
    assert to_tf32(values).tolist() == expected


def test_tf32_even_rounding_sends_ties_to_the_even_neighbour():
    """cvt.rn.tf32.f32 (v16 and v17 round x with it): as cvt.rna but for exact ties."""
    from gpuops.conv2d import to_tf32, to_tf32_even

    ties = [1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11)]
    values = np.array([*ties, 1 + 2**-12, 3.14159265, np.inf, np.nan], np.float32)
    got = to_tf32_even(values)
    assert got[:5].tolist() == [1.0, 1 + 2**-9, -1.0, 1.0, 3.140625]
    assert got[5] == np.inf and np.isnan(got[6])
    rng = np.random.default_rng(3)
    spread = (rng.standard_normal(100_000) * 10.0 ** rng.integers(-20, 20, 100_000)).astype(np.float32)
    bits = spread.view(np.uint32)
    no_tie = (bits & 0x1FFF) != 0x1000
    np.testing.assert_array_equal(to_tf32_even(spread)[no_tie], to_tf32(spread)[no_tie])
    tied = ((bits & np.uint32(0xFFFFE000)) | np.uint32(0x1000)).view(np.float32)  # halfway values
    rounded = to_tf32_even(tied).view(np.uint32)
    assert not (rounded & 0x3FFF).any()  # the kept last bit (bit 13) is even
    np.testing.assert_array_equal(np.abs(to_tf32_even(tied) - tied), np.abs(to_tf32(tied) - tied))


@backends
@pytest.mark.parametrize("case", CASES[:30], ids=case_id)
def test_tf32_conv_computes_the_sums_of_rounded_inputs(case, xp, rng):
    """v5 (and its twin) equals the float64 convolution of the TF32-rounded inputs; against the
    unrounded inputs its error is TF32's (~1e-4 relative), far above fp32's."""
    from gpuops.conv2d import to_tf32

    x, w, b = case.arrays(rng)
    y = host(gpuops.conv2d(*on(xp, x, w, b), algorithm="implicit_gemm_tf32", **case.kwargs()))
    np.testing.assert_allclose(
        y, conv2d_ref(to_tf32(x), to_tf32(w), b, **case.kwargs()), rtol=2e-4, atol=2e-4
    )
    exact = conv2d_ref(x, w, b, **case.kwargs())
    assert np.linalg.norm(y - exact) <= 5e-3 * max(np.linalg.norm(exact), 1e-6)


def test_auto_never_picks_tf32():
    """auto keeps fp32 semantics: TF32 is opt-in only, like PyTorch's allow_tf32. Its candidates
    are the fp32 algorithms and, on Hopper, v13 (fp32 values as TF32 pairs, fp32 accuracy)."""
    import inspect

    from gpuops.conv2d import PRECISIONS, SPLIT_ALGORITHMS

    source = inspect.getsource(gpuops.resolve_algorithm)
    assert "fp32 = ALGORITHMS" in source and "fp32 += SPLIT_ALGORITHMS" in source
    assert {PRECISIONS[a] for a in gpuops.ALGORITHMS + SPLIT_ALGORITHMS} == {"fp32"}
    assert "implicit_gemm_tf32" not in gpuops.ALGORITHMS + SPLIT_ALGORITHMS
