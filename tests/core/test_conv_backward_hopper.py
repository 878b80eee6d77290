"""grad_weight v2 (implicit_gemm_3xtf32): dW as one implicit GEMM on Hopper's tensor cores over KW x S_h
shifted copies of x. On any machine: its rules (refusals), its launches against the kernel file,
the thread map, and the NumPy twin, which reads the copies' rows exactly as the kernel does,
against the `gemm` algorithm; on compute capability 9.0: the copies against the twin, the GEMM
against float64 PyTorch with poisoned outputs, split K, chunks, the trace of every writer, and
auto measuring it.

Why this tolerance. v2 is v13's arithmetic (each value a TF32 pair, three products a term, the
sums moved to fp32 registers every 2 stages), so v13's bound applies: 2e-6 of the largest output
(test_conv2d_split_tf32's docstring derives it); a TF32-only kernel would be off by ~1e-4.
"""

import dataclasses
import re

import numpy as np
import pytest

import gpuops
from gpuops import conv_backward, sm90a
from gpuops import conv_backward_hopper as v2
from gpuops import launch as launch_module
from gpuops.conv2d import to_tf32
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.support.traces import assert_the_map_names_each_writer

ALGORITHM = v2.ALGORITHM
CEILING = 2e-6  # of the largest |dW| (module docstring)
# (N, C, H, W, M, K, stride, padding, dilation, groups, mode)
GEOMETRIES = [
    (2, 32, 16, 16, 64, 5, 1, 2, 1, 1, "zeros"),  # the 5x5 class: 800 columns, 7 blocks of 128
    (3, 64, 8, 12, 96, 3, 1, 1, 1, 4, "zeros"),  # grouped: 24 filters, 144 columns a group
    (1, 16, 16, 20, 130, 3, 1, 2, 2, 1, "zeros"),  # dilation 2; 130 filters: 3 filter blocks
    (2, 8, 16, 16, 8, 4, 1, "same", 1, 1, "zeros"),  # even kernel: asymmetric padding
    (2, 24, 16, 16, 16, 3, (1, 2), 1, 1, 1, "zeros"),  # stride 2 along the columns only
    (2, 16, 16, 16, 32, 3, 1, 1, 1, 2, "reflect"),  # mirrored padding (x padded by the host)
    (4, 3, 8, 8, 5, 1, 1, 0, 1, 1, "zeros"),  # 1x1, 3 channels: one partly empty tile
    (2, 16, 15, 15, 24, 3, 2, 1, 1, 1, "zeros"),  # stride 2: two row phases
    (3, 32, 7, 7, 40, 3, 1, 1, 1, 1, "zeros"),  # 7 x 7: rows of 8 cells, a stage half past the sample
    (2, 8, 14, 14, 8, 3, 1, 1, 1, 1, "zeros"),  # 14 x 14: rows of 16, 7 whole stages a sample
    (2, 8, 18, 4, 8, 3, 1, 0, 1, 1, "zeros"),  # 16 x 2 outputs: rows of 4, half of them zeros
    (2, 8, 20, 19, 8, 3, 3, 2, 2, 1, "zeros"),  # stride 3, dilation 2: taps in phases 0, 2, 1
    (1, 4, 9, 9, 4, 3, 2, 0, 2, 1, "zeros"),  # stride 2, dilation 2: phase 1 copied, never read
]


