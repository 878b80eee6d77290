"""v17 (what pipelined_tf32 runs on Hopper for groups of at most 32 filters at stride 1): v16's
pixels from registers for KH x KW windows, x read as NCHW into halo tiles. Plans, layout,
dispatch and refusals on any machine; on compute capability 9.0 the kernel against float64
PyTorch with poisoned outputs (padding on every side, dilation, asymmetric "same" padding, one
and two stages, partial blocks of pixels and filters, planes shorter than a block), the thread
map the app draws, and conv2d running it after its one copy (w to channels last).

Why these tolerances: v16's (test_conv2d_pointwise's docstring), with Cg * KH * KW terms a sum.
"""

import re

import numpy as np
import pytest

import gpuops
from gpuops import launch as launch_module
from gpuops import sm90a
from gpuops.conv2d import (
    HALO_ARRAYS,
    SM90_SHARED,
    V16_KERNEL,
    V17_COL0,
    V17_KC,
    V17_PIXELS,
    V17_TAPS,
    WG_ROW_BYTES,
    WG_SOURCE,
    HaloCall,
    HaloMap,
    channels_last_copy_launch,
    check_conv2d,
    halo_fits,
    halo_launch,
    halo_tile,
    pipelined_launch,
    to_tf32,
    to_tf32_even,
)
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.support.cases import layer_arrays
from tests.support.traces import assert_the_map_names_each_writer

TF32_CEILING, TF32_FLOOR = 1e-3, 2.0**-11 / 10
GEOMETRIES = [  # (N, C, H, W, M, K, stride, padding, dilation, groups, "zeros")
    (2, 128, 12, 12, 128, 3, 1, 1, 1, 4, "zeros"),  # 4 groups of 32: one stage, 2 x 144 pixels
    (3, 32, 17, 20, 32, 3, 1, 1, 1, 1, "zeros"),  # tiles starting mid-row, a partial last tile
    (2, 64, 9, 8, 70, 3, 1, 1, 1, 1, "zeros"),  # two stages, a second block of filters (64 x 128)
    (2, 96, 11, 16, 40, 3, 1, 0, 1, 1, "zeros"),  # three stages, no padding
    (1, 32, 30, 28, 16, 5, 1, 2, 1, 1, "zeros"),  # 5x5: taps past a group of V17_TAPS
    (2, 64, 13, 12, 32, 3, 1, 2, 2, 2, "zeros"),  # dilation 2, padding 2, 2 groups
    (2, 32, 10, 12, 8, 4, 1, "same", 1, 1, "zeros"),  # even window: 1 column left, 2 right
    (5, 32, 3, 4, 32, 1, 1, 0, 1, 1, "zeros"),  # 1x1 on 12-pixel planes: a block per sample
]


def _needs_hopper() -> None:
    if not sm90a.available(WG_SOURCE):
        pytest.skip("v17 runs on compute capability 9.0 (H100, H200) only")


