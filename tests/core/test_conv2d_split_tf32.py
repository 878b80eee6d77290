"""v13 (pipelined_3xtf32): fp32 on Hopper's tensor cores, each value carried as a pair of TF32
values. Plans and refusals on any machine; on compute capability 9.0 the kernel against float64
PyTorch on the UNROUNDED operands, the copies value by value, split K, and the thread maps.

Why these tolerances. x = big + small with big = tf32(x) and small = tf32(x - big): the pair
misses x by at most 2^-11 * 2^-11 of it (small is off by half a TF32 unit of x - big, itself
at most 2^-11 of x), and x * w loses the product small * small, 2^-22 of it: fp32's own scale
(2^-24). The sums are fp32 (the tensor cores' for X3_PROMOTE stages, then fp32 additions in
registers). Measured on the H100 against float64: 4.8-6.3e-7 of the largest output on the
benchmark's layers, where our fp32 kernels measure 0.7-4.0e-6 and TF32 2.9e-4. The bound here,
2e-6 of the largest output, is fp32-grade (TF32 fails it 100 times over).
"""

import re

import numpy as np
import pytest

import gpuops
from gpuops import launch as launch_module
from gpuops import sm90a
from gpuops.conv2d import (
    SPLIT_ALGORITHMS,
    WG_ROW_BYTES,
    WG_SOURCE,
    WG_TILES,
    X3_PROMOTE,
    X3_STAGES,
    ChannelsLastCall,
    channels_last_copy_launch,
    channels_last_size,
    check_conv2d,
    split_tf32_launch,
    to_tf32,
)
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.support.cases import layer_arrays
from tests.support.traces import assert_the_map_names_each_writer

ERROR_CEILING = 2e-6  # of the largest output (module docstring)
GEOMETRIES = [  # (N, C, H, W, M, K, stride, padding, dilation, groups, mode)
    (2, 64, 13, 17, 136, 3, 1, 1, 1, 1, "zeros"),  # two stages a tap, filters past 2 x 64
    (2, 128, 11, 13, 72, 3, 2, 1, 1, 2, "reflect"),  # stride 2, groups, mirrored cells
    (3, 32, 10, 12, 70, 1, 1, 0, 1, 1, "zeros"),  # 1x1
    (1, 64, 15, 11, 40, 3, 2, 2, 2, 2, "zeros"),  # stride, dilation, groups of 32 channels
    (2, 32, 9, 14, 24, 5, 1, "same", 1, 1, "reflect"),  # "same" padding, mirrored
    (1, 96, 7, 7, 201, 3, 1, 1, 1, 3, "zeros"),  # 67 filters a group, a 7 x 7 late layer
    (2, 32, 10, 9, 40, 4, 1, "same", 1, 1, "zeros"),  # even kernel: one more pad bottom / right
]


