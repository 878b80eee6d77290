"""Every CUDA kernel against the NumPy path on the same inputs (run with `pytest -m gpu`)."""

import numpy as np
import pytest

import gpuops
from gpuops.launch import conv_tiled_launch
from tests.cases import case_id, random_conv_cases, reflect_pad_cases

pytestmark = pytest.mark.gpu

CASES = random_conv_cases(60, seed=11)


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_kernels_equal_cpu(case, algorithm, rng, cp):
    x, w, b = case.arrays(rng)
    expected = gpuops.conv2d(x, w, b, algorithm="direct", **case.kwargs())
    got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), None if b is None else cp.asarray(b),
                        algorithm=algorithm, **case.kwargs())  # fmt: skip
    assert isinstance(got, cp.ndarray)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize(
    "shape",
    [(2, 64, 28, 30, 40, 3, 1, 1, 1), (1, 3, 67, 45, 16, 7, 2, 3, 1), (3, 12, 33, 17, 9, 5, 1, 4, 3)],
    ids=str,
)
def test_conv2d_kernels_on_multi_tile_shapes(shape, algorithm, rng, cp):
    N, C, H, W, M, K, S, P, D = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C, K, K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    kw = dict(stride=S, padding=P, dilation=D)
    expected = gpuops.conv2d(x, w, b, **kw)
    got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), cp.asarray(b), algorithm=algorithm, **kw)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-4, atol=2e-4)


def test_tiled_kernel_shrinks_its_tile_for_a_wide_halo(rng, cp):
    """K=15, dilation 5, stride 4: a 16x16 tile's halo does not fit, a smaller tile is used."""
    x = rng.standard_normal((1, 2, 120, 130)).astype(np.float32)
    w = rng.standard_normal((3, 2, 15, 15)).astype(np.float32)
    g = gpuops.window_geometry(120, 130, 15, 4, 0, 5)
    assert conv_tiled_launch(g, 1, 2, 3, 1).tile != (16, 16)
    got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), stride=4, dilation=5, algorithm="tiled")
    np.testing.assert_allclose(got.get(), gpuops.conv2d(x, w, stride=4, dilation=5), rtol=1e-4, atol=1e-3)


def test_every_output_is_written(cp):
    """Poison the memory pool with NaN first: an output the kernel skips would stay NaN."""
    x = cp.ones((2, 5, 37, 29), cp.float32)
    w = cp.ones((11, 5, 3, 3), cp.float32)
    for algorithm in gpuops.ALGORITHMS:
        cp.get_default_memory_pool().free_all_blocks()
        junk = cp.full((2, 11, 37, 29), cp.nan, dtype=cp.float32)
        del junk  # the block goes back to the pool NaN-filled; the output of that size reuses it
        y = gpuops.conv2d(x, w, padding=1, algorithm=algorithm)
        assert not bool(cp.isnan(y).any()), algorithm


@pytest.mark.parametrize("case", [c for c in CASES if c.padding_mode == "zeros"], ids=case_id)
def test_unfold_and_both_folds_equal_cpu(case, rng, cp):
    x, _, _ = case.arrays(rng)
    kw = dict(kernel_size=(case.kh, case.kw), dilation=case.dilation, padding=case.padding,
              stride=case.stride)  # fmt: skip
    cols = gpuops.unfold(cp.asarray(x), **kw)
    np.testing.assert_array_equal(cols.get(), gpuops.unfold(x, **kw))
    noise = rng.standard_normal(cols.shape).astype(np.float32)
    expected = gpuops.fold(noise, (case.H, case.W), **kw)
    for variant in ("gather", "scatter", "auto"):
        got = gpuops.fold(cp.asarray(noise), (case.H, case.W), variant=variant, **kw)
        np.testing.assert_allclose(got.get(), expected, rtol=1e-5, atol=1e-5, err_msg=variant)


