"""The Launch of every kernel: geometry and thread maps (CPU), its agreement with the CUDA source
(CPU), and with what the GPU really ran and which thread wrote each output (-m gpu)."""

import importlib
import re

import numpy as np
import pytest

import gpuops
from gpuops import launch as launch_module
from gpuops.conv2d import (
    HOPPER_ALGORITHMS,
    check_conv2d,
    depthwise_launch,
    depthwise_rows_launch,
    direct_launch,
    halo_launch,
    implicit_gemm_launch,
    implicit_gemm_tf32_launch,
    tiled_basic_launch,
    tiled_launch,
)
from gpuops.conv_backward import (
    add_slices_launch,
    check_conv2d_backward,
    flip_filter_launch,
    input_gather_launch,
    input_scatter_launch,
    weight_columns_launch,
    weight_pairs_launch,
    weight_pairs_shared_launch,
    weight_reduce_launch,
)
from gpuops.launch import includes, kernel_signature, kernel_span, row_launch, source_text
from gpuops.pool import (
    AvgRule,
    avg_pool2d_backward_launch,
    avg_pool2d_launch,
    max_pool2d_backward_launch,
    max_pool2d_launch,
    pool_geometry,
)
from gpuops.reflect_pad import reflect_pad_backward_launch, reflect_pad_launch
from gpuops.unfold_fold import fold_launch, unfold_launch
from tests.support.traces import assert_the_map_names_each_writer


