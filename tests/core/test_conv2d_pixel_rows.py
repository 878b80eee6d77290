"""v14 (pixel_rows_tf32, pixel_rows_3xtf32): v12 / v13 with the pixels on the tensor cores' 64
rows and the filters on their 32 or 64 columns. Plans and refusals on any machine; on compute
capability 9.0 the kernels against float64 PyTorch with poisoned outputs on layers whose groups
have few filters (fewer than, exactly, and more than the tile's columns), split K, the thread
maps, and auto / the backward pass running it.

Why these tolerances. TF32 (pixel_rows_tf32): the operands rounded to 10 mantissa bits, each
off by at most u = 2^-11 of itself; the products of the rounded values are exact in fp32, so
against float64 on the ROUNDED operands only the fp32 summation differs (v12's bounds:
rtol 2e-4, atol 2e-4 * sqrt(terms)); against the unrounded operands the error is about
sqrt(2/3) u of an output's scale on unit random data, under 1e-3 of the largest output, and
above u / 10 (a kernel that did not round would pass the ceiling, not the floor). 3xTF32
(pixel_rows_3xtf32): v13's pairs and sums, so v13's bound: 2e-6 of the largest output, fp32's
grade (test_conv2d_split_tf32's docstring derives it).
"""

import re

import numpy as np
import pytest

import gpuops
from gpuops import autotune, sm90a
from gpuops import launch as launch_module
from gpuops.conv2d import (
    PIXEL_ROWS_ALGORITHMS,
    PIXEL_ROWS_FILTERS,
    PIXEL_TILES,
    V14_STAGES,
    WG_ROW_BYTES,
    WG_SOURCE,
    X3_PROMOTE,
    ChannelsLastCall,
    PixelRowsMap,
    channels_last_size,
    check_conv2d,
    pixel_rows_launch,
    pixel_rows_tile,
    to_tf32,
)
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.support.cases import layer_arrays
from tests.support.traces import assert_the_map_names_each_writer

ALGORITHMS = tuple(PIXEL_ROWS_ALGORITHMS)  # pixel_rows_tf32, pixel_rows_3xtf32
SPLIT_CEILING = 2e-6  # 3xTF32, of the largest output (module docstring)
TF32_CEILING, TF32_FLOOR = 1e-3, 2.0**-11 / 10  # TF32 against the unrounded operands
GEOMETRIES = [  # (N, C, H, W, M, K, stride, padding, dilation, groups, mode)
    (2, 128, 9, 13, 128, 3, 1, 1, 1, 4, "zeros"),  # the grouped class: 32 filters a group
    (3, 64, 10, 11, 24, 5, 1, 2, 1, 1, "zeros"),  # 5x5, 24 filters: 8 of 32 columns empty
    (2, 64, 11, 13, 80, 3, 2, 1, 1, 2, "reflect"),  # stride 2, 40 filters a group, mirrored
    (1, 96, 7, 7, 201, 3, 1, 1, 1, 3, "zeros"),  # 67 filters a group: several blocks of columns
    (3, 32, 10, 12, 32, 1, 1, 0, 1, 1, "zeros"),  # 1x1
    (2, 32, 9, 14, 32, 5, 1, "same", 1, 1, "reflect"),  # "same" padding, mirrored
    (1, 64, 15, 11, 64, 3, 2, 2, 2, 2, "zeros"),  # stride, dilation, groups of 32 channels
    (2, 32, 10, 9, 16, 4, 1, "same", 1, 1, "zeros"),  # even kernel, 16 filters
]