def test_gather_fold_is_deterministic(rng, cp):
    cols = cp.asarray(rng.standard_normal((2, 3 * 9, 30 * 30)).astype(np.float32))
    runs = [gpuops.fold(cols, (32, 32), 3, variant="gather") for _ in range(3)]
    assert all(bool((r == runs[0]).all()) for r in runs)


@pytest.mark.parametrize("shape,pads", reflect_pad_cases(40), ids=str)
def test_reflect_pad_kernel_equals_cpu(shape, pads, rng, cp):
    x = rng.standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(gpuops.reflect_pad(cp.asarray(x), pads).get(), gpuops.reflect_pad(x, pads))


def test_im2col_chunks_the_batch_under_a_small_budget(rng, cp):
    x = rng.standard_normal((5, 4, 16, 16)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    plan = gpuops.plan_conv2d(x.shape, w.shape, padding=1, algorithm="im2col")
    budget = 2 * plan.x_unroll_bytes_per_sample  # two samples per GEMM: 3 chunks for N=5
    assert gpuops.im2col_batch_chunk(plan, budget) == 2
    got = gpuops.conv2d(
        cp.asarray(x), cp.asarray(w), padding=1, algorithm="im2col", im2col_budget_bytes=budget
    )
    np.testing.assert_allclose(got.get(), gpuops.conv2d(x, w, padding=1), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=f"needs {plan.x_unroll_bytes_per_sample:,} bytes"):
        gpuops.conv2d(cp.asarray(x), cp.asarray(w), padding=1, algorithm="im2col", im2col_budget_bytes=1000)


def test_matches_torch_cuda_where_present(rng, cp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    torch.backends.cudnn.allow_tf32 = False
    x = rng.standard_normal((2, 8, 31, 27)).astype(np.float32)
    w = rng.standard_normal((12, 4, 3, 5)).astype(np.float32)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda(), stride=(2, 1),
                                     padding=(1, 2), dilation=(1, 2), groups=2).cpu().numpy()  # fmt: skip
    for algorithm in gpuops.ALGORITHMS:
        got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), stride=(2, 1), padding=(1, 2), dilation=(1, 2),
                            groups=2, algorithm=algorithm)  # fmt: skip
        np.testing.assert_allclose(got.get(), ref, rtol=1e-4, atol=1e-4)


def test_backend_reports_the_gpu():
    info = gpuops.backend_info()
    assert info.gpu and info.device and info.cupy_version
    assert info.device in info.label()


def test_gpu_timing_uses_cuda_events(cp):
    from gpuops.timing import measure

    x = cp.ones((1, 3, 256, 256), cp.float32)
    w = cp.ones((8, 3, 3, 3), cp.float32)
    t = measure(lambda: gpuops.conv2d(x, w, padding=1), gpu=True, warmup=2, repeat=5)
    assert t.clock == "cuda-events" and t.runs == 5 and 0 < t.median_ms < 1000


@pytest.mark.parametrize("shape", [(1, 2, 5, 700), (2, 3, 300, 9)], ids=str)
def test_row_kernels_on_wide_and_narrow_rows(shape, rng, cp):
    """Rows longer than a block (threads loop along the row) and rows shorter than a warp."""
    x = rng.standard_normal(shape).astype(np.float32)
    xd = cp.asarray(x)
    np.testing.assert_array_equal(
        gpuops.reflect_pad(xd, (3, 4, 2, 1)).get(), gpuops.reflect_pad(x, (3, 4, 2, 1))
    )
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=(1, 2), stride=(1, 3))
    cols = gpuops.unfold(xd, **kw)
    np.testing.assert_array_equal(cols.get(), gpuops.unfold(x, **kw))
    for variant in ("gather", "scatter"):
        got = gpuops.fold(cols, shape[-2:], variant=variant, **kw).get()
        np.testing.assert_allclose(got, gpuops.fold(cols.get(), shape[-2:], **kw), rtol=1e-5, atol=1e-5)


def test_auto_picks_a_measured_algorithm_and_remembers_it(rng, cp):
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