def _arrays(shape, rng):
    """x, dy, w_shape, the conv keyword arguments and the checked problem of a layer."""
    N, C, H, W, M, K, S, P, D, G, mode = shape
    kw = dict(stride=S, padding=P, dilation=D, groups=G, padding_mode=mode)
    w_shape = (M, C // G, K, K)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    out = gpuops.plan_conv2d(x.shape, w_shape, None, **kw).out_shape
    dy = rng.standard_normal(out).astype(np.float32)
    q = gpuops.plan_conv2d_backward(out, x.shape, w_shape, **kw).problem
    return x, dy, w_shape, kw, q


def _expected(torch, x, dy, w_shape, kw):
    """float64 PyTorch's grad_weight (nn.Conv2d, so reflect mode is its own)."""
    _N, C = x.shape[:2]
    conv = torch.nn.Conv2d(C, w_shape[0], w_shape[2:], bias=False, dtype=torch.float64, **kw)
    xt = torch.from_numpy(x.astype(np.float64))
    conv(xt).backward(torch.from_numpy(dy.astype(np.float64)))
    return conv.weight.grad.numpy()


def _needs_hopper() -> None:
    if not sm90a.available(v2.SOURCE):
        pytest.skip("grad_weight v2 runs on compute capability 9.0 (H100, H200) only")


def _check(got, expected):
    assert not np.isnan(got).any(), "weights never written"
    error = np.abs(got - expected).max() / np.abs(expected).max()
    assert error <= CEILING, error


# ---- rules and plans (any machine) ---------------------------------------------------------------------
def test_constants_equal_the_kernel_defines():
    text = source_text(v2.SOURCE)
    for name, value in (
        ("GW_BM", v2.BM),
        ("GW_BN", v2.BN),
        ("GW_STAGES", v2.STAGES),
        ("GW_THREADS", v2.THREADS),
    ):
        assert re.search(rf"#define {name} {value}\b", text), name


@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_launches_match_the_kernels_and_their_header(shape, rng):
    """The three kernels exist under v2's header with the arrays and arguments the host passes;
    the grid covers every column and filter tile of every group; the stages fit an SM once."""
    _, _, _, _, q = _arrays(shape, rng)
    assert v2.refusal(q) is None
    copy, gemm, split = v2.copy_launch(q), v2.gemm_launch(q), v2.split_launch(q)
    for launch in (copy, gemm, split):
        pointers, scalars = kernel_signature(launch.source, launch.kernel)
        assert list(launch.arrays) == pointers and [n for n, _ in launch.args] == scalars
        assert "grad_weight v2" in kernel_span(launch.source, launch.kernel).text
    g, Cg, Mg = q.geometry, q.C // q.groups, q.M // q.groups
    assert gemm.grid[:2] == (-(-Cg * g.KH * g.KW // 128), q.groups * -(-Mg // 64))
    assert gemm.shared_bytes == 4 * 2 * (64 + 128) * 128 + 1024 and gemm.shared_bytes + 1024 <= 228 * 1024
    rows = g.KW * g.stride_h * q.N * q.C * v2.shifted_rows(q)
    assert copy.arg("rows") == rows  # a row kernel over the copy rows
    assert copy.threads.of.cells == 4 and copy.threads.of.row_length == v2.padded_width(q)
    assert v2.padded_width(q) % 4 == 0 and 0 <= v2.padded_width(q) - g.W_out < 4


def test_splits_fill_whole_waves_and_cover_every_stage_once(rng):
    """The 5x5 class (16 samples of 64 x 64): 2,048 stages over 7 column tiles, split into as
    many blocks as fill WAVES waves of one block an SM without a partial one; forced counts leave
    no empty split."""
    q = _arrays((16, 32, 64, 64, 64, 5, 1, 2, 1, 1, "zeros"), rng)[4]
    stages = 16 * 64 * 64 // 32
    launch = v2.gemm_launch(q)
    blocks = 7 * launch.grid[2]
    assert launch.grid[:2] == (7, 1) and v2.WAVES * v2.SMS - 7 < blocks <= v2.WAVES * v2.SMS
    for asked in (1, 3, 7, 5000):
        got = v2.splits(q, 7, asked)
        per = -(-stages // got)
        assert got == -(-stages // per) and (got - 1) * per < stages <= got * per


def test_refusals_name_the_rule():
    """What v2 cannot hold: a transposed convolution's input as dy (smaller than the windows),
    and counts past 32 bits (2^17 samples of 128 x 128 outputs: 2^31 cells)."""
    g = gpuops.window_geometry(9, 9, 3, 2, 1)
    transposed = conv_backward.GradProblem(1, 2, 2, 1, g, g.H_out - 1, g.W_out - 1)
    assert "conv2d's grad_weight" in v2.refusal(transposed)
    big = conv_backward.GradProblem(2**17, 1, 1, 1, gpuops.window_geometry(130, 130, 3), 128, 128)
    assert "32-bit" in v2.refusal(big)
    with pytest.raises(ValueError, match="does not fit: its cell, row and column counts are 32-bit"):
        v2.check_fits(big)


def test_layers_of_every_stride_and_width_fit(rng):
    """The copies' phases and padded rows hold strided, odd-sized and small layers: none refused."""
    for shape in GEOMETRIES:
        assert v2.refusal(_arrays(shape, rng)[4]) is None, shape


def test_plans_name_the_gemm_and_auto_lists_it_apart(rng):
    """The plan's weight launch is v2's GEMM; the menus' tuple keeps the algorithms of every GPU."""
    x, dy, w_shape, kw, q = _arrays(GEOMETRIES[0], rng)
    plan = gpuops.plan_conv2d_backward(dy.shape, x.shape, w_shape, **kw, weight_algorithm=ALGORITHM)
    assert plan.weight_launch == v2.gemm_launch(q) and plan.weight_launch.kernel == v2.GEMM_KERNEL
    assert ALGORITHM in gpuops.HOPPER_WEIGHT_ALGORITHMS and ALGORITHM not in gpuops.GRAD_WEIGHT_ALGORITHMS


def test_comparisons_offer_v2_only_on_hopper(monkeypatch):
    """The Backward page's timing table (offered_weight_algorithms): v2 where the device is a
    Hopper GPU, the portable algorithms everywhere."""
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=v2.SOURCE: False)
    assert gpuops.offered_weight_algorithms() == gpuops.GRAD_WEIGHT_ALGORITHMS
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=v2.SOURCE: filename == v2.SOURCE)
    assert gpuops.offered_weight_algorithms() == (*gpuops.GRAD_WEIGHT_ALGORITHMS, ALGORITHM)


@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_the_twin_reads_the_copies_rows_as_the_kernel_and_equals_gemm(shape, rng):
    """The NumPy twin takes row (c, ki, kj) of sample n as the run of L cells of copy kj starting
    ki*D_h rows in (the kernel's addressing): equal to the unfold + GEMM algorithm within fp32's
    rounding of the sums, so the copies' layout is the right one on every geometry above."""
    x, dy, w_shape, kw, _q = _arrays(shape, rng)
    got = gpuops.conv2d_grad_weight(dy, x, w_shape, **kw, algorithm=ALGORITHM)
    expected = gpuops.conv2d_grad_weight(dy, x, w_shape, **kw, algorithm="gemm")
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_the_shifted_copy_of_a_numbered_input():
    """x = 0, 1, 2, ... on one 4 x 4 plane, 3x3 taps, padding 1, stride 1: copy kj holds the
    plane shifted left by kj - 1 columns, a zero row above and below, zero columns at the edges."""
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    q = gpuops.plan_conv2d_backward((1, 1, 4, 4), x.shape, (1, 1, 3, 3), padding=1).problem
    xs = v2.shifted_copies_numpy(x, q)
    assert xs.shape == (3, 1, 1, 1, 6, 4)
    plane = np.pad(x[0, 0], 1)  # 6 x 6 with its zero border
    for kj in range(3):
        np.testing.assert_array_equal(xs[kj, 0, 0, 0], plane[:, kj : kj + 4])


def test_the_phases_of_a_strided_copy():
    """x = 0..24 on a 5 x 5 plane, 3x3 taps, stride 2, padding 1: 3 x 3 outputs. Phase 0 holds
    x's rows -1, 1, 3, 5 (2r - 1), phase 1 rows 0, 2, 4, 6 (2r); column ow of copy kj is x's
    column 2*ow + kj - 1; rows of 4 cells, the fourth zero. Tap ki reads phase ki % 2 from row
    ki // 2: ki = 2 is phase 0 one row down, x rows 1, 3, 5 for outputs 0, 1, 2 (2*oh + 2 - 1)."""
    x = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    q = gpuops.plan_conv2d_backward((1, 1, 3, 3), x.shape, (1, 1, 3, 3), stride=2, padding=1).problem
    xs = v2.shifted_copies_numpy(x, q)
    assert xs.shape == (3, 2, 1, 1, 4, 4) and v2.shifted_rows(q) == 4
    padded = np.pad(x[0, 0], 1, constant_values=-1)  # -1 marks the padding, 0 is a value of x
    for kj in range(3):
        for ph in range(2):
            for r in range(4):
                ih = 2 * r + ph - 1
                row = padded[ih + 1, kj : kj + 5 : 2] if 0 <= ih < 5 else np.full(3, -1.0)
                np.testing.assert_array_equal(xs[kj, ph, 0, 0, r, :3], np.where(row < 0, 0, row))
                assert xs[kj, ph, 0, 0, r, 3] == 0


def test_the_map_gives_each_lane_two_filters_and_column_pairs(rng):
    """WeightTileMap on one full block (64 filters x 128 columns): every thread of the warpgroup
    writes 2 filters (8 apart, within its warp's 16) x 32 columns (pairs 2r, 2r + 1 of each block
    of 8)."""
    q = _arrays((1, 128, 8, 8, 64, 1, 1, 0, 1, 1, "zeros"), rng)[4]
    launch = v2.gemm_launch(q, k_splits=1)
    written: dict[int, list[tuple[int, int]]] = {}
    for m in range(64):
        for c in range(128):
            ref = launch.thread_of(m, c, 0, 0)
            assert ref.block == (0, 0, 0)
            written.setdefault(ref.thread[0], []).append((m, c))
    assert sorted(written) == list(range(128))
    for thread, outputs in written.items():
        warp, lane = divmod(thread, 32)
        assert sorted({m for m, _ in outputs}) == [16 * warp + lane // 4, 16 * warp + lane // 4 + 8]
        assert sorted({c for _, c in outputs}) == sorted(
            8 * b + 2 * (lane % 4) + e for b in range(16) for e in (0, 1)
        )


# ---- the kernels (compute capability 9.0) ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("shape", [s for s in GEOMETRIES if s[-1] == "zeros"], ids=str)
def test_the_copy_kernel_equals_its_twin(shape, rng):
    """Every cell of the KW copies (NaN before) is the twin's as a TF32 pair, bit for bit (TF32
    rounding to nearest, ties away, as v13's copies), written by the thread the map names."""
    import cupy as cp

    _needs_hopper()
    x, _, _, _, q = _arrays(shape, rng)
    xs = cp.full(v2.copy_shape(q), cp.nan, dtype=cp.float32)
    launch = v2.copy_launch(q)
    assert_the_map_names_each_writer(launch, cp.asarray(x), xs)
    expected = v2.shifted_copies_numpy(x, q)
    big = to_tf32(expected)
    np.testing.assert_array_equal(xs[0].get(), big)
    np.testing.assert_array_equal(xs[1].get(), to_tf32(expected - big))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_v2_against_float64_torch_with_poisoned_output(shape, rng, torch):
    """Unsplit, dW starts as NaN (a weight no thread writes fails), dY split in shared memory and
    by its copy; through conv2d_grad_weight (split as the host plans it) too: all within v13's
    bound of float64 PyTorch."""
    import cupy as cp

    _needs_hopper()
    x, dy, w_shape, kw, q = _arrays(shape, rng)
    expected = _expected(torch, x, dy, w_shape, kw)
    got = gpuops.conv2d_grad_weight(cp.asarray(dy), cp.asarray(x), w_shape, **kw, algorithm=ALGORITHM)
    _check(got.get(), expected)
    if kw["padding_mode"] == "reflect":
        return
    xs = cp.empty(v2.copy_shape(q), dtype=cp.float32)
    launch_module.run(v2.copy_launch(q), cp.asarray(x), xs)
    dys = cp.empty(v2.pairs_shape(q), dtype=cp.float32)
    launch_module.run(v2.split_launch(q), cp.asarray(dy), dys)
    dw = cp.full(w_shape, cp.nan, dtype=cp.float32)
    launch_module.run(v2.gemm_launch(q, k_splits=1), dys, xs, dw)
    _check(dw.get(), expected)


@pytest.mark.gpu
@pytest.mark.parametrize("k_splits", [2, 3, 7, 64])
def test_split_k_adds_every_stage_once(k_splits, rng, torch):
    """6 samples of 8 x 16: 24 stages of 32 pixels; uneven splits leave a short last one, 64 asks
    for more splits than stages (capped)."""
    import cupy as cp

    _needs_hopper()
    shape = (6, 16, 8, 16, 40, 3, 1, 1, 1, 1, "zeros")
    x, dy, w_shape, kw, q = _arrays(shape, rng)
    got = v2.weight_grad(cp.asarray(dy), cp.asarray(x), q, k_splits=k_splits)
    _check(got.get(), _expected(torch, x, dy, w_shape, kw))


@pytest.mark.gpu
def test_chunks_of_samples_add_up(rng, torch):
    """A budget that holds the copies of 2 of 5 samples: three chunks, the same dW."""
    import cupy as cp

    _needs_hopper()
    shape = (5, 16, 16, 16, 32, 3, 1, 1, 1, 1, "zeros")
    x, dy, w_shape, kw, q = _arrays(shape, rng)
    budget = 2 * v2.copy_bytes_per_sample(q) + 100
    assert v2.chunk(q, budget) == 2
    got = v2.weight_grad(cp.asarray(dy), cp.asarray(x), q, budget_bytes=budget)
    _check(got.get(), _expected(torch, x, dy, w_shape, kw))


@pytest.mark.gpu
def test_v2_thread_map_names_each_writer(rng):
    """Trace build, unsplit: WeightTileMap names the thread that wrote each weight (130 filters:
    three blocks of rows, the last nearly empty; 144 columns: two blocks, the second partly)."""
    import cupy as cp

    _needs_hopper()
    x, dy, w_shape, _kw, q = _arrays((2, 16, 8, 8, 130, 3, 1, 1, 1, 1, "zeros"), rng)
    xs = cp.empty(v2.copy_shape(q), dtype=cp.float32)
    launch_module.run(v2.copy_launch(q), cp.asarray(x), xs)
    dys = cp.empty(v2.pairs_shape(q), dtype=cp.float32)
    launch_module.run(v2.split_launch(q), cp.asarray(dy), dys)
    launch = v2.gemm_launch(q, k_splits=1)
    dw = cp.full(w_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, dys, xs, dw)


@pytest.mark.gpu
@pytest.mark.parametrize("width", [16, 7], ids=["rows of 16", "rows of 7 padded to 8"])
def test_dy_pairs_are_tf32_pairs_written_where_the_map_says(width, rng):
    """grad_weight_v2_split_pairs: part 0 the TF32 rounding of dY, part 1 that of what it leaves,
    bit for bit, zeros past W_out; a grid capped below the quads (a 4-block grid on 5 x 8 x 16 x
    Wp cells) makes the threads loop, and PairsMap names each pass's writer."""
    import cupy as cp

    _needs_hopper()
    _, dy, _, _, q = _arrays((5, 8, 16, width, 8, 3, 1, 1, 1, 1, "zeros"), rng)
    launch = dataclasses.replace(v2.split_launch(q), grid=(4, 1, 1))
    dys = cp.full(v2.pairs_shape(q), cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, cp.asarray(dy), dys)
    dy = v2.dy_rows_numpy(dy, q)
    big = to_tf32(dy)
    np.testing.assert_array_equal(dys[0].get(), big)
    np.testing.assert_array_equal(dys[1].get(), to_tf32(dy - big))


@pytest.mark.gpu
def test_auto_measures_v2_where_it_runs(rng, torch, monkeypatch):
    """On Hopper auto times v2 among its candidates for a layer v2 holds (a layer no other test
    measures), and the gradient it returns is right whichever won."""
    import cupy as cp

    _needs_hopper()
    calls = []
    run = v2.weight_grad
    monkeypatch.setattr(v2, "weight_grad", lambda *a, **k: calls.append(1) or run(*a, **k))
    x, dy, w_shape, kw, _q = _arrays((3, 32, 16, 24, 48, 5, 1, 2, 1, 1, "zeros"), rng)
    got = gpuops.conv2d_grad_weight(cp.asarray(dy), cp.asarray(x), w_shape, **kw)
    assert calls, "auto never ran grad_weight v2"
    _check(got.get(), _expected(torch, x, dy, w_shape, kw))
