"""im2col's memory budget, out-of-memory recovery and the GEMM step (-m gpu; the budget rule
itself is checked on the CPU)."""

import numpy as np
import pytest

import gpuops
from gpuops.conv2d import check_conv2d
from gpuops.im2col import batch_chunk
from tests.support.references import conv2d_ref


def test_im2col_batch_chunk_under_a_given_budget():
    p = check_conv2d((5, 4, 16, 16), (6, 4, 3, 3), None, 1, 1)
    assert batch_chunk(p, 2 * p.x_unroll_bytes_per_sample) == 2  # two samples per GEMM: 3 chunks for N=5
    with pytest.raises(ValueError, match=f"needs {p.x_unroll_bytes_per_sample:,} bytes"):
        batch_chunk(p, 1000)


@pytest.mark.gpu
def test_im2col_chunks_the_batch_under_a_small_budget(rng):
    import cupy as cp

    x = rng.standard_normal((5, 4, 16, 16)).astype(np.float32)
    w = rng.standard_normal((6, 4, 3, 3)).astype(np.float32)
    plan = gpuops.plan_conv2d(x.shape, w.shape, padding=1, algorithm="im2col")
    budget = 2 * plan.x_unroll_bytes_per_sample  # two samples per GEMM: 3 chunks for N=5
    assert gpuops.im2col_batch_chunk(plan.problem, budget) == 2
    got = gpuops.conv2d(
        cp.asarray(x), cp.asarray(w), padding=1, algorithm="im2col", im2col_budget_bytes=budget
    )
    np.testing.assert_allclose(got.get(), conv2d_ref(x, w, padding=(1, 1)), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=f"needs {plan.x_unroll_bytes_per_sample:,} bytes"):
        gpuops.conv2d(cp.asarray(x), cp.asarray(w), padding=1, algorithm="im2col", im2col_budget_bytes=1000)


@pytest.mark.gpu
def test_im2col_larger_than_the_card_is_chunked_and_correct():
    """X_unroll for the whole batch (~150 GB) exceeds the card; im2col runs it in chunks."""
    import cupy as cp

    N, C, H, W, M = 256, 64, 512, 512, 8
    plan = gpuops.plan_conv2d((N, C, H, W), (M, C, 3, 3), padding=1, algorithm="im2col")
    _free, total = cp.cuda.runtime.memGetInfo()
    assert plan.x_unroll_bytes_per_sample * N > total  # would not fit at once
    x = cp.ones((N, C, H, W), cp.float32)
    w = cp.full((M, C, 3, 3), 1.0 / (C * 9), cp.float32)
    y = gpuops.conv2d(x, w, padding=1, algorithm="im2col")
    assert 1 < gpuops.im2col_batch_chunk(plan.problem) < N
    # interior outputs average 576 ones: exactly 1; corners see 4 of 9 taps
    assert float(y[:, :, 5, 5].min()) == pytest.approx(1.0, rel=1e-5)
    assert float(y[3, 2, 0, 0]) == pytest.approx(4 / 9, rel=1e-5)
    del x, y
    cp.get_default_memory_pool().free_all_blocks()


@pytest.mark.gpu
def test_im2col_refuses_a_sample_that_cannot_fit_and_the_next_call_works():
    import cupy as cp

    x = cp.ones((1, 512, 2048, 2048), cp.float32)  # X_unroll of one sample: 4*512*25*2048*2048 = 215 GB
    w = cp.ones((4, 512, 5, 5), cp.float32)
    with pytest.raises(ValueError, match=r"im2col's X_unroll needs 214,748,364,800 bytes for one sample"):
        gpuops.conv2d(x, w, padding=2, algorithm="im2col")
    del x
    small = gpuops.conv2d(cp.ones((1, 1, 8, 8), cp.float32), cp.ones((1, 1, 3, 3), cp.float32), padding=1)
    assert float(small[0, 0, 4, 4]) == 9.0


@pytest.mark.gpu
def test_out_of_memory_is_recognised_and_recoverable():
    import cupy as cp

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


@pytest.mark.gpu
def test_gemm_matches_numpy_for_one_and_many_samples(rng):
    import cupy as cp

    w = rng.standard_normal((5, 12)).astype(np.float32)
    cols = rng.standard_normal((3, 12, 40)).astype(np.float32)
    np.testing.assert_allclose(
        gpuops.gemm(cp.asarray(w), cp.asarray(cols)).get(), w @ cols, rtol=1e-4, atol=1e-4
    )
    np.testing.assert_allclose(
        gpuops.gemm(cp.asarray(w), cp.asarray(cols[1])).get(), w @ cols[1], rtol=1e-4, atol=1e-4
    )