def _problem(N, C, H, W, M, K, **kw):
    return check_conv2d((N, C, H, W), (M, C // kw.get("groups", 1), K, K), None, **kw)


def _expected(torch, shape, x, w, b):
    """float64 PyTorch on the operands as given (nn.Conv2d's reflect mode: pad, then convolve)."""
    S, P, D, G, mode = shape[6:]
    xt, wt, bt = (torch.from_numpy(a.astype(np.float64)) for a in (x, w, b))
    conv = torch.nn.Conv2d(
        x.shape[1], w.shape[0], w.shape[2:], S, P, D, G, padding_mode=mode, dtype=torch.float64
    )
    conv.weight.data, conv.bias.data = wt, bt
    return conv(xt).detach().numpy()


def _needs_hopper() -> None:
    if not sm90a.available(WG_SOURCE):
        pytest.skip("v14 runs on compute capability 9.0 (H100, H200) only")


def _check(algorithm, got, shape, x, w, b, torch):
    """got against float64 PyTorch within the precision's bounds (module docstring)."""
    assert not np.isnan(got).any(), "outputs never written"
    expected = _expected(torch, shape, x, w, b)
    error = np.abs(got - expected).max() / np.abs(expected).max()
    if PIXEL_ROWS_ALGORITHMS[algorithm] == "3xtf32":
        assert error <= SPLIT_CEILING, error
        return
    assert TF32_FLOOR < error <= TF32_CEILING, error
    terms = (shape[1] // shape[9]) * shape[5] ** 2
    rounded = _expected(torch, shape, to_tf32(x), to_tf32(w), b)
    np.testing.assert_allclose(got, rounded, rtol=2e-4, atol=2e-4 * np.sqrt(terms))


# ---- plans (any machine) ----------------------------------------------------------------------------
def test_v14_constants_equal_the_kernel_defines():
    text = source_text(WG_SOURCE)
    assert re.search(rf"#define V14_STAGES {V14_STAGES['tf32']}\b", text)
    assert re.search(rf"#define V14_X3_STAGES {V14_STAGES['3xtf32']}\b", text)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("tile", PIXEL_TILES)
def test_every_v14_launch_matches_a_kernel_with_a_header(tile, algorithm):
    """The GEMM exists in conv2d_hopper.cu under v14's header and takes the arrays and arguments
    the host passes; a warpgroup per 64 pixels; its stages fit an SM twice (TF32, 3xTF32 on 32 x 64)
    or once."""
    p = _problem(2, 64, 11, 9, 70, 3, padding=1)
    launch = pixel_rows_launch(p, algorithm, tile=tile)
    precision = PIXEL_ROWS_ALGORITHMS[algorithm]
    assert launch.source == WG_SOURCE and launch.kernel == f"conv2d_v14_{precision}_{tile[0]}x{tile[1]}"
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers and [n for n, _ in launch.args] == scalars
    assert re.search(r"// v14 ", kernel_span(launch.source, launch.kernel).text.split("extern")[0])
    parts = 2 if precision == "3xtf32" else 1
    shared = V14_STAGES[precision] * parts * (tile[0] + tile[1]) * WG_ROW_BYTES + 1024
    two_blocks = tile[1] == 64 or parts == 1  # an SM holds 228 KB, 1 KB of it reserved a block
    assert launch.shared_bytes == shared and (2 if two_blocks else 1) * (shared + 1024) <= 228 * 1024
    assert launch.block == (2 * tile[1], 1, 1) and "pixels on the rows" in launch.describe()
    assert launch.grid[:2] == (-(-2 * 11 * 9 // tile[1]), -(-70 // tile[0]))
    if parts == 2:
        args = dict(launch.args)
        Hp, Wp = channels_last_size(p)
        assert args["x_part"] == 2 * Hp * Wp * 64 and args["w_part"] == 70 * 9 * 64
        assert args["promote"] == X3_PROMOTE


def test_the_tile_holds_a_group_s_filters_in_one_wgmma():
    """32 columns (m64n32k8) up to 32 filters a group, else 64: no block of a 32-filter group
    computes empty columns; 3xTF32's larger stages take half the pixels (two blocks an SM)."""
    grouped, few, more, many = (
        _problem(1, 128, 8, 8, 128, 3, groups=4),
        _problem(1, 64, 8, 8, 24, 3),
        _problem(1, 64, 8, 8, 40, 3),
        _problem(1, 64, 8, 8, 256, 3),
    )
    for p in (grouped, few):
        assert pixel_rows_tile(p, "tf32") == (32, 128) and pixel_rows_tile(p, "3xtf32") == (32, 64)
        assert pixel_rows_launch(p, "pixel_rows_3xtf32").kernel == "conv2d_v14_3xtf32_32x64"
    for p in (more, many):
        assert pixel_rows_tile(p, "tf32") == pixel_rows_tile(p, "3xtf32") == (64, 128)


def test_v14_reads_pixel_rows_through_l1_where_a_stage_is_a_whole_tap():
    """x_via_l1 (TF32 only): 1 where a group has 32 channels, so the next stage is the next tap
    and re-reads this one's pixel rows one cell on; 0 where a tap takes several stages; 3xTF32
    never (measured no faster)."""
    cases = {
        _problem(2, 32, 16, 16, 64, 5, padding=2): 1,
        _problem(2, 128, 16, 16, 128, 3, padding=1, groups=4): 1,
        _problem(2, 64, 16, 16, 64, 3, padding=1): 0,
        _problem(2, 256, 8, 8, 64, 3, padding=1): 0,
    }
    for p, expected in cases.items():
        assert dict(pixel_rows_launch(p, "pixel_rows_tf32").args)["x_via_l1"] == expected
        assert "x_via_l1" not in dict(pixel_rows_launch(p, "pixel_rows_3xtf32").args)


def test_v14_refuses_what_it_cannot_run():
    """Groups of a multiple of 32 channels only, v14's tiles only: a ValueError naming the rule."""
    for algorithm in ALGORITHMS:
        with pytest.raises(ValueError, match="multiple of 32 channels"):
            pixel_rows_launch(_problem(1, 3, 16, 16, 8, 3, padding=1), algorithm)
        with pytest.raises(ValueError, match="v14's tiles"):
            pixel_rows_launch(_problem(1, 64, 16, 16, 8, 3, padding=1), algorithm, tile=(64, 64))
        with pytest.raises(ValueError, match="multiple of 32 channels"):
            gpuops.plan_conv2d((1, 3, 16, 16), (8, 3, 3, 3), None, 1, 1, algorithm=algorithm)


def test_menus_offer_v14_only_on_hopper(monkeypatch):
    """The Direct page's list (offered_algorithms): v14 where the device is a Hopper GPU."""
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=WG_SOURCE: False)
    assert not set(ALGORITHMS) & set(gpuops.offered_algorithms())
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=WG_SOURCE: True)
    assert set(ALGORITHMS) <= set(gpuops.offered_algorithms())


def test_the_numpy_path_computes_each_precision():
    """Without a GPU: pixel_rows_3xtf32 is the fp32 twin, pixel_rows_tf32 the TF32 one."""
    rng = np.random.default_rng(14)
    x = rng.standard_normal((1, 32, 6, 7)).astype(np.float32)
    w = rng.standard_normal((8, 32, 3, 3)).astype(np.float32)
    got = gpuops.conv2d(x, w, padding=1, algorithm="pixel_rows_3xtf32")
    np.testing.assert_array_equal(got, gpuops.conv2d(x, w, padding=1, algorithm="direct"))
    got = gpuops.conv2d(x, w, padding=1, algorithm="pixel_rows_tf32")
    np.testing.assert_array_equal(got, gpuops.conv2d(to_tf32(x), to_tf32(w), padding=1, algorithm="direct"))


@pytest.mark.parametrize("tile", PIXEL_TILES)
def test_the_map_gives_each_lane_two_pixels_of_a_warp_and_its_filter_pairs(tile):
    """PixelRowsMap on a full block: every thread of the block writes exactly 2 pixels (8 apart,
    within its warp's 16) x BM / 4 filters (pairs 2t, 2t + 1 of each 8-filter column block)."""
    BM, BN = tile
    H_out, W_out = 16, BN // 16  # one sample = one block of pixels
    launch = pixel_rows_launch(_problem(1, 32, H_out, W_out, BM, 1), "pixel_rows_tf32", tile=tile)
    assert isinstance(launch.threads, PixelRowsMap)
    written: dict[int, list[tuple[int, int]]] = {}
    for m in range(BM):
        for oh in range(H_out):
            for ow in range(W_out):
                ref = launch.thread_of(0, m, oh, ow)
                assert ref.block == (0, 0, 0)
                written.setdefault(ref.thread[0], []).append((oh * W_out + ow, m))
    assert sorted(written) == list(range(2 * BN))
    for thread, outputs in written.items():
        warp, lane = divmod(thread, 32)
        pixels = sorted({q for q, _ in outputs})
        filters = sorted({m for _, m in outputs})
        assert pixels == [16 * warp + lane // 4, 16 * warp + lane // 4 + 8]
        assert filters == sorted(8 * j + 2 * (lane % 4) + e for j in range(BM // 8) for e in (0, 1))
        assert len(outputs) == 2 * len(filters)


# ---- the kernels (compute capability 9.0) ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("tile", PIXEL_TILES)
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_v14_against_float64_torch_with_poisoned_output(shape, tile, algorithm, rng, torch):
    """y starts as NaN (an output no thread writes fails); the values are float64 PyTorch's
    within the precision's bounds."""
    import cupy as cp

    _needs_hopper()
    x, w, b, p = layer_arrays(shape, rng)
    launch = pixel_rows_launch(p, algorithm, tile=tile, k_splits=1)
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    ChannelsLastCall(p, launch).into(cp.asarray(x), cp.asarray(w), cp.asarray(b), y)
    _check(algorithm, y.get(), shape, x, w, b, torch)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("k_splits", [2, 5, 7])
def test_v14_split_k_adds_every_part_once(k_splits, algorithm, rng, torch):
    """Kdim 9 * 64 = 576: 18 stages of (tap, 32 channels); uneven splits leave a short last one."""
    import cupy as cp

    _needs_hopper()
    shape = (2, 64, 9, 11, 40, 3, 1, 1, 1, 1, "zeros")
    x, w, b, p = layer_arrays(shape, rng)
    launch = pixel_rows_launch(p, algorithm, k_splits=k_splits)
    per = -(-18 // k_splits)
    assert launch.grid[2] == -(-18 // per)
    y = ChannelsLastCall(p, launch)(cp.asarray(x), cp.asarray(w), cp.asarray(b))
    _check(algorithm, y.get(), shape, x, w, b, torch)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("tile", PIXEL_TILES)
def test_v14_thread_map_names_each_writer(tile, algorithm, rng):
    """Trace build: PixelRowsMap, the map the app draws, names the thread that wrote each output
    (70 filters: several blocks of columns, the last one partly empty; 126 pixels a sample)."""
    import cupy as cp

    _needs_hopper()
    x, w, _, p = layer_arrays((2, 64, 7, 9, 70, 3, 1, 1, 1, 1, "zeros"), rng)
    launch = pixel_rows_launch(p, algorithm, tile=tile, k_splits=1)
    x_cl, w_cl = ChannelsLastCall(p, launch).channels_last(cp.asarray(x), cp.asarray(w))
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, x_cl, w_cl, None, out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_conv2d_runs_the_copies_then_the_v14_gemm(algorithm, rng, torch):
    """conv2d(algorithm="pixel_rows_*") runs the copy (TF32, or v13's pairs), then the plan's
    GEMM; the second call takes the ready path with new values."""
    import cupy as cp

    _needs_hopper()
    shape = (2, 128, 12, 10, 128, 3, 1, 1, 1, 4, "zeros")
    w = rng.standard_normal((128, 32, 3, 3)).astype(np.float32)
    b = np.zeros(128, np.float32)
    plan = gpuops.plan_conv2d((2, 128, 12, 10), w.shape, None, 1, 1, 1, 4, algorithm=algorithm)
    assert plan.launch.kernel.startswith("conv2d_v14_")
    copy = ChannelsLastCall(plan.problem, plan.launch).copy
    for _ in range(2):
        x = rng.standard_normal((2, 128, 12, 10)).astype(np.float32)
        with launch_module.recorded() as ran:
            got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), None, 1, 1, 1, 4, algorithm=algorithm)
        assert ran == [copy, plan.launch]
        _check(algorithm, got.get(), shape, x, w, b, torch)


@pytest.mark.gpu
def test_auto_measures_v14_where_groups_have_few_filters(monkeypatch, rng, torch):
    """auto's candidates on Hopper: v14 (3xTF32) beside v13 where a group has at most
    PIXEL_ROWS_FILTERS filters, not where it has more; TF32 v14 never (it rounds)."""
    import cupy as cp

    _needs_hopper()
    seen: list[tuple[str, ...]] = []
    measure = autotune.fastest

    def spy(key, candidates, *args, **kwargs):
        seen.append(tuple(candidates))
        return measure(key, candidates, *args, **kwargs)

    monkeypatch.setattr(autotune, "fastest", spy)
    for C, M, groups, offered in ((96, 96, 3, True), (64, 2 * PIXEL_ROWS_FILTERS + 2, 1, False)):
        seen.clear()
        x = cp.asarray(rng.standard_normal((1, C, 9, 11)).astype(np.float32))
        w = cp.asarray(rng.standard_normal((M, C // groups, 3, 3)).astype(np.float32))
        gpuops.resolve_algorithm(x, w, None, 1, 1, 1, groups)
        assert seen and "pipelined_3xtf32" in seen[0] and "pixel_rows_tf32" not in seen[0]
        assert ("pixel_rows_3xtf32" in seen[0]) == offered


@pytest.mark.gpu
def test_grad_input_runs_v14_through_auto(monkeypatch, rng, torch):
    """The backward's flipped_conv runs auto's forward: where auto keeps v14 (forced here: the
    5x5 gradient of a layer with 32 input channels, whose flipped convolution has 32 filters)
    grad_input equals PyTorch's within fp32-grade error."""
    import cupy as cp

    _needs_hopper()
    chosen: list[str] = []
    measure = autotune.fastest

    def prefer_v14(key, candidates, *args, **kwargs):
        if "pixel_rows_3xtf32" in candidates:
            chosen.append("pixel_rows_3xtf32")
            return "pixel_rows_3xtf32"
        return measure(key, candidates, *args, **kwargs)

    monkeypatch.setattr(autotune, "fastest", prefer_v14)
    x = rng.standard_normal((3, 32, 13, 11)).astype(np.float32)
    w = rng.standard_normal((64, 32, 5, 5)).astype(np.float32)
    dy = rng.standard_normal((3, 64, 13, 11)).astype(np.float32)
    got = gpuops.conv2d_grad_input(cp.asarray(dy), x.shape, cp.asarray(w), 1, 2, algorithm="flipped_conv")
    assert chosen, "auto's forward never offered v14"
    expected = torch.nn.grad.conv2d_input(
        x.shape, torch.from_numpy(w.astype(np.float64)), torch.from_numpy(dy.astype(np.float64)), 1, 2
    ).numpy()
    assert np.abs(got.get() - expected).max() <= SPLIT_CEILING * np.abs(expected).max()