def _problem(N, C, H, W, M, K, **kw):
    return check_conv2d((N, C, H, W), (M, C // kw.get("groups", 1), K, K), None, **kw)


_layer = layer_arrays


def _expected(torch, shape, x, w, b):
    """float64 PyTorch on the operands as given (nn.Conv2d's reflect mode: pad, then convolve)."""
    S, P, D, G, mode = shape[6:]
    F = torch.nn.functional
    xt, wt, bt = (torch.from_numpy(a.astype(np.float64)) for a in (x, w, b))
    if mode == "reflect":
        conv = torch.nn.Conv2d(
            x.shape[1], w.shape[0], w.shape[2:], S, P, D, G, padding_mode="reflect", dtype=torch.float64
        )
        conv.weight.data, conv.bias.data = wt, bt
        return conv(xt).detach().numpy()
    return F.conv2d(xt, wt, bt, stride=S, padding=P, dilation=D, groups=G).numpy()


def _needs_hopper() -> None:
    if not sm90a.available(WG_SOURCE):
        pytest.skip("v13 runs on compute capability 9.0 (H100, H200) only")


# ---- plans (any machine) ----------------------------------------------------------------------------
def test_split_constants_equal_the_kernel_defines():
    text = source_text(WG_SOURCE)
    assert re.search(rf"#define X3_STAGES_128 {X3_STAGES[128]}\b", text)
    assert re.search(rf"#define X3_STAGES_64 {X3_STAGES[64]}\b", text)


@pytest.mark.parametrize("tile", WG_TILES)
def test_every_split_launch_matches_a_kernel_with_a_header(tile):
    """The GEMM and its copy exist in conv2d_hopper.cu under v13's header and take the arrays and
    arguments the host passes; a stage holds both parts of both operands, within 227 KB."""
    p = _problem(2, 64, 11, 9, 70, 3, padding=1)
    launch = split_tf32_launch(p, tile=tile)
    assert launch.source == WG_SOURCE and launch.kernel == f"conv2d_v13_3xtf32_{tile[0]}x{tile[1]}"
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers and [n for n, _ in launch.args] == scalars
    assert re.search(r"// v13 ", kernel_span(launch.source, launch.kernel).text.split("extern")[0])
    args = dict(launch.args)
    Hp, Wp = channels_last_size(p)
    assert args["x_part"] == 2 * Hp * Wp * 64 and args["w_part"] == 70 * 9 * 64
    assert args["x_part"].dtype == np.int64 and args["promote"] == X3_PROMOTE
    stages = X3_STAGES[tile[0]]
    assert launch.shared_bytes == stages * 2 * (tile[0] + tile[1]) * WG_ROW_BYTES + 1024 <= 227 * 1024
    assert launch.block == (2 * tile[0], 1, 1) and "three TF32 wgmma a k-step" in launch.describe()
    copy = channels_last_copy_launch(p, "3xtf32")
    assert copy.source == WG_SOURCE and copy.kernel == "conv2d_v13_to_channels_last"
    pointers, scalars = kernel_signature(copy.source, copy.kernel)
    assert list(copy.arrays) == pointers and [n for n, _ in copy.args] == scalars
    assert dict(copy.args)["x_part"] == args["x_part"] and dict(copy.args)["w_part"] == args["w_part"]


def test_split_refuses_what_it_cannot_run():
    """Groups of a multiple of 32 channels only, v12's tiles only: a ValueError naming the rule."""
    with pytest.raises(ValueError, match="multiple of 32 channels"):
        split_tf32_launch(_problem(1, 3, 16, 16, 8, 3, padding=1))
    with pytest.raises(ValueError, match="v13's tiles"):
        split_tf32_launch(_problem(1, 64, 16, 16, 8, 3, padding=1), tile=(64, 64))
    with pytest.raises(ValueError, match="multiple of 32 channels"):
        gpuops.plan_conv2d((1, 3, 16, 16), (8, 3, 3, 3), None, 1, 1, algorithm="pipelined_3xtf32")


def test_menus_offer_v13_only_on_hopper(monkeypatch):
    """The Direct page's list (offered_algorithms): v13 where the device is a Hopper GPU."""
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=WG_SOURCE: False)
    assert "pipelined_3xtf32" not in gpuops.offered_algorithms()
    monkeypatch.setattr(sm90a, "targets_device", lambda filename=WG_SOURCE: True)
    assert gpuops.offered_algorithms() == gpuops.ALL_ALGORITHMS


def test_the_numpy_path_computes_fp32():
    """Without a GPU the algorithm is the fp32 twin (v13's precision is fp32)."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((1, 32, 6, 7)).astype(np.float32)
    w = rng.standard_normal((8, 32, 3, 3)).astype(np.float32)
    got = gpuops.conv2d(x, w, padding=1, algorithm="pipelined_3xtf32")
    np.testing.assert_array_equal(got, gpuops.conv2d(x, w, padding=1, algorithm="direct"))


# ---- the kernels (compute capability 9.0) ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("tile", WG_TILES)
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_split_against_float64_torch_with_poisoned_output(shape, tile, rng, torch):
    """y starts as NaN (an output no thread writes fails); the values are float64 PyTorch's on the
    operands as given, within fp32-grade error."""
    import cupy as cp

    _needs_hopper()
    x, w, b, p = _layer(shape, rng)
    launch = split_tf32_launch(p, tile=tile, k_splits=1)
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    ChannelsLastCall(p, launch).into(cp.asarray(x), cp.asarray(w), cp.asarray(b), y)
    got = y.get()
    assert not np.isnan(got).any(), f"{launch.kernel}: outputs never written"
    expected = _expected(torch, shape, x, w, b)
    assert np.abs(got - expected).max() <= ERROR_CEILING * np.abs(expected).max()


@pytest.mark.gpu
def test_split_is_as_accurate_as_fp32_where_tf32_is_not(rng, torch):
    """On a 4,608-deep layer: v13's error is at most our fp32 kernel's, TF32's 100x more."""
    import cupy as cp

    _needs_hopper()
    shape = (4, 512, 7, 7, 128, 3, 1, 1, 1, 1, "zeros")
    x, w, b, _ = _layer(shape, rng)
    expected = _expected(torch, shape, x, w, b)
    scale = np.abs(expected).max()

    def error(algorithm: str) -> float:
        y = gpuops.conv2d(cp.asarray(x), cp.asarray(w), cp.asarray(b), 1, 1, algorithm=algorithm).get()
        return float(np.abs(y - expected).max() / scale)

    split, fp32, tf32 = error("pipelined_3xtf32"), error("implicit_gemm"), error("pipelined_tf32")
    assert split <= max(fp32, 1e-6) and tf32 > 100 * split, (split, fp32, tf32)


@pytest.mark.gpu
@pytest.mark.parametrize("k_splits", [2, 5, 7])
def test_split_k_adds_every_part_once(k_splits, rng, torch):
    """Kdim 9 * 64 = 576: 18 stages of (tap, 32 channels); uneven splits leave a short last one."""
    import cupy as cp

    _needs_hopper()
    shape = (2, 64, 9, 11, 70, 3, 1, 1, 1, 1, "zeros")
    x, w, b, p = _layer(shape, rng)
    launch = split_tf32_launch(p, k_splits=k_splits)
    per = -(-18 // k_splits)
    assert launch.grid[2] == -(-18 // per)
    y = ChannelsLastCall(p, launch)(cp.asarray(x), cp.asarray(w), cp.asarray(b)).get()
    expected = _expected(torch, shape, x, w, b)
    assert np.abs(y - expected).max() <= ERROR_CEILING * np.abs(expected).max()


@pytest.mark.gpu
def test_split_copies_are_the_tf32_pairs(rng):
    """x_cl[0] = tf32(padded x, channels last), x_cl[1] = tf32(what that leaves), value for value
    (NumPy rounds, pads and transposes independently); the same for w."""
    import cupy as cp

    _needs_hopper()
    shape = (2, 64, 9, 11, 40, 3, 2, 1, 1, 1, "reflect")
    x, w, _, p = _layer(shape, rng)
    call = ChannelsLastCall(p, split_tf32_launch(p))
    x_cl, w_cl = (a.get() for a in call.channels_last(cp.asarray(x), cp.asarray(w)))
    Hp, Wp = channels_last_size(p)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="reflect")[:, :, :Hp, :Wp].transpose(0, 2, 3, 1)
    for copy, values in ((x_cl, padded), (w_cl, w.transpose(0, 2, 3, 1))):
        big = to_tf32(values)
        np.testing.assert_array_equal(copy[0], big)
        np.testing.assert_array_equal(copy[1], to_tf32(values - big))
        assert np.abs(copy[0].astype(np.float64) + copy[1] - values).max() <= 2.0**-21 * np.abs(values).max()


@pytest.mark.gpu
@pytest.mark.parametrize("tile", WG_TILES)
def test_split_thread_maps_name_each_writer(tile, rng):
    """Trace builds: the GEMM's warpgroup map and the copy's map (both parts) are the kernels'."""
    import cupy as cp

    _needs_hopper()
    x, w, _, p = _layer((2, 64, 7, 9, 70, 3, 1, 1, 1, 1, "zeros"), rng)
    launch = split_tf32_launch(p, tile=tile, k_splits=1)
    call = ChannelsLastCall(p, launch)
    x_cl, w_cl = call.channels_last(cp.asarray(x), cp.asarray(w))
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, x_cl, w_cl, None, out)
    assert not np.isnan(out.get()).any()
    out = cp.full(call.x_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(call.copy, cp.asarray(w), w_cl, cp.asarray(x), out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
def test_conv2d_and_auto_run_the_split_kernel(rng):
    """conv2d(algorithm="pipelined_3xtf32") runs the two copies, then the plan's GEMM; auto on a
    64-channel layer measures it beside the fp32 kernels and keeps one of them."""
    import cupy as cp

    _needs_hopper()
    x = cp.asarray(rng.standard_normal((2, 64, 12, 10)).astype(np.float32))
    w = cp.asarray(rng.standard_normal((48, 64, 3, 3)).astype(np.float32))
    plan = gpuops.plan_conv2d(x.shape, w.shape, None, 1, 1, algorithm="pipelined_3xtf32")
    with launch_module.recorded() as ran:
        gpuops.conv2d(x, w, padding=1, algorithm="pipelined_3xtf32")
    assert ran == [ChannelsLastCall(plan.problem, plan.launch).copy, plan.launch]
    # 48 filters: v14 (pixel_rows_3xtf32) is a candidate too
    assert gpuops.resolve_algorithm(x, w, None, 1, 1) in (*gpuops.ALGORITHMS, *SPLIT_ALGORITHMS)