def _problem(N, C, H, W, M, K=3, **kw):
    return check_conv2d((N, C, H, W), (M, C // kw.get("groups", 1), K, K), None, **kw)


def _check(got, x, w, b, p, torch):
    """got against float64 PyTorch within TF32's bounds (module docstring)."""
    assert not np.isnan(got).any(), "outputs never written"
    g = p.geometry
    F = torch.nn.functional

    def expected(xv, wv):
        xt, wt, bt = (torch.from_numpy(a.astype(np.float64)) for a in (xv, wv, b))
        xt = F.pad(xt, g.pads)  # "same" may pad one more on the bottom / right
        return F.conv2d(xt, wt, bt, dilation=(g.dil_h, g.dil_w), groups=p.groups).numpy()

    exact = expected(x, w)
    error = np.abs(got - exact).max() / np.abs(exact).max()
    assert TF32_FLOOR < error <= TF32_CEILING, error
    terms = w[0].size
    rounded = expected(to_tf32_even(x), to_tf32(w))  # x to nearest even, w ties away (the kernel's)
    np.testing.assert_allclose(got, rounded, rtol=2e-4, atol=2e-4 * np.sqrt(terms))


# ---- plans (any machine) ----------------------------------------------------------------------------
def test_v17_constants_equal_the_kernel_defines():
    text = source_text(WG_SOURCE)
    for name, value in (
        ("V17_PIXELS", V17_PIXELS),
        ("V17_KC", V17_KC),
        ("V17_COL0", V17_COL0),
        ("V17_TAPS", V17_TAPS),
    ):
        assert re.search(rf"#define {name} {value}\b", text), name


def test_the_launch_matches_the_kernel_under_its_header():
    """A kernel in conv2d_hopper.cu under v17's header, taking x and the copy of w and the
    scalars the host passes; two warpgroups; a block per 128 pixels of a sample and 32 filters."""
    p = _problem(3, 128, 17, 20, 128, groups=4, padding=1)
    launch = halo_launch(p)
    assert launch.source == WG_SOURCE and launch.kernel == "conv2d_v17_halo_tf32_32x128"
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers == list(HALO_ARRAYS)
    assert [n for n, _ in launch.args] == scalars
    assert re.search(r"// v17 ", kernel_span(launch.source, launch.kernel).text.split("extern")[0])
    assert launch.block == (2 * V17_PIXELS, 1, 1)
    assert launch.grid == (3 * -(-340 // V17_PIXELS), 4, 1)  # 3 tiles a sample (340 pixels), 4 groups
    assert launch.shared_bytes == halo_tile(p).shared_bytes
    assert "halo tile" in launch.describe() and "from registers" in launch.describe()
    # it starts while the copy of w runs: a programmatic dependent launch, said in its caption
    assert launch.dependent and "programmatic dependent launch" in launch.describe()
    assert not channels_last_copy_launch(p, "tf32", with_x=False).dependent
    assert halo_launch(_problem(2, 64, 9, 8, 70, padding=1)).kernel == "conv2d_v17_halo_tf32_64x128"


@pytest.mark.parametrize(
    "layer",
    [
        dict(N=32, C=128, H=56, W=56, M=128, groups=4, padding=1),
        dict(N=3, C=32, H=17, W=20, M=32, padding=1),
        dict(N=2, C=64, H=13, W=12, M=32, groups=2, padding=2, dilation=2),
        dict(N=1, C=32, H=30, W=28, M=16, K=5, padding=2),
        dict(N=2, C=32, H=9, W=300, M=32, padding=1),  # a block within one row
        dict(N=2, C=64, H=5, W=4, M=8, padding=(3, 1)),  # rows of padding above and below
    ],
    ids=str,
)
def test_the_halo_holds_every_cell_its_pixels_read(layer):
    """Counted directly, tile by tile of every sample: the most output rows a block's pixels
    span plus the window's rows; a tile row holds the left padding, the input row and the right
    padding in whole 16-byte runs; channel rows 8 or 24 floats past a multiple of 32 apart; the
    stages (filters of every tap, then the tile) within a block's shared memory."""
    p = _problem(**layer)
    g = p.geometry
    tile = halo_tile(p)
    starts = range(0, g.L, V17_PIXELS)
    rows_out = max((min(l0 + V17_PIXELS, g.L) - 1) // g.W_out - l0 // g.W_out + 1 for l0 in starts)
    assert tile.l_tiles == len(starts)
    assert tile.rows_in == rows_out + (g.KH - 1) * g.dil_h
    last_column = V17_COL0 + (g.W_out - 1) - g.pad_left + (g.KW - 1) * g.dil_w  # the rightmost cell read
    assert last_column < tile.row_pitch and tile.row_pitch % 4 == 0 and g.pad_left <= V17_COL0
    assert tile.channel_pitch >= tile.rows_in * tile.row_pitch and tile.channel_pitch % 32 in (8, 24)
    filters = g.KH * g.KW * tile.BM * WG_ROW_BYTES
    assert tile.stage_bytes >= filters + 4 * V17_KC * tile.channel_pitch and tile.stage_bytes % 1024 == 0
    assert tile.shared_bytes == tile.stages * tile.stage_bytes + 1024 <= SM90_SHARED


@pytest.mark.parametrize(
    "layer, fits",
    [
        (dict(N=2, C=64, H=8, W=8, M=16, padding=1), True),
        (dict(N=2, C=64, H=8, W=8, M=16, groups=2, padding=1), True),  # 32 channels a group
        (dict(N=2, C=64, H=8, W=8, M=16, groups=4, padding=1), False),  # 16 channels a group
        (dict(N=2, C=48, H=8, W=8, M=16, padding=1), False),  # not whole 32-channel stages
        (dict(N=2, C=64, H=8, W=10, M=16, padding=1), False),  # rows of 10 floats: 16-byte runs straddle
        (dict(N=2, C=64, H=8, W=8, M=16, stride=2, padding=1), False),
        (dict(N=2, C=64, H=12, W=12, M=16, K=11, padding=5), False),  # 5 columns of padding a side
        (dict(N=2, C=64, H=8, W=8, M=16, padding=1, padding_mode="reflect"), False),
        (dict(N=2, C=32, H=16, W=16, M=64, K=7, padding=3), False),  # 49 taps x 64 filters: 392 KB
        (dict(N=1, C=32, H=1, W=1020, M=32, K=1), True),  # tile rows of 4 + 1020: 256 runs, one a thread
        (dict(N=1, C=32, H=1, W=1024, M=32, K=1), False),  # 257 runs (132 KB: it would fit)
    ],
)
def test_v17_fits_stride_1_zero_padding_whole_stages_and_16_byte_rows(layer, fits):
    p = _problem(**layer)
    assert halo_fits(p) == fits
    if not fits:
        with pytest.raises(ValueError, match="v17 runs layers of stride 1"):
            halo_launch(p)


def test_pipelined_tf32_runs_v17_on_groups_of_32_filters(monkeypatch):
    """On a device with sm_90a: v17 on 3x3 layers with up to 32 filters a group where two
    blocks fit an SM; v14 with 64 filters (measured faster there) or one block an SM, v16 on a
    fitting 1x1 layer, v14 where v17 cannot run (stride 2), an explicit choice keeps its
    version. Without sm_90a: v10."""
    grouped = _problem(2, 128, 12, 12, 128, groups=4, padding=1)
    monkeypatch.setattr(sm90a, "available", lambda filename=WG_SOURCE: True)
    assert pipelined_launch(grouped).kernel == "conv2d_v17_halo_tf32_32x128"
    assert pipelined_launch(_problem(2, 32, 12, 12, 24, padding=1)).kernel == "conv2d_v17_halo_tf32_32x128"
    two_stages = _problem(2, 64, 12, 12, 24, padding=1)  # 142 KB: one block an SM, not measured faster
    assert halo_fits(two_stages) and pipelined_launch(two_stages).kernel.startswith("conv2d_v14_tf32")
    assert pipelined_launch(_problem(2, 64, 12, 12, 64, padding=1)).kernel.startswith("conv2d_v14_tf32")
    assert pipelined_launch(_problem(2, 64, 12, 12, 32, K=1)).kernel == V16_KERNEL
    strided = _problem(2, 128, 12, 12, 128, groups=4, padding=1, stride=2)
    assert pipelined_launch(strided).kernel.startswith("conv2d_v14_tf32")
    assert pipelined_launch(grouped, channels_last=True, wgmma=True).kernel.startswith("conv2d_v12_tf32")
    assert "v17" not in pipelined_launch(grouped, "pipelined_bf16").kernel  # TF32 only
    monkeypatch.setattr(sm90a, "available", lambda filename=WG_SOURCE: False)
    assert pipelined_launch(grouped).kernel.startswith("conv2d_v10_tf32")


def test_the_map_keeps_blocks_within_a_sample():
    """HaloMap: block x = tile l // 128 of sample n, numbered sample by sample; within a tile the
    lanes of v14 (pixels g, g + 8 of the warp's 16; filter pairs 2t, 2t + 1 of each 8)."""
    p = _problem(2, 32, 10, 20, 32, padding=1)  # 200 pixels a sample: tiles of 128 and 72
    launch = halo_launch(p)
    assert isinstance(launch.threads, HaloMap) and launch.grid == (4, 1, 1)
    assert launch.thread_of(0, 0, 0, 0).block == (0, 0, 0)
    assert launch.thread_of(0, 0, 6, 8).block == (1, 0, 0)  # pixel 128 of sample 0
    assert launch.thread_of(1, 0, 0, 0).block == (2, 0, 0)  # sample 1 starts a new block
    ref = launch.thread_of(1, 5, 6, 19)  # pixel 139 of sample 1: 11th of its second tile
    assert ref.block == (3, 0, 0) and ref.thread == (0 * 32 + 3 * 4 + (5 % 8) // 2, 0, 0)


# ---- the kernel (compute capability 9.0) -------------------------------------------------------------
def _run(launch, p, x, w, b):
    """The launch on x and the TF32 channels-last copy of w, into a NaN-poisoned y."""
    import cupy as cp

    call = HaloCall(p, launch)
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    return call.into(cp.asarray(x), cp.asarray(w), None if b is None else cp.asarray(b), y)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_v17_against_float64_torch_with_poisoned_output(shape, rng, torch):
    """y starts as NaN (an output no thread writes fails); the values are float64 PyTorch's
    within TF32's bounds, on the unrounded and on the rounded operands."""
    _needs_hopper()
    x, w, b, p = layer_arrays(shape, rng)
    _check(_run(halo_launch(p), p, x, w, b).get(), x, w, b, p, torch)


@pytest.mark.gpu
def test_v17_is_deterministic_and_leaves_its_inputs_alone(rng):
    """The same call twice gives the same bits; x and w are read, never written."""
    import cupy as cp

    _needs_hopper()
    x, w, b, p = layer_arrays((3, 64, 11, 12, 40, 3, 1, 1, 1, 2, "zeros"), rng)
    xd, wd, bd = cp.asarray(x), cp.asarray(w), cp.asarray(b)
    call = HaloCall(p, halo_launch(p))
    first, second = call(xd, wd, bd).get(), call(xd, wd, bd).get()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(xd.get(), x)
    np.testing.assert_array_equal(wd.get(), w)


@pytest.mark.gpu
def test_v17_launches_of_different_shared_sizes_alternate(rng, torch):
    """Two layers on the same v17 kernel with 203 KB and 96 KB of shared memory, called large,
    small, large: each call right (the smaller launch must not shrink the kernel's shared memory
    limit under the larger one: the driver would refuse its next launch)."""
    _needs_hopper()
    layers = [(2, 96, 11, 16, 40, 3, 1, 0, 1, 1, "zeros"), (2, 32, 9, 8, 40, 3, 1, 1, 1, 1, "zeros")]
    runs = []
    for shape in layers:
        x, w, b, p = layer_arrays(shape, rng)
        runs.append((halo_launch(p), p, x, w, b))
    assert runs[0][0].kernel == runs[1][0].kernel
    assert runs[0][0].shared_bytes > runs[1][0].shared_bytes > launch_module.SHARED_LIMIT
    for launch, p, x, w, b in (runs[0], runs[1], runs[0]):
        _check(_run(launch, p, x, w, b).get(), x, w, b, p, torch)


@pytest.mark.gpu
def test_v17_thread_map_names_each_writer(rng):
    """Trace build: HaloMap, the map the app draws, names the thread that wrote each output
    (70 filters: a second block of filters; 2 x 72 pixels: a partial block a sample)."""
    import cupy as cp

    _needs_hopper()
    x, w, _, p = layer_arrays((2, 64, 9, 8, 70, 3, 1, 1, 1, 1, "zeros"), rng)
    launch = halo_launch(p)
    call = HaloCall(p, launch)
    w_cl = cp.empty(call.w_shape, dtype=cp.float32)
    launch_module.packed(call.copy)((cp.asarray(w), w_cl, None, None))
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, cp.asarray(x), w_cl, None, out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
def test_v17_started_during_the_copy_reads_this_calls_weights(rng, torch):
    """v17 is a programmatic dependent launch: its blocks start while the copy of w runs and
    must wait for it. 300 KB of weights and few pixel blocks (the copy outlasts v17's first
    loads), two weight tensors in turn through the ready path (the pool hands each call the
    block of w_cl the previous call wrote, so a read before the copy lands sees the other
    tensor's filters): every call's output has the bits of a plain launch on its own weights."""
    import dataclasses

    import cupy as cp

    _needs_hopper()
    shape = (2, 256, 12, 12, 256, 3, 1, 1, 1, 8, "zeros")
    x, wa, b, p = layer_arrays(shape, rng)
    wb = rng.standard_normal(wa.shape).astype(np.float32)
    conv = dict(padding=1, groups=8, algorithm="pipelined_tf32")
    launch = gpuops.plan_conv2d(x.shape, wa.shape, b.shape, **conv).launch
    assert launch == halo_launch(p) and launch.dependent
    assert launch_module.packed(launch)._dependent is not None, "the driver has no cuLaunchKernelEx"
    plain = HaloCall(p, dataclasses.replace(launch, dependent=False))
    xd, bd = cp.asarray(x), cp.asarray(b)
    weights = [cp.asarray(wa), cp.asarray(wb)]
    expected = [plain(xd, w, bd).get() for w in weights]
    for w, got in zip((wa, wb), expected, strict=True):
        _check(got, x, w, b, p, torch)
    for i in range(40):
        got = gpuops.conv2d(xd, weights[i % 2], bd, **conv)
        np.testing.assert_array_equal(got.get(), expected[i % 2], err_msg=f"call {i}")


@pytest.mark.gpu
def test_conv2d_runs_the_copy_of_w_then_v17(rng, torch):
    """conv2d(algorithm="pipelined_tf32") on a grouped layer runs the copy of w and the plan's
    launch, nothing else; the second call takes the ready path with new values; (C, H, W) too."""
    import cupy as cp

    _needs_hopper()
    w = rng.standard_normal((64, 32, 3, 3)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    conv = dict(padding=1, groups=2)
    plan = gpuops.plan_conv2d((3, 64, 12, 12), w.shape, b.shape, algorithm="pipelined_tf32", **conv)
    assert plan.launch.kernel == "conv2d_v17_halo_tf32_32x128"
    copy = HaloCall(plan.problem, plan.launch).copy
    for _ in range(2):
        x = rng.standard_normal((3, 64, 12, 12)).astype(np.float32)
        with launch_module.recorded() as ran:
            got = gpuops.conv2d(
                cp.asarray(x), cp.asarray(w), cp.asarray(b), algorithm="pipelined_tf32", **conv
            )
        assert ran == [copy, plan.launch]
        _check(got.get(), x, w, b, plan.problem, torch)
    single = gpuops.conv2d(cp.asarray(x[0]), cp.asarray(w), cp.asarray(b), algorithm="pipelined_tf32", **conv)
    _check(single.get()[None], x[:1], w, b, plan.problem, torch)