def problem(N, C, H, W, M, K, groups=1, **kw):
    return check_conv2d((N, C, H, W), (M, C // groups, K, K), None, groups=groups, **kw)


def test_direct_launch_maps_outputs_to_threads():
    p = problem(2, 3, 40, 70, 20, 3, padding=1)  # 40 x 70 output: 2800 pixels in blocks of 16
    launch = direct_launch(p)
    assert launch.grid == (175, 2, 2) and launch.block == (16, 16, 1)
    # sample 1, filter 19, pixel (17, 69): p = 17*70 + 69 = 1259 -> block 78, thread 11;
    # filter 19 -> block 1, thread 3
    assert launch.thread_of(1, 19, 17, 69).block == (78, 1, 1)
    assert launch.thread_of(1, 19, 17, 69).thread == (11, 3, 0)


def test_tiled_basic_launch_is_one_tile_of_one_filter_per_block():
    p = problem(1, 6, 56, 56, 20, 3, groups=2, padding=1)
    launch = tiled_basic_launch(p)
    assert launch.grid == (16, 20, 1) and launch.block == (16, 16, 1)
    assert launch.arg("in_h") == launch.arg("in_w") == 18  # 16 + 2 halo cells
    assert launch.shared_bytes == 4 * (18 * 18 + 9)
    assert launch.thread_of(0, 13, 20, 33).block == (1 * 4 + 2, 13, 0)
    assert launch.thread_of(0, 13, 20, 33).thread == (1, 4, 0)


def test_tiled_launch_covers_filters_in_blocks_of_eight():
    p = problem(1, 6, 56, 56, 20, 3, groups=2, padding=1)  # 10 filters per group -> 2 blocks each
    launch = tiled_launch(p)
    # tiles of 16 rows x 32 columns (2 pixels per thread): 4 x 2 tiles cover the 56 x 56 output
    assert launch.threads.tile == (16, 32) and launch.grid == (8, 4, 1)
    assert (launch.arg("in_h"), launch.arg("in_w")) == (18, 34)  # 16 + 2 halo rows, 32 + 2 halo columns
    assert list(launch.threads.filters_of_block(1)) == [8, 9]
    assert list(launch.threads.filters_of_block(2)) == list(range(10, 18))
    # filter 19: group 1, second block of it -> blockIdx.y 3; pixel (20, 33): tile (1, 1) -> blockIdx.x 3;
    # column 33 is column 1 of its tile, owned by thread x 1 (pixels 1 and 17 of the tile)
    ref = launch.thread_of(0, 19, 20, 33)
    assert (ref.block, ref.thread) == ((3, 3, 0), (1, 4, 0))
    assert launch.threads.pixels_of_thread(20, 33) == [(20, 33), (20, 49)]
    assert launch.shared_bytes <= 48 * 1024


def test_tiled_runs_v6_when_each_filter_sees_one_channel_and_v15_is_not_built_for_it():
    """Depthwise (groups = channels) and greyscale layers with fewer than 8 filters per group,
    with a window or stride v15 has no kernel for (here dilation 2, a 7x7 window): v6, one
    block per tile of one group, its filters computed in turn."""
    depthwise = tiled_launch(problem(32, 256, 56, 56, 256, 3, groups=256, padding=2, dilation=2))
    assert depthwise.kernel == "conv2d_v6_depthwise" and depthwise.threads.one_channel
    # 16 x 64 tiles (16 x 16 threads, 4 pixels each) cover the 56 x 56 output in 4 x 1 tiles
    assert depthwise.threads.tile == (16, 64) and depthwise.grid == (4, 256, 32)
    assert (depthwise.arg("in_h"), depthwise.arg("in_w")) == (20, 68)  # 2 x 2 halo cells a side
    assert depthwise.arg("pitch") % 32 == 16  # two thread rows per warp: rows 16 banks apart
    # sample 3, filter 200 (group 200), pixel (37, 50): tile row 2 -> blockIdx.x 2; column 50 = 16*3 + 2
    ref = depthwise.thread_of(3, 200, 37, 50)
    assert (ref.block, ref.thread) == ((2, 200, 3), (2, 5, 0))
    assert depthwise.threads.pixels_of_thread(37, 50) == [(37, 2), (37, 18), (37, 34), (37, 50)]
    grey = tiled_launch(problem(1, 1, 4096, 4096, 1, 7, padding=3))
    assert grey.kernel == "conv2d_v6_depthwise" and grey.grid[1:] == (1, 1)
    two_per_group = tiled_launch(problem(1, 3, 64, 64, 6, 3, groups=3, padding=1, stride=3))
    assert list(two_per_group.threads.filters_of_block(2)) == [4, 5]
    # many filters per group, or several channels per filter: v3's register blocking
    assert tiled_launch(problem(1, 1, 64, 64, 16, 3, padding=1)).kernel == "conv2d_v3_register_tiled"
    assert tiled_launch(problem(1, 6, 64, 64, 3, 3, groups=3, padding=1)).kernel == "conv2d_v3_register_tiled"
    with pytest.raises(ValueError, match="one channel"):
        depthwise_launch(problem(1, 6, 64, 64, 3, 3, groups=3))
    with pytest.raises(ValueError, match="one channel"):
        depthwise_rows_launch(problem(1, 6, 64, 64, 3, 3, groups=3))


@pytest.mark.parametrize(
    "K, stride, kernel, rows",
    [
        (3, 1, "conv2d_v15_depthwise_k3s1", 8),
        (3, 2, "conv2d_v15_depthwise_k3s2", 4),
        (5, 1, "conv2d_v15_depthwise_k5s1", 8),
        (5, 2, "conv2d_v15_depthwise_k5s2", 4),
    ],
)
def test_tiled_runs_v15_on_the_depthwise_windows_it_is_built_for(K, stride, kernel, rows):
    """3x3 and 5x5 windows at stride 1 or 2, filters that see one channel: v15, a thread per
    column of `rows` outputs, 256 threads a block, no shared memory."""
    launch = tiled_launch(problem(32, 256, 56, 56, 256, K, groups=256, padding=K // 2, stride=stride))
    H_out = (56 + 2 * (K // 2) - K) // stride + 1
    strips = -(-H_out // rows)
    assert launch.kernel == kernel and launch.shared_bytes == 0 and launch.block == (256, 1, 1)
    assert launch.arg("strips") == strips
    assert launch.grid == (-(-32 * 256 * strips * H_out // 256), 1, 1)
    # sample 3, filter 200, pixel (37, 50): strip 37 // rows of plane 3*256 + 200
    t = ((3 * 256 + 200) * strips + 37 // rows) * H_out + 50
    ref = launch.thread_of(3, 200, 37, 50)
    assert (ref.block, ref.thread) == ((t // 256, 0, 0), (t % 256, 0, 0))
    assert launch.thread_of(3, 200, 37 // rows * rows, 50) == ref  # its strip's first row: the same thread
    assert f"computes {rows} outputs of one column" in launch.describe()
    # two filters a channel (a depth multiplier of 2), a greyscale image: v15 too
    assert tiled_launch(problem(1, 3, 64, 64, 6, K, groups=3, stride=stride)).kernel == kernel
    assert tiled_launch(problem(1, 1, 4096, 4096, 1, K, stride=stride)).kernel == kernel


def test_v6_tile_shrinks_until_it_fits_and_v3_takes_over_when_nothing_does():
    wide = tiled_launch(check_conv2d((1, 3, 1024, 1024), (3, 1, 15, 15), None, 8, 15, 5, 3))
    assert wide.kernel == "conv2d_v6_depthwise" and wide.shared_bytes <= 48 * 1024
    huge = check_conv2d((1, 2, 600, 600), (2, 1, 40, 40), None, 1, 0, 15, 2)  # a 586-cell window
    assert depthwise_launch(huge) is None
    with pytest.raises(ValueError, match="shared memory"):
        tiled_launch(huge)


def test_implicit_gemm_launch_numbers_pixels_across_the_batch():
    p = problem(3, 2, 10, 10, 100, 3, padding=1)  # 10 x 10 output: L = 100 pixels per sample
    launch = implicit_gemm_launch(p)
    # 300 pixels in blocks of 128 -> 3 blocks; 100 filters in blocks of 64 -> 2 blocks
    assert launch.grid == (3, 2, 1) and launch.block == (128, 1, 1)
    # sample 1, (3, 5): pixel 100 + 35 = 135 = block 1, offset 7; filter 70 = block 1, offset 6.
    # Thread t owns pixel offsets 4*(t % 16) + 0..3 (and +64) and filter offsets 4*(t // 16) + 0..3
    # (and +32): offset 7 -> t % 16 = 1, offset 6 -> t // 16 = 1, so t = 17.
    ref = launch.thread_of(1, 70, 3, 5)
    assert (ref.block, ref.thread) == ((1, 1, 0), (17, 0, 0))
    # offset 69 = 64 + 5 is the second half of thread t % 16 = 1's pixels
    assert launch.thread_of(0, 0, 6, 9).thread[0] % 16 == 1
    # its 8 pixels: block offsets 4..7 and 68..71 = batch pixels 132..135 and 196..199, i.e.
    # sample 1's pixels 32..35 (row 3, columns 2..5) and 96..99 (row 9, columns 6..9)
    pixels = [tuple(int(v) for v in r) for r in launch.threads.pixels_of_thread(1, 3, 5)]
    assert pixels == [(1, 3, 2), (1, 3, 3), (1, 3, 4), (1, 3, 5), (1, 9, 6), (1, 9, 7), (1, 9, 8), (1, 9, 9)]


def test_implicit_gemm_refuses_more_pixels_than_32_bit_ints_count():
    with pytest.raises(ValueError, match="32-bit"):
        implicit_gemm_launch(problem(200, 1, 4096, 4096, 8, 3, padding=1))


def test_a_grid_the_hardware_cannot_launch_is_refused():
    with pytest.raises(ValueError, match="65,535"):
        direct_launch(problem(70000, 1, 4, 4, 1, 3))


def test_kernel_tile_constants_match_the_cuda_source():
    text = source_text("conv2d.cu")
    conv2d_module = importlib.import_module("gpuops.conv2d")  # the package's `conv2d` is the function
    names = [
        "IG_BM",
        "IG_BN",
        "FILTERS_PER_BLOCK",
        "PIXELS_PER_THREAD",
        "TC_BM",
        "TC_BN",
        "DW_PIXELS",
        "CL_TILE",
    ]
    names += ["CL_CELLS"]
    for name in [*names, "DW_ROWS_THREADS"]:
        assert f"#define {name} {getattr(conv2d_module, name)}" in text, name


def test_every_filter_belongs_to_exactly_one_block():
    launch = tiled_launch(problem(1, 9, 9, 9, 27, 3, groups=3))
    covered = [m for by in range(launch.grid[1]) for m in launch.threads.filters_of_block(by)]
    assert covered == list(range(27))


def test_row_launch_maps_elements_to_threads():
    args = ()
    narrow = row_launch("k", "f.cu", ("a",), (1000, 56), 56, args)  # 64 threads per row, 4 rows per block
    assert narrow.block == (64, 4, 1) and narrow.grid == (250, 1, 1)
    ref = narrow.thread_of(999, 55)
    assert (ref.block, ref.thread, ref.step) == ((249, 0, 0), (55, 3, 0), (0, 0))
    tiny = row_launch("k", "f.cu", ("a",), (100, 7), 7, args)  # 8 threads per row: a warp spans 4 rows
    assert tiny.block == (8, 32, 1) and tiny.grid == (4, 1, 1)
    many = row_launch("k", "f.cu", ("a",), (10**6, 56), 56, args)  # the grid is capped; blocks loop
    assert many.grid == (4096, 1, 1)
    # row 4*4096 + 1: block row 4096 wraps to block 0 on its second pass; thread row 1
    ref = many.thread_of(4 * 4096 + 1, 0)
    assert (ref.block, ref.thread, ref.step) == ((0, 0, 0), (0, 1, 0), (1, 0))
    assert many.args[0] == ("rows", 10**6)


def test_reflect_launch_follows_the_kernels_head_groups_and_tail():
    launch = reflect_pad_launch(1, 10, 2040, (4, 4, 0, 0))  # rows of 2048 cells: 512 float4 groups
    assert launch.block == (256, 1, 1) and launch.grid == (10, 1, 1)
    ref = launch.thread_of(0, 7, 1000)  # row 7 starts aligned (7*2048 % 4 == 0): group 250
    assert (ref.block, ref.thread, ref.step) == ((7, 0, 0), (250, 0, 0), (0, 1, 0))
    odd = reflect_pad_launch(1, 3, 5, (1, 1, 1, 1))  # rows of 7 cells: row 1 starts 7 floats in
    assert odd.thread_of(0, 1, 0).step == (0, 0, 0)  # head: 1 single cell to reach a 16-byte boundary
    assert odd.thread_of(0, 1, 1).step == (0, 1, 0)  # then one 4-cell group (cells 1-4)
    # tail: cells 5 and 6, threads 0 and 1 of thread row 1 (8 threads a row, 32 rows a block)
    assert odd.thread_of(0, 1, 5).thread == (0, 1, 0) and odd.thread_of(0, 1, 6).thread == (1, 1, 0)


def test_unfold_launch_uses_16_byte_stores_when_rows_allow():
    g = gpuops.window_geometry(56, 56, 3, padding=1)  # W_out 56: 14 float4 groups per row
    launch = unfold_launch(g, 2, 3)
    assert launch.threads.cells == 4 and launch.block == (16, 16, 1)
    assert launch.arg("rows") == 2 * 27 * 56
    ref = launch.thread_of(1, 26, 55 * 56 + 53)  # row 2*27*56 - 1 ... column 53 in group 13
    assert ref.thread[0] == 13
    odd = unfold_launch(gpuops.window_geometry(9, 9, 3), 1, 1)  # W_out 7: one cell per thread
    assert odd.threads.cells == 1 and odd.block == (8, 32, 1)


def test_kernel_sources_are_readable_without_a_gpu():
    assert includes("conv2d.cu") == ["index_math.cuh"]
    span = kernel_span("conv2d.cu", "conv2d_v3_register_tiled")
    assert span.text.startswith("// ====") and "v3 register tiled = v2 + REGISTER BLOCKING" in span.text
    assert (
        span.text.rstrip().endswith("}")
        and "conv2d_v4" not in span.text
        and "conv2d_v2_tiled(" not in span.text
    )
    assert "#define FILTERS_PER_BLOCK 8" in span.text  # what the kernel uses, between header and body
    lines = source_text("conv2d.cu").splitlines()
    assert "\n".join(lines[span.first_line - 1 : span.last_line]) == span.text


POOL = pool_geometry(11, 9, 3, 2, 1, 1, True)  # 3 x 3 windows, stride 2, padding 1, ceil_mode: 6 x 5 out
ALL_LAUNCHES = {
    "direct": lambda: direct_launch(problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)),
    "tiled_basic": lambda: tiled_basic_launch(problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)),
    "tiled": lambda: tiled_launch(problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)),
    "tiled_depthwise": lambda: tiled_launch(problem(2, 4, 11, 9, 8, 3, groups=4, padding=1)),  # v15
    "tiled_depthwise_v6": lambda: tiled_launch(problem(2, 4, 11, 9, 8, 3, groups=4, padding=2, dilation=2)),
    "tiled_depthwise_5x5": lambda: tiled_launch(problem(2, 4, 21, 17, 8, 5, groups=4, padding=2, stride=2)),
    "implicit_gemm": lambda: implicit_gemm_launch(problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)),
    "implicit_gemm_tf32": lambda: implicit_gemm_tf32_launch(problem(2, 4, 11, 9, 6, 3, groups=2, padding=1)),
    "unfold": lambda: unfold_launch(gpuops.window_geometry(11, 9, 3, padding=1), 2, 4),
    "fold_scatter": lambda: fold_launch(gpuops.window_geometry(11, 9, 3, padding=1), 2, 4, "scatter"),
    "fold_gather": lambda: fold_launch(gpuops.window_geometry(11, 9, 3, padding=1), 2, 4, "gather"),
    "reflect_pad": lambda: reflect_pad_launch(8, 11, 9, (2, 3, 1, 4)),
    "input_scatter": lambda: input_scatter_launch(_grad_problem()),
    "input_gather": lambda: input_gather_launch(_grad_problem()),
    "weight_reduce": lambda: weight_reduce_launch(_grad_problem()),
    "weight_pairs": lambda: weight_pairs_launch(_grad_problem()),
    "weight_pairs_shared": lambda: weight_pairs_shared_launch(_grad_problem()),
    "weight_columns": lambda: weight_columns_launch(_grad_problem()),
    "flip_filter": lambda: flip_filter_launch(_grad_problem()),
    "add_slices": lambda: add_slices_launch(_grad_problem(), 3),
    "reflect_pad_backward_scatter": lambda: reflect_pad_backward_launch(8, 11, 9, (2, 3, 1, 4), "scatter"),
    "reflect_pad_backward_gather": lambda: reflect_pad_backward_launch(8, 11, 9, (2, 3, 1, 4), "gather"),
    "max_pool2d": lambda: max_pool2d_launch(8, POOL),
    "max_pool2d_backward_scatter": lambda: max_pool2d_backward_launch(8, POOL, "scatter"),
    "max_pool2d_backward_gather": lambda: max_pool2d_backward_launch(8, POOL, "gather"),
    "avg_pool2d": lambda: avg_pool2d_launch(8, POOL, AvgRule(False, None)),
    "avg_pool2d_backward": lambda: avg_pool2d_backward_launch(8, POOL, AvgRule(False, None)),
}
HELPERS = {"flip_filter", "add_slices"}  # not versions of an operation
# several writers per output
ATOMIC = {"fold_scatter", "input_scatter", "reflect_pad_backward_scatter", "max_pool2d_backward_scatter"}


def _grad_problem():
    """The backward of the forward launches' conv: x (2, 4, 11, 9), w (6, 2, 3, 3), groups 2, stride
    (2, 1), padding 1 -> dy (2, 6, 6, 9)."""
    return check_conv2d_backward((2, 6, 6, 9), (2, 4, 11, 9), (6, 2, 3, 3), (2, 1), 1, groups=2)[1]


@pytest.mark.parametrize("name", ALL_LAUNCHES)
def test_launch_arguments_match_the_kernel_signature(name):
    """The arrays and scalars a Launch passes are the kernel's parameters, by name and in order."""
    launch = ALL_LAUNCHES[name]()
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers
    assert [n for n, _ in launch.args] == scalars


@pytest.mark.parametrize("name", ALL_LAUNCHES)
def test_every_kernel_has_a_version_header_that_states_its_delta(name):
    """The header names the version the kernel's name carries (`grad_input_v2_gather`: "v2"):
    in a file, vN numbers the successive versions of one operation."""
    launch = ALL_LAUNCHES[name]()
    if name in HELPERS:  # copies the host's compositions launch: the file's header names them
        assert re.search(rf"// .*\b{launch.kernel}\b", source_text(launch.source).split("#include")[0])
        return
    header = kernel_span(launch.source, launch.kernel).text.split("extern")[0]
    version = re.search(r"_v(\d+)", launch.kernel).group(1)
    assert re.search(rf"// (\w+ )?v{version}\b", header), header


# ---- on the GPU: what ran, and who wrote each output -------------------------------------------
def _inputs(name, rng):
    """Arrays for one launch of ALL_LAUNCHES: inputs, then a NaN-poisoned output."""
    import cupy as cp

    launch = ALL_LAUNCHES[name]()
    if "pool2d" in name:
        return launch, _pool_inputs(name, rng)
    if name in ALL_LAUNCHES and launch.arrays == ("x", "w", "bias", "y"):
        M, Cg = (8, 1) if name.startswith("tiled_depthwise") else (6, 2)
        H, W, K = (21, 17, 5) if name == "tiled_depthwise_5x5" else (11, 9, 3)
        x = rng.standard_normal((2, 4, H, W)).astype(np.float32)
        w = rng.standard_normal((M, Cg, K, K)).astype(np.float32)
        out_shape = (2, M, 11, 9)  # 5x5 at stride 2 with padding 2 on 21 x 17: 11 x 9 too
        arrays = (cp.asarray(x), cp.asarray(w), None)
    elif name == "unfold":
        arrays, out_shape = (cp.asarray(rng.standard_normal((2, 4, 11, 9)).astype(np.float32)),), (2, 36, 99)
    elif name.startswith("fold"):
        arrays, out_shape = (cp.asarray(rng.standard_normal((2, 36, 99)).astype(np.float32)),), (2, 4, 11, 9)
    elif name.startswith("input_"):  # dy, w -> dx
        dy = rng.standard_normal((2, 6, 6, 9)).astype(np.float32)
        w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
        arrays, out_shape = (cp.asarray(dy), cp.asarray(w)), (2, 4, 11, 9)
    elif name.startswith("weight_"):  # dy, x -> dw, or v3's partial sums (slices, *dw.shape)
        dy = rng.standard_normal((2, 6, 6, 9)).astype(np.float32)
        x = rng.standard_normal((2, 4, 11, 9)).astype(np.float32)
        slices = () if name == "weight_reduce" else (launch.grid[1],)
        arrays, out_shape = (cp.asarray(dy), cp.asarray(x)), (*slices, 6, 2, 3, 3)
    elif name == "flip_filter":  # w (6, 2, 3, 3) in 2 groups -> (4, 3, 3, 3)
        arrays, out_shape = (cp.asarray(rng.standard_normal((6, 2, 3, 3)).astype(np.float32)),), (4, 3, 3, 3)
    elif name == "add_slices":  # 3 slices of partial sums -> dw (6, 2, 3, 3)
        arrays, out_shape = (
            (cp.asarray(rng.standard_normal((3, 6, 2, 3, 3)).astype(np.float32)),),
            (6, 2, 3, 3),
        )
    elif name.startswith("reflect_pad_backward"):  # the padded gradient -> (8, 11, 9)
        arrays, out_shape = (cp.asarray(rng.standard_normal((8, 16, 14)).astype(np.float32)),), (8, 11, 9)
    else:
        arrays, out_shape = (cp.asarray(rng.standard_normal((8, 11, 9)).astype(np.float32)),), (8, 16, 14)
    out = cp.full(out_shape, cp.nan, dtype=cp.float32)
    if name in ATOMIC:
        out[...] = 0
    return launch, (*arrays, out)


def _pool_inputs(name, rng):
    """The pooling launches' arrays, the watched one last: x (8, 11, 9) or dy (8, 6, 5), and a
    poisoned output; max_pool2d's last array is its indices (-1: none written), the backward
    kernels read the forward's indices."""
    import cupy as cp

    x = cp.asarray(rng.standard_normal((8, 11, 9)).astype(np.float32))
    dy = cp.asarray(rng.standard_normal((8, POOL.H_out, POOL.W_out)).astype(np.float32))
    if name == "max_pool2d":
        y = cp.full(dy.shape, cp.nan, cp.float32)
        return x, y, cp.full(dy.shape, -1, cp.int64)
    if name == "avg_pool2d":
        return x, cp.full(dy.shape, cp.nan, cp.float32)
    dx = cp.zeros(x.shape, cp.float32) if name in ATOMIC else cp.full(x.shape, cp.nan, cp.float32)
    if name == "avg_pool2d_backward":
        return dy, dx
    index = gpuops.max_pool2d(x, 3, 2, 1, 1, True, return_indices=True)[1]
    return dy, index, dx


@pytest.mark.gpu
@pytest.mark.parametrize("name", [n for n in ALL_LAUNCHES if n not in ATOMIC])
def test_thread_of_names_the_thread_that_wrote_each_output(name, rng):
    """Trace build: every output cell records the thread that stored it. Each one was written
    (no NaN left, no zero id), the kernel saw the Launch's grid and block, and thread_of()
    names exactly the recorded thread, for every cell."""
    launch, arrays = _inputs(name, rng)
    assert_the_map_names_each_writer(launch, *arrays)
    out = arrays[-1].get()
    assert not np.isnan(out).any()


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", gpuops.ALL_ALGORITHMS)
def test_the_launch_that_ran_is_the_planned_one(algorithm, rng):
    """The launch recorded at the driver call equals the plan the app draws."""
    import cupy as cp

    C = 32 if algorithm in HOPPER_ALGORITHMS else 4  # v13, v14 run groups of 32k channels only
    if algorithm not in gpuops.offered_algorithms():
        pytest.skip(f"{algorithm} runs on compute capability 9.0 only")
    x = cp.asarray(rng.standard_normal((2, C, 19, 23)).astype(np.float32))
    w = cp.asarray(rng.standard_normal((6, C, 3, 3)).astype(np.float32))
    plan = gpuops.plan_conv2d(x.shape, w.shape, None, 2, 1, algorithm=algorithm)
    with launch_module.recorded() as ran:
        gpuops.conv2d(x, w, stride=2, padding=1, algorithm=algorithm)
    assert ran and ran[-1] == plan.launch  # v13: after its two copies to channels last
    assert (ran[-1].grid, ran[-1].block) == (plan.launch.grid, plan.launch.block)


def test_every_plan_holds_the_launches_of_its_kernels():
    """check -> plan for unfold, fold, reflect_pad and its backward: the plan (shapes only, no
    array) holds exactly the launch its kernel builder makes; "auto" (chosen per call) and an
    empty output hold none; the GEMM step runs cuBLAS, no kernel of ours."""
    from gpuops import plan_fold, plan_gemm, plan_reflect_pad, plan_reflect_pad_backward, plan_unfold

    g = gpuops.window_geometry(17, 13, 3, 2, 1)
    unfold = plan_unfold((2, 3, 17, 13), 3, 1, 1, 2)
    assert unfold.launches == (unfold_launch(g, 2, 3),) and unfold.out_shape == (2, 27, g.L)
    assert plan_unfold((3, 17, 13), 3, 1, 1, 2).out_shape == (27, g.L)
    for variant in ("gather", "scatter"):
        fold = plan_fold((2, 27, g.L), (17, 13), 3, 1, 1, 2, variant)
        assert fold.launches == (fold_launch(g, 2, 3, variant),) and fold.out_shape == (2, 3, 17, 13)
    assert plan_fold((27, g.L), (17, 13), 3, 1, 1, 2).launches == ()  # auto: measured per call
    pad = plan_reflect_pad((2, 3, 17, 13), (1, 2, 3, 4))
    assert pad.launches == (reflect_pad_launch(6, 17, 13, (1, 2, 3, 4)),) and pad.out_shape == (2, 3, 24, 16)
    assert plan_reflect_pad((0, 3, 17, 13), 1).launches == ()
    for algorithm in ("scatter", "gather"):
        back = plan_reflect_pad_backward((2, 3, 24, 16), (1, 2, 3, 4), algorithm)
        assert back.launches == (reflect_pad_backward_launch(6, 17, 13, (1, 2, 3, 4), algorithm),)
        assert back.in_shape == (2, 3, 17, 13)
    gemm = plan_gemm((8, 27), (2, 27, 40))
    assert (gemm.out_shape, gemm.launches) == ((2, 8, 40), ())


@pytest.mark.parametrize(
    "plan,message",
    [
        (lambda: gpuops.plan_unfold((3, 17), 3), "input must have 3 or 4 dimensions"),
        (lambda: gpuops.plan_fold((27, 10), (5, 5), 3, variant="sum"), "variant 'sum' must be"),
        (lambda: gpuops.plan_reflect_pad((3, 4, 4), 4), "reflect padding 4 .left. must be smaller"),
        (lambda: gpuops.plan_reflect_pad_backward((3, 9, 9), 1, "sum"), "algorithm 'sum' must be"),
        (lambda: gpuops.plan_gemm((8, 27), (26, 40)), "x_unroll has 26 rows, but filter_matrix has 27"),
    ],
)
def test_plans_refuse_bad_arguments_before_any_array_exists(plan, message):
    with pytest.raises(ValueError, match=message):
        plan()


@pytest.mark.gpu
def test_unfold_fold_and_reflect_run_their_planned_launches(rng):
    import cupy as cp

    x = cp.asarray(rng.standard_normal((2, 3, 17, 13)).astype(np.float32))
    g = gpuops.window_geometry(17, 13, 3, 2, 1)
    with launch_module.recorded() as ran:
        cols = gpuops.unfold(x, 3, 1, 1, 2)
        gpuops.fold(cols, (17, 13), 3, 1, 1, 2, variant="gather")
        gpuops.reflect_pad(x, (1, 2, 3, 4))
    assert ran == [
        unfold_launch(g, 2, 3),
        fold_launch(g, 2, 3, "gather"),
        reflect_pad_launch(6, 17, 13, (1, 2, 3, 4)),
    ]


@pytest.mark.gpu
def test_repeated_calls_reuse_their_ready_call_and_compute_the_new_values(rng):
    """unfold, fold (each variant) and reflect_pad: after a call, the ready-call cache holds its
    call for (op, device, shape, arguments); the repeat, with new values, runs one launch and
    still equals the loop references."""
    import cupy as cp

    from gpuops.launch import ready_call, ready_key
    from tests.support.references import fold_ref, reflect_pad_ref, unfold_ref

    pads, window = (1, 2, 3, 4), (3, 1, 1, 2)  # kernel_size, dilation, padding, stride
    pairs = [(v, v) for v in window]  # as the references take them
    cases = [  # (op as the cache names it, input shape, its other arguments as given, call, reference)
        (
            "unfold",
            (2, 3, 13, 11),
            window,
            lambda x: gpuops.unfold(x, *window),
            lambda a: unfold_ref(a, *pairs),
        ),
        (
            "reflect_pad",
            (2, 3, 13, 11),
            pads,
            lambda x: gpuops.reflect_pad(x, pads),
            lambda a: reflect_pad_ref(a, pads),
        ),
    ] + [
        (
            "fold",
            (2, 27, 42),  # 3 channels x 3 x 3 taps, 7 x 6 windows
            ((13, 11), *window, variant),
            lambda x, v=variant: gpuops.fold(x, (13, 11), *window, variant=v),
            lambda a: fold_ref(a, (13, 11), *pairs),
        )
        for variant in gpuops.FOLD_VARIANTS
    ]
    for op, shape, args, call, reference in cases:
        for repeat in (False, True):
            a = rng.standard_normal(shape).astype(np.float32)
            x = cp.asarray(a)
            with launch_module.recorded() as ran:
                got = call(x)
            np.testing.assert_allclose(got.get(), reference(a), rtol=1e-5, atol=1e-5, err_msg=f"{op} {args}")
            assert ready_call(ready_key(op, (x,), args)) is not None, (op, args)
            if repeat:  # the ready call: one launch, no measuring
                assert len(ran) == 1, (op, args)


def test_a_kernels_shared_memory_limit_only_grows():
    """The opt-in is the kernel's, shared by every launch of it: a later launch that needs less
    leaves the larger limit an earlier one set (else the driver refuses the earlier one's next
    launch); launches within the default never touch it."""

    class Kernel:
        max_dynamic_shared_size_bytes = 0

    kernel = Kernel()
    launch_module._allow_shared(kernel, launch_module.SHARED_LIMIT)
    assert kernel.max_dynamic_shared_size_bytes == 0
    launch_module._allow_shared(kernel, 98 * 1024)
    launch_module._allow_shared(kernel, 59 * 1024)
    assert kernel.max_dynamic_shared_size_bytes == 98 * 1024
    launch_module._allow_shared(kernel, 190 * 1024)
    assert kernel.max_dynamic_shared_size_bytes == 190 * 1024


# ---- programmatic dependent launches (gpuops.dependent_launch) -----------------------------------------
def test_dependent_launch_structures_have_cuda_h_layout():
    """cuLaunchKernelEx reads CUlaunchConfig and CUlaunchAttribute as cuda.h lays them out on a
    64-bit platform: the stream at byte 32 after six grid / block sizes and the shared bytes,
    the attribute's 64-byte value union at byte 8."""
    import ctypes

    from gpuops import dependent_launch

    config, attribute = dependent_launch._Config, dependent_launch._Attribute
    assert (config.grid.offset, config.block.offset, config.shared_bytes.offset) == (0, 12, 24)
    assert (config.stream.offset, config.attributes.offset, config.attribute_count.offset) == (32, 40, 48)
    assert ctypes.sizeof(config) == 56
    assert (attribute.value.offset, ctypes.sizeof(attribute)) == (8, 72)


def test_a_driver_without_launch_ex_gives_the_plain_launch(monkeypatch):
    """No CUDA driver library (or one older than CUDA 12.0): no dependent launcher, so _Packed
    launches with cuLaunchKernel and the kernel's griddepcontrol.wait returns at once."""
    from gpuops import dependent_launch

    monkeypatch.setattr(dependent_launch, "_LIBRARIES", ("libno-such-cuda-driver.so",))
    dependent_launch._launch_ex.memo.clear()
    try:
        launch = halo_launch(check_conv2d((2, 64, 8, 8), (64, 32, 3, 3), None, padding=1, groups=2))
        assert launch.dependent and dependent_launch.launcher(launch) is None
    finally:
        dependent_launch._launch_ex.memo.clear()