def test_im2col_larger_than_the_card_is_chunked_and_correct(cp):
    """X_unroll for the whole batch (~150 GB) exceeds the card; im2col runs it in chunks."""
    N, C, H, W, M = 256, 64, 512, 512, 8
    plan = gpuops.plan_conv2d((N, C, H, W), (M, C, 3, 3), padding=1, algorithm="im2col")
    _free, total = cp.cuda.runtime.memGetInfo()
    assert plan.x_unroll_bytes_per_sample * N > total  # would not fit at once
    x = cp.ones((N, C, H, W), cp.float32)
    w = cp.full((M, C, 3, 3), 1.0 / (C * 9), cp.float32)
    y = gpuops.conv2d(x, w, padding=1, algorithm="im2col")
    assert 1 < gpuops.im2col_batch_chunk(plan) < N
    # interior outputs average 576 ones: exactly 1; corners see 4 of 9 taps
    assert float(y[:, :, 5, 5].min()) == pytest.approx(1.0, rel=1e-5)
    assert float(y[3, 2, 0, 0]) == pytest.approx(4 / 9, rel=1e-5)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()


def test_im2col_refuses_a_sample_that_cannot_fit_and_the_next_call_works(cp):
    x = cp.ones((1, 512, 2048, 2048), cp.float32)  # X_unroll of one sample: 4*512*25*2048*2048 = 215 GB
    w = cp.ones((4, 512, 5, 5), cp.float32)
    with pytest.raises(ValueError, match=r"im2col needs 214,748,364,800 bytes for X_unroll of one sample"):
        gpuops.conv2d(x, w, padding=2, algorithm="im2col")
    del x
    small = gpuops.conv2d(cp.ones((1, 1, 8, 8), cp.float32), cp.ones((1, 1, 3, 3), cp.float32), padding=1)
    assert float(small[0, 0, 4, 4]) == 9.0


def test_out_of_memory_is_recognised_and_recoverable(cp):
    from gpuops.backend import is_gpu_oom, release_gpu_memory

    try:
        gpuops.conv2d(
            cp.ones((4096, 1, 64, 64), cp.float32), cp.ones((65535, 1, 1, 1), cp.float32)
        )  # 4 TB output
    except Exception as exc:
        assert is_gpu_oom(exc), type(exc)
    else:
        pytest.fail("a 4 TB output cannot be allocated")
    release_gpu_memory()
    y = gpuops.conv2d(cp.ones((1, 2, 6, 6), cp.float32), cp.ones((3, 2, 3, 3), cp.float32))
    assert y.shape == (1, 3, 4, 4) and float(y.max()) == 18.0


def test_gemm_matches_numpy_for_one_and_many_samples(rng, cp):
    w = rng.standard_normal((5, 12)).astype(np.float32)
    cols = rng.standard_normal((3, 12, 40)).astype(np.float32)
    np.testing.assert_allclose(
        gpuops.gemm(cp.asarray(w), cp.asarray(cols)).get(), w @ cols, rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(
        gpuops.gemm(cp.asarray(w), cp.asarray(cols[1])).get(), w @ cols[1], rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("groups", [1, 2])
def test_implicit_gemm_on_many_filters_and_a_batch_split_across_blocks(groups, rng, cp):
    """136 filters (68 per group: two filter blocks of 64, the second nearly empty) and a batch
    of 5 samples of 13 x 13 pixels (169 each: blocks of 128 pixels straddle samples)."""
    x = rng.standard_normal((5, 8, 13, 13)).astype(np.float32)
    w = rng.standard_normal((136, 8 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(136).astype(np.float32)
    expected = gpuops.conv2d(x.astype(np.float64), w.astype(np.float64), b, padding=1, groups=groups)
    got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), cp.asarray(b), padding=1, groups=groups,
                        algorithm="implicit_gemm")  # fmt: skip
    np.testing.assert_allclose(got.get(), expected, rtol=1e-4, atol=2e-4)
