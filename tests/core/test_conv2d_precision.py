"""The tensor-core kernels v7-v12 (pipelined_tf32 / _bf16 / _fp16): exact sums of the rounded
operands, errors against float64 that their precision explains, every output written; the
channels-last copies of v10 (TF32) and v11 (bf16 / fp16) value by value; v12 (Hopper's wgmma,
sm_90a) where the device has it, beside v10 / v11 on the same layers.

Why these tolerances. A value rounded to nearest with p explicit mantissa bits is off by at
most u = 2^-(p+1) of itself: TF32 and fp16 (p = 10) u = 2^-11 = 4.9e-4, bf16 (p = 7)
u = 2^-8 = 3.9e-3. On unit-scale random data the rounding errors of the two operands of each
product are independent with mean zero, so over a sum of K products they add like a random
walk, as the products themselves do: the relative error of an output stays about
sqrt(2/3) u, independent of K (TF32 measured 2.9e-4 on the benchmark's layers, as cuDNN's).
The bounds below are about 2x that and far above fp32's 1e-7: TF32 and fp16 1e-3, bf16 1e-2.
A floor (u / 10) checks that the kernel really rounds: an fp32 kernel would pass the
ceiling too.
"""

import re

import numpy as np
import pytest

import gpuops
from gpuops import launch as launch_module
from gpuops import sm90a
from gpuops.conv2d import (
    CL_CELLS,
    CL_TILE,
    HALF_ALGORITHMS,
    HALF_CODES,
    PIPE_BK,
    PIPE_STAGES,
    PIPE_TILES,
    PRECISIONS,
    WG_ROW_BYTES,
    WG_SOURCE,
    WG_STAGES,
    WG_TILES,
    ChannelsLastCall,
    channels_last_copy_launch,
    channels_last_fits,
    channels_last_size,
    channels_last_stage,
    check_conv2d,
    pipelined_launch,
    pipelined_tile,
    to_bf16,
    to_fp16,
    to_tf32,
    warpgroup_tile,
    wgmma_fits,
)
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.support.cases import case_id, layer_arrays, random_conv_cases
from tests.support.helpers import BACKENDS, host, on
from tests.support.references import conv2d_ref
from tests.support.traces import assert_the_map_names_each_writer

PIPELINED = ("pipelined_tf32", *HALF_ALGORITHMS)
ROUNDING = {"tf32": to_tf32, "bf16": to_bf16, "fp16": to_fp16}
UNIT_ROUNDOFF = {"tf32": 2.0**-11, "bf16": 2.0**-8, "fp16": 2.0**-11}
ERROR_CEILING = {"tf32": 1e-3, "bf16": 1e-2, "fp16": 1e-3}  # ~2x sqrt(2/3) u (module docstring)
CASES = random_conv_cases(40, seed=27)
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)
# the channels-last GEMM's versions and their tiles: v10 / v11 anywhere, v12 on Hopper
GEMM_VERSIONS = [(False, t) for t in PIPE_TILES] + [(True, t) for t in WG_TILES]
gemm_versions = pytest.mark.parametrize(("wgmma", "tile"), GEMM_VERSIONS, ids=lambda v: str(v))


@pytest.fixture
def portable(monkeypatch):
    """Plans as on a GPU without Hopper's wgmma: the version choices below are v10's / v11's."""
    monkeypatch.setenv(sm90a.SWITCH_ENV, "0")


def _needs_wgmma(wgmma: bool) -> None:
    if wgmma and not sm90a.available(WG_SOURCE):
        pytest.skip("v12 runs on compute capability 9.0 (H100, H200) only")


def _rel_error(y: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))


def _torch_ref(torch, x, w, b=None, **conv):
    """The layer in float64 on the CPU (an implementation independent of ours)."""
    t = [None if a is None else torch.from_numpy(np.asarray(a, np.float64)) for a in (x, w, b)]
    return torch.nn.functional.conv2d(*t, **conv).numpy()


# ---- rounding rules (CPU) ---------------------------------------------------------------------------
def test_bf16_rounding_is_to_nearest_even():
    """cvt.rn.bf16: 7 mantissa bits; a tie goes to the even neighbour."""
    values = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-9, -(1 + 3 * 2**-8), 3.14159265, 1e38], np.float32)
    got = to_bf16(values)
    assert got[:5].tolist() == [1.0, 1 + 2**-6, 1.0, -(1 + 2**-6), 3.140625]
    assert np.isfinite(got[5]) and abs(got[5] / 1e38 - 1) <= 2**-8  # bf16 keeps fp32's range


def test_fp16_rounding_is_to_nearest_even_and_overflows_to_infinity():
    values = np.array([1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65520.0, 1e-6], np.float32)
    got = to_fp16(values)
    assert got[:3].tolist() == [1.0, 1 + 2**-9, 65504.0]
    assert np.isinf(got[3])  # past the largest fp16 value
    assert got[4] == np.float32(np.float16(1e-6))  # a subnormal fp16 value, kept


def test_every_algorithm_names_its_precision():
    assert set(PRECISIONS) == set(gpuops.ALL_ALGORITHMS)
    assert {PRECISIONS[a] for a in PIPELINED} == {"tf32", "bf16", "fp16"}
    assert not set(PIPELINED) & set(gpuops.ALGORITHMS)  # auto never picks a rounding kernel


# ---- plans and sources (CPU) ------------------------------------------------------------------------
def test_pipeline_constants_equal_the_kernel_defines():
    text = source_text("conv2d.cu")
    assert re.search(rf"#define PIPE_BK {PIPE_BK}\b", text)
    assert re.search(rf"#define PIPE_STAGES {PIPE_STAGES}\b", text)
    for precision, code in HALF_CODES.items():
        assert re.search(rf"#define PREC_{precision.upper()} {code}\b", text)


def _problem(N, C, H, W, M, K, **kw):
    return check_conv2d((N, C, H, W), (M, C // kw.get("groups", 1), K, K), None, **kw)


@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("tile", list(PIPE_TILES))
@pytest.mark.parametrize("wide", [False, True])
def test_every_pipelined_launch_matches_a_kernel_with_a_header(algorithm, tile, wide):
    launch = pipelined_launch(_problem(2, 4, 11, 9, 70, 3, padding=1), algorithm, tile=tile, wide_copies=wide)
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers and [n for n, _ in launch.args] == scalars
    header = kernel_span(launch.source, launch.kernel).text.split("extern")[0]
    assert re.search(r"// v[789] ", header)
    warps_m, warps_n = PIPE_TILES[tile]
    assert launch.block == (32 * warps_m * warps_n, 1, 1)
    assert f"_{tile[0]}x{tile[1]}" in launch.kernel


@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("tile", list(PIPE_TILES))
@pytest.mark.parametrize("channels", [64, 96])  # v11: stages of 64 channels, of 32
@pytest.mark.usefixtures("portable")
def test_every_channels_last_launch_matches_a_kernel_with_a_header(algorithm, tile, channels):
    """v10 / v11: the GEMM and the copy (x's blocks, then w's) take the arrays and arguments the
    host passes; v11's stage depth is in its name, and its shared memory holds 3 stages of both
    operands."""
    p = _problem(2, channels, 11, 9, 70, 3, padding=1)
    launch = pipelined_launch(p, algorithm, tile=tile, channels_last=True)
    precision = PRECISIONS[algorithm]
    copy = channels_last_copy_launch(p, precision)
    assert copy.kernel == f"conv2d_{'v10' if precision == 'tf32' else 'v11'}_to_channels_last"
    x_blocks = -(-2 * 13 * 11 // CL_CELLS)  # x_cl: 2 x 13 x 11 cells; w_cl: 70 x 3 x 3
    assert dict(copy.args)["x_blocks"] == x_blocks
    assert copy.grid == (x_blocks + -(-70 * 9 // CL_CELLS), channels // CL_TILE, 1)
    for each in (launch, copy):
        pointers, scalars = kernel_signature(each.source, each.kernel)
        assert list(each.arrays) == pointers and [n for n, _ in each.args] == scalars
    header = kernel_span(launch.source, launch.kernel).text.split("extern")[0]
    stage = channels_last_stage(p, precision)
    if precision == "tf32":
        assert re.search(r"// v10 ", header) and launch.kernel == f"conv2d_v10_tf32_{tile[0]}x{tile[1]}"
        assert stage == PIPE_BK
    else:
        assert re.search(r"// v11 ", header)
        assert launch.kernel == f"conv2d_v11_{precision}_{tile[0]}x{tile[1]}_c{stage}"
        assert stage == (64 if channels % 64 == 0 else 32)
        row_words = stage * 2 // 4
        assert launch.shared_bytes == 4 * PIPE_STAGES * (tile[0] + tile[1]) * (row_words + 4)


@pytest.mark.usefixtures("portable")
def test_k_splits_fill_the_gpu_and_leave_no_split_empty():
    late = _problem(32, 512, 7, 7, 512, 3, padding=1)  # 52 blocks of 128 x 128, 144 stages of k
    assert pipelined_launch(late).grid == (13, 4, 4)
    assert pipelined_launch(_problem(32, 512, 14, 14, 512, 1)).grid[2] == 1  # 16 stages: no split
    assert pipelined_launch(_problem(8, 128, 112, 112, 128, 3, padding=1)).grid[2] == 1  # 784 blocks
    assert pipelined_launch(_problem(1, 3, 48, 48, 3, 3, padding=1, groups=3)).grid[2] == 1  # 1 stage
    for stages_wanted in (1, 2, 5, 7, 50):  # Kdim 40 * 9 = 360: 12 stages of 32
        grid = pipelined_launch(_problem(1, 40, 9, 9, 8, 3), k_splits=stages_wanted).grid
        per = -(-12 // grid[2])
        assert grid[2] <= min(stages_wanted, 12) and (grid[2] - 1) * per < 12  # the last split has work


@pytest.mark.usefixtures("portable")
def test_tile_and_version_choice():
    vgg = _problem(8, 128, 112, 112, 128, 3, padding=1)
    late = _problem(32, 512, 7, 7, 512, 3, padding=1)
    few_filters = _problem(16, 32, 64, 64, 64, 5, padding=2)
    assert pipelined_tile(vgg) == (128, 128)
    assert pipelined_tile(late) == (128, 128)  # a small grid: k is split instead
    assert pipelined_tile(few_filters) == (64, 64)
    assert "_v10_" in pipelined_launch(vgg).kernel  # 128 channels: whole 32-deep stages
    assert pipelined_launch(few_filters).kernel == "conv2d_v10_tf32_128x128"  # v10: two blocks an SM
    assert "_v10_tf32_64x64" in pipelined_launch(_problem(2, 128, 9, 9, 128, 3, groups=4)).kernel
    assert "_v8_" in pipelined_launch(vgg, channels_last=False).kernel  # stride 1: 16-byte input copies
    assert "_v8_" in pipelined_launch(_problem(8, 48, 40, 40, 16, 3, padding=1)).kernel  # 48 channels
    assert "_v8_" in pipelined_launch(vgg, wide_copies=True).kernel  # asking for v7 / v8 gets them
    pointwise = _problem(32, 256, 28, 28, 256, 1)  # v8 already copies its rows without a gather
    assert "_v8_" in pipelined_launch(pointwise).kernel
    assert "_v10_" in pipelined_launch(pointwise, channels_last=True).kernel
    assert "_v10_" in pipelined_launch(_problem(32, 256, 28, 28, 256, 1, stride=2)).kernel
    assert "_v7_" in pipelined_launch(_problem(8, 16, 40, 40, 16, 3, stride=2)).kernel
    assert "_v7_" in pipelined_launch(_problem(1, 2, 9, 9, 4, 3, padding=2, padding_mode="reflect")).kernel
    assert "_v9_" in pipelined_launch(_problem(1, 2, 9, 9, 4, 3, stride=2), "pipelined_bf16").kernel
    # 16-bit operands: v11 where v10 would run (128 channels: stages of 64; 32: of 32), else v9
    assert pipelined_launch(vgg, "pipelined_bf16").kernel == "conv2d_v11_bf16_128x128_c64"
    assert pipelined_launch(few_filters, "pipelined_fp16").kernel == "conv2d_v11_fp16_128x128_c32"
    assert "_v9_" in pipelined_launch(pointwise, "pipelined_bf16").kernel  # as v8 over v10
    assert "_v9_" in pipelined_launch(vgg, "pipelined_fp16", wide_copies=True).kernel
    assert "_v9_" in pipelined_launch(_problem(8, 48, 40, 40, 16, 3, padding=1), "pipelined_bf16").kernel


@pytest.mark.usefixtures("portable")
def test_channels_last_stages_never_leave_a_split_empty():
    """v11's 64-channel stages halve the stage count: splits are counted in its stages (the late
    layer still splits as v10 does, into 4 of 18 stages of 64 instead of 36 of 32)."""
    late = _problem(32, 512, 7, 7, 512, 3, padding=1)
    assert pipelined_launch(late, "pipelined_bf16").grid == pipelined_launch(late).grid == (13, 4, 4)
    small = _problem(1, 64, 9, 9, 8, 3)  # Kdim 576: 9 stages of 64
    for wanted in (1, 2, 5, 7, 50):
        grid = pipelined_launch(small, "pipelined_fp16", k_splits=wanted).grid
        per = -(-9 // grid[2])
        assert grid[2] <= min(wanted, 9) and (grid[2] - 1) * per < 9


@pytest.mark.usefixtures("portable")
def test_channels_last_runs_where_the_channels_fill_whole_stages():
    """v10 needs each group's channels in whole PIPE_BK-deep stages (then a stage is one tap)."""
    assert channels_last_fits(_problem(2, 64, 9, 9, 8, 3, padding=1))
    assert channels_last_fits(_problem(2, 128, 9, 9, 8, 3, groups=4))  # 32 channels a group
    assert not channels_last_fits(_problem(2, 64, 9, 9, 8, 3, groups=4))  # 16 a group
    assert not channels_last_fits(_problem(2, 40, 9, 9, 8, 3))
    for algorithm in PIPELINED:
        with pytest.raises(ValueError, match="multiple of 32"):
            pipelined_launch(_problem(2, 40, 9, 9, 8, 3), algorithm, channels_last=True)
    assert "_v11_" in pipelined_launch(_problem(2, 64, 9, 9, 8, 3), "pipelined_bf16").kernel
    assert "_v9_" in pipelined_launch(_problem(2, 40, 9, 9, 8, 3), "pipelined_bf16").kernel


# ---- v12: Hopper's warpgroup MMA (plans on any machine; runs on compute capability 9.0) -------------
def test_warpgroup_constants_equal_the_kernel_defines():
    text = source_text(WG_SOURCE)
    assert re.search(rf"#define WG_STAGES {WG_STAGES}\b", text)
    assert re.search(rf"#define WG_ROW_BYTES {WG_ROW_BYTES}\b", text)
    assert '#include "conv2d.cu"' in text  # v10's copies, cp.async and write-back


@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("tile", WG_TILES)
def test_every_warpgroup_launch_matches_a_kernel_with_a_header(algorithm, tile):
    """v12: the kernel exists in conv2d_hopper.cu under its version header and takes the arrays and
    arguments the host passes; a warpgroup (128 threads) per 64 filters; shared memory holds
    WG_STAGES stages of BM + BN rows of 128 bytes, plus 1 KB to align them, within the H100's
    227 KB a block."""
    p = _problem(2, 128, 11, 9, 70, 3, padding=1)
    launch = pipelined_launch(p, algorithm, tile=tile, channels_last=True, wgmma=True)
    assert launch.source == WG_SOURCE
    assert launch.kernel == f"conv2d_v12_{PRECISIONS[algorithm]}_{tile[0]}x{tile[1]}"
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers and [n for n, _ in launch.args] == scalars
    header = kernel_span(launch.source, launch.kernel).text.split("extern")[0]
    assert re.search(r"// v12 ", header)
    assert launch.block == (2 * tile[0], 1, 1)
    assert launch.shared_bytes == WG_STAGES * (tile[0] + tile[1]) * WG_ROW_BYTES + 1024 <= 227 * 1024
    assert "wgmma" in launch.describe()


def test_warpgroup_choice(monkeypatch):
    """Where the device runs sm_90a code, the channels-last layers run v12 (TF32 always, 16-bit
    operands where a stage holds 64 channels), with the 128 x 128 tile above 64 filters a group;
    everything else keeps its version, and asking for what v12 cannot do is an error."""
    monkeypatch.setattr(sm90a, "available", lambda filename=WG_SOURCE: True)
    vgg = _problem(8, 128, 112, 112, 128, 3, padding=1)
    few_filters = _problem(16, 32, 64, 64, 64, 5, padding=2)  # 32 channels: 16-bit stages of 32
    assert warpgroup_tile(vgg) == (128, 128) and warpgroup_tile(few_filters) == (64, 128)
    assert pipelined_launch(vgg).kernel == "conv2d_v12_tf32_128x128"
    assert pipelined_launch(vgg, "pipelined_bf16").kernel == "conv2d_v12_bf16_128x128"
    assert pipelined_launch(few_filters).kernel == "conv2d_v14_tf32_64x128"  # 64 filters: v14's tile
    assert pipelined_launch(few_filters, wgmma=True).kernel == "conv2d_v12_tf32_64x128"
    grouped = _problem(32, 128, 56, 56, 128, 3, padding=1, groups=4)  # 32 filters a group: v17's halo
    assert pipelined_launch(grouped).kernel == "conv2d_v17_halo_tf32_32x128"
    strided = _problem(32, 128, 56, 56, 128, 3, padding=1, groups=4, stride=2)  # v14's rows
    assert pipelined_launch(strided).kernel == "conv2d_v14_tf32_32x128"
    assert pipelined_launch(grouped, wgmma=True).kernel == "conv2d_v12_tf32_64x128"  # v12 when asked
    # small grids split k half as often as v10 does (one 128 x 128 block an SM, cheaper stages)
    late = _problem(32, 512, 7, 7, 512, 3, padding=1)  # 52 blocks, 144 stages of 32
    assert pipelined_launch(late).grid == (13, 4, 2)
    assert pipelined_launch(late, wgmma=False).grid == (13, 4, 4)
    assert pipelined_launch(_problem(16, 1024, 7, 7, 1024, 3, padding=1)).grid[2] == 4  # v10: 9
    assert not wgmma_fits(few_filters, "fp16") and wgmma_fits(few_filters, "tf32")
    assert pipelined_launch(few_filters, "pipelined_fp16").kernel == "conv2d_v11_fp16_128x128_c32"
    pointwise = _problem(32, 256, 28, 28, 256, 1)  # v16: x read as NCHW, pixels from registers
    assert pipelined_launch(pointwise).kernel == "conv2d_v16_pointwise_tf32"
    assert "_v9_" in pipelined_launch(pointwise, "pipelined_bf16").kernel  # v16 is TF32 only
    assert "_v10_tf32_64x64" in pipelined_launch(vgg, tile=(64, 64)).kernel  # a tile only v10 has
    assert "_v10_" in pipelined_launch(vgg, wgmma=False).kernel
    with pytest.raises(ValueError, match="multiple of 64 channels"):
        pipelined_launch(few_filters, "pipelined_bf16", wgmma=True)
    with pytest.raises(ValueError, match="channels_last"):
        pipelined_launch(vgg, channels_last=False, wgmma=True)
    with pytest.raises(ValueError, match="v12's tiles"):
        pipelined_launch(vgg, tile=(64, 64), wgmma=True)


def test_warpgroup_versions_are_off_without_their_device(monkeypatch):
    """No CuPy device of compute capability 9.0 here (or the switch at 0): plans keep v10 / v11."""
    import importlib.util

    vgg = _problem(8, 128, 112, 112, 128, 3, padding=1)
    monkeypatch.setenv(sm90a.SWITCH_ENV, "0")
    assert not sm90a.available() and "_v10_" in pipelined_launch(vgg).kernel
    monkeypatch.delenv(sm90a.SWITCH_ENV)
    if importlib.util.find_spec("cupy") is None:
        assert not sm90a.available()


@pytest.mark.gpu
def test_warpgroup_module_builds_where_the_device_is_hopper():
    """On compute capability 9.0 NVRTC builds conv2d_hopper.cu for sm_90a and its kernels load;
    on any other device v12 is not offered."""
    import cupy as cp

    from gpuops.launch import function

    hopper = cp.cuda.Device().compute_capability == "90"
    assert sm90a.available(WG_SOURCE) == hopper
    if hopper:
        assert function(WG_SOURCE, "conv2d_v12_tf32_128x128").max_threads_per_block >= 256


@pytest.mark.usefixtures("portable")
def test_channels_last_copy_covers_the_windows():
    """(Hp, Wp): from the first padding cell to the last input cell a window reads, and the
    GEMM's launch carries them; stride 2 with an odd remainder leaves the last row unread."""
    p = _problem(1, 32, 10, 9, 8, 3, stride=2, padding=1)  # H_out 5, W_out 5
    assert channels_last_size(p) == (11, 11)
    assert dict(pipelined_launch(p).args)["Hp"] == 11
    q = _problem(1, 32, 10, 9, 8, 5, padding=2, dilation=2)  # H_out 6, W_out 5
    assert channels_last_size(q) == (5 + 8 + 1, 4 + 8 + 1)


# ---- both backends: the sums of the rounded operands ------------------------------------------------------
@backends
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_pipelined_conv_computes_the_sums_of_rounded_operands(case, algorithm, xp, rng):
    """Against the float64 loop reference of the ROUNDED operands the only difference left is
    the order of the fp32 sums (products of two rounded values are exact in fp32)."""
    rounding = ROUNDING[PRECISIONS[algorithm]]
    x, w, b = case.arrays(rng)
    y = host(gpuops.conv2d(*on(xp, x, w, b), algorithm=algorithm, **case.kwargs()))
    expected = conv2d_ref(rounding(x), rounding(w), b, **case.kwargs())
    np.testing.assert_allclose(y, expected, rtol=2e-4, atol=2e-4)


# ---- on the GPU: the shapes that exercise each path of the kernels ------------------------------------
GEOMETRIES = [  # (N, C, H, W, M, K, stride, padding, dilation, groups, mode)
    (3, 64, 20, 24, 136, 1, 1, 0, 1, 1, "zeros"),  # 1x1: every run a 16-byte copy; 136 = 2 x 64 + 8
    (2, 36, 17, 19, 72, 3, 1, 1, 1, 1, "zeros"),  # runs that cross rows and samples (W 19)
    (2, 20, 23, 16, 40, 3, 2, 1, 1, 2, "zeros"),  # stride 2, groups: v7's 4-byte gather
    (1, 6, 30, 33, 24, 5, 1, 4, 2, 3, "zeros"),  # dilation, Kdim = 50: weight rows not 16-byte aligned
    (2, 12, 21, 22, 70, 3, 1, 2, 1, 1, "reflect"),  # reflect padding
    (1, 3, 67, 45, 16, 7, 2, 3, 1, 1, "zeros"),  # an RGB stem: Kdim 147, no multiple of 4 or 32
]


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("tile", list(PIPE_TILES))
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_every_tile_and_gather_against_torch_with_poisoned_output(shape, tile, wide, algorithm, rng, torch):
    """Each kernel (tile x gather x precision) on each geometry: the output array starts as NaN,
    so an output that no thread writes fails; the values match float64 PyTorch on the rounded
    operands up to fp32 summation."""
    import cupy as cp

    N, C, H, W, M, K, S, P, D, G, mode = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C // G, K, K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    conv = dict(stride=S, padding=P, dilation=D, groups=G, padding_mode=mode)
    p = check_conv2d(x.shape, w.shape, b.shape, S, P, D, G, mode)
    launch = pipelined_launch(p, algorithm, tile=tile, wide_copies=wide, k_splits=1)  # one writer each
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    launch_module.run(launch, cp.asarray(x), cp.asarray(w), cp.asarray(b), y)
    rounding = ROUNDING[PRECISIONS[algorithm]]
    xr = rounding(x)
    if mode == "reflect":  # PyTorch's functional conv has no reflect mode: pad first
        xr = np.pad(xr, ((0, 0), (0, 0), (P, P), (P, P)), mode="reflect")
        conv = dict(stride=S, dilation=D, groups=G)
    else:
        conv = dict(stride=S, padding=P, dilation=D, groups=G)
    expected = _torch_ref(torch, xr, rounding(w), b, **conv)
    got = y.get()
    assert not np.isnan(got).any(), f"{launch.kernel}: outputs never written"
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4 * np.sqrt(C // G * K * K))


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("k_splits", [2, 3, 7])
def test_split_k_adds_every_part_once(k_splits, algorithm, rng, torch):
    """Blocks along z add their share of k into a zeroed y: a share added twice or never would
    move the result by whole partial sums, far past fp32 rounding. Kdim 45 * 9 = 405: 13 stages,
    so 7 splits leave a short last one; bias from split 0 only."""
    import cupy as cp

    x = rng.standard_normal((2, 45, 13, 11)).astype(np.float32)
    w = rng.standard_normal((70, 45, 3, 3)).astype(np.float32)
    b = rng.standard_normal(70).astype(np.float32)
    p = check_conv2d(x.shape, w.shape, b.shape, 1, 1)
    launch = pipelined_launch(p, algorithm, k_splits=k_splits)
    assert launch.grid[2] == k_splits
    y = cp.zeros(p.out_shape, dtype=cp.float32)
    launch_module.run(launch, cp.asarray(x), cp.asarray(w), cp.asarray(b), y)
    rounding = ROUNDING[PRECISIONS[algorithm]]
    expected = _torch_ref(torch, rounding(x), rounding(w), b, padding=1)
    np.testing.assert_allclose(y.get(), expected, rtol=2e-4, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
def test_error_against_float64_is_the_precisions(algorithm, rng, torch):
    """Unit-scale data through a layer of K = 576: the relative error against float64 of the
    UNROUNDED operands lies between u / 10 (it did round) and the ceiling its precision allows."""
    import cupy as cp

    x = rng.standard_normal((4, 64, 20, 20)).astype(np.float32)
    w = rng.standard_normal((96, 64, 3, 3)).astype(np.float32)
    y = gpuops.conv2d(cp.asarray(x), cp.asarray(w), padding=1, algorithm=algorithm).get()
    error = _rel_error(y, _torch_ref(torch, x, w, padding=1))
    precision = PRECISIONS[algorithm]
    assert UNIT_ROUNDOFF[precision] / 10 < error < ERROR_CEILING[precision], error


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("tile", list(PIPE_TILES))
def test_thread_of_names_the_thread_that_wrote_each_output(algorithm, tile, rng):
    """Trace build: the thread map the app draws is the kernel's (each tile, each precision)."""
    import cupy as cp

    x = rng.standard_normal((2, 4, 11, 9)).astype(np.float32)
    w = rng.standard_normal((70, 2, 3, 3)).astype(np.float32)
    p = check_conv2d(x.shape, w.shape, None, 1, 1, 1, 2)
    launch = pipelined_launch(p, algorithm, tile=tile, k_splits=1)
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, cp.asarray(x), cp.asarray(w), None, out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
def test_the_pipelined_choice_is_what_runs_and_the_ready_path_recomputes(rng):
    import cupy as cp

    w = cp.asarray(rng.standard_normal((80, 16, 3, 3)).astype(np.float32))
    for algorithm in PIPELINED:
        plan = gpuops.plan_conv2d((2, 16, 20, 20), w.shape, None, 1, 1, algorithm=algorithm)
        for _ in range(2):  # the second call takes the ready path: new values, same launch
            x = rng.standard_normal((2, 16, 20, 20)).astype(np.float32)
            with launch_module.recorded() as ran:
                got = gpuops.conv2d(cp.asarray(x), w, padding=1, algorithm=algorithm).get()
            assert ran == [plan.launch]
            rounding = ROUNDING[PRECISIONS[algorithm]]
            ref = conv2d_ref(rounding(x), rounding(w.get()), padding=(1, 1))
            np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-3)


# ---- v10: channels-last copies, then the GEMM on them ------------------------------------------------
CHANNELS_LAST_GEOMETRIES = [  # (N, C, H, W, M, K, stride, padding, dilation, groups, mode)
    (2, 64, 13, 17, 136, 3, 1, 1, 1, 1, "zeros"),  # 3x3: two stages a tap (v11: one), filters past 2 x 64
    (2, 256, 11, 13, 72, 3, 2, 1, 1, 2, "reflect"),  # v11 stages of 64: stride 2, groups, mirrored cells
    (3, 32, 10, 12, 70, 1, 1, 0, 1, 1, "zeros"),  # 1x1: no padding cells
    (1, 64, 15, 11, 40, 3, 2, 2, 2, 2, "zeros"),  # stride, dilation, groups of 32 channels
    (2, 32, 9, 14, 24, 5, 1, 2, 1, 1, "reflect"),  # mirrored padding cells in the copy
    (1, 96, 7, 7, 201, 3, 1, 1, 1, 3, "zeros"),  # 67 filters a group, a 7 x 7 late layer
]


_layer = layer_arrays


def _expected(torch, shape, x, w, b, precision="tf32"):
    """float64 PyTorch on the rounded operands (reflect: padded first, as nn.Conv2d does)."""
    S, P, D, G, mode = shape[6:]
    rounding = ROUNDING[precision]
    xr = rounding(x)
    if mode == "reflect":
        xr = np.pad(xr, ((0, 0), (0, 0), (P, P), (P, P)), mode="reflect")
        return _torch_ref(torch, xr, rounding(w), b, stride=S, dilation=D, groups=G)
    return _torch_ref(torch, xr, rounding(w), b, stride=S, padding=P, dilation=D, groups=G)


def _decoded(copy: np.ndarray, precision: str) -> np.ndarray:
    """A channels-last copy as float32: v10's already is; v11's uint16 bits are bf16 or fp16,
    decoded by NumPy (independently of the kernel)."""
    if precision == "tf32":
        return copy
    if precision == "bf16":
        return (copy.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return copy.view(np.float16).astype(np.float32)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("shape", CHANNELS_LAST_GEOMETRIES, ids=str)
@pytest.mark.usefixtures("portable")
def test_channels_last_copies_are_the_padded_rounded_transposes(shape, algorithm, rng):
    """x_cl[n, r, s, c] = R(x[n, c] padded)[r, s] and w_cl[m, i, j, c] = R(w[m, c, i, j]),
    value for value, R the rounding of the precision (TF32 floats in v10; bf16 / fp16 bits in
    v11, rounded to nearest even as NumPy and PyTorch round); NumPy pads and transposes
    independently."""
    import cupy as cp

    x, w, _, p = _layer(shape, rng)
    P, mode = shape[7], shape[10]
    precision = PRECISIONS[algorithm]
    call = ChannelsLastCall(p, pipelined_launch(p, algorithm, channels_last=True))
    x_cl, w_cl = call.channels_last(cp.asarray(x), cp.asarray(w))
    assert x_cl.dtype == (np.float32 if precision == "tf32" else np.uint16)
    Hp, Wp = channels_last_size(p)
    padded = np.pad(x, ((0, 0), (0, 0), (P, P), (P, P)), mode="reflect" if mode == "reflect" else "constant")
    rounding = ROUNDING[precision]
    np.testing.assert_array_equal(
        _decoded(x_cl.get(), precision), rounding(padded[:, :, :Hp, :Wp].transpose(0, 2, 3, 1))
    )
    np.testing.assert_array_equal(_decoded(w_cl.get(), precision), rounding(w.transpose(0, 2, 3, 1)))


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@gemm_versions
@pytest.mark.parametrize("shape", CHANNELS_LAST_GEOMETRIES, ids=str)
def test_channels_last_against_torch_with_poisoned_output(shape, wgmma, tile, algorithm, rng, torch):
    """v10 / v11 with each tile (v11 with stages of 64 channels where the groups allow, else 32),
    and v12 with each of its tiles where the device has wgmma (16-bit: groups of 64 channels):
    y starts as NaN, so an output no thread writes fails; the values are float64 PyTorch's on
    the rounded operands up to fp32 summation."""
    import cupy as cp

    _needs_wgmma(wgmma)
    x, w, b, p = _layer(shape, rng)
    precision = PRECISIONS[algorithm]
    if wgmma and not wgmma_fits(p, precision):
        with pytest.raises(ValueError, match="multiple of 64 channels"):
            pipelined_launch(p, algorithm, tile=tile, channels_last=True, wgmma=True)
        return
    launch = pipelined_launch(p, algorithm, tile=tile, k_splits=1, channels_last=True, wgmma=wgmma)
    version = "v12" if wgmma else "v10" if precision == "tf32" else "v11"
    assert launch.kernel.startswith(f"conv2d_{version}_{precision}_{tile[0]}x{tile[1]}")
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    ChannelsLastCall(p, launch).into(cp.asarray(x), cp.asarray(w), cp.asarray(b), y)
    got = y.get()
    assert not np.isnan(got).any(), f"{launch.kernel}: outputs never written"
    Cg, K = shape[1] // shape[9], shape[5]
    expected = _expected(torch, shape, x, w, b, precision)
    np.testing.assert_allclose(got, expected, rtol=2e-4, atol=2e-4 * np.sqrt(Cg * K * K))


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize("k_splits", [2, 5, 7])
@pytest.mark.parametrize("wgmma", [False, True], ids=["v10-v11", "v12"])
def test_channels_last_split_k_adds_every_part_once(wgmma, k_splits, algorithm, rng, torch):
    """Kdim 9 * 64 = 576: 18 stages of (tap, 32 channels), two a tap (v10, v12 in TF32), or 9 of
    one tap and 64 channels (v11, v12 with 16-bit operands). Uneven splits leave a short last one,
    none empty; with 32-channel stages every other one starts mid-tap."""
    import cupy as cp

    _needs_wgmma(wgmma)
    shape = (2, 64, 9, 11, 70, 3, 1, 1, 1, 1, "zeros")
    x, w, b, p = _layer(shape, rng)
    precision = PRECISIONS[algorithm]
    launch = pipelined_launch(p, algorithm, k_splits=k_splits, channels_last=True, wgmma=wgmma)
    stages = 576 // channels_last_stage(p, precision)
    per = -(-stages // k_splits)
    assert launch.grid[2] == -(-stages // per) and ("_v12_" in launch.kernel) == wgmma
    y = ChannelsLastCall(p, launch)(cp.asarray(x), cp.asarray(w), cp.asarray(b))
    np.testing.assert_allclose(y.get(), _expected(torch, shape, x, w, b, precision), rtol=2e-4, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@gemm_versions
def test_channels_last_thread_map_names_each_writer(wgmma, tile, algorithm, rng):
    """Trace build of v10's / v11's / v12's GEMM on real copies: the warp-tile map the app draws
    is the kernel's."""
    import cupy as cp

    _needs_wgmma(wgmma)
    groups = 1 if wgmma else 2  # v12 with 16-bit operands: groups of 64 channels
    x, w, _, p = _layer((2, 64, 7, 9, 70, 3, 1, 1, 1, groups, "zeros"), rng)
    launch = pipelined_launch(p, algorithm, tile=tile, k_splits=1, channels_last=True, wgmma=wgmma)
    x_cl, w_cl = ChannelsLastCall(p, launch).channels_last(cp.asarray(x), cp.asarray(w))
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, x_cl, w_cl, None, out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
@pytest.mark.parametrize(
    "layer",
    [
        (2, 64, 5, 7, 8, 3, 2, 1, 1, 1, "zeros"),  # Hp 7, Wp 9: 126 cells, a partial block
        (3, 64, 9, 7, 8, 3, 1, 1, 1, 1, "zeros"),  # Hp 11, Wp 9: 5 blocks, runs of 32 span samples
        (2, 32, 3, 40, 8, 3, 1, 1, 1, 1, "zeros"),  # Wp 42: runs within and across rows
    ],
    ids=str,
)
@pytest.mark.usefixtures("portable")
def test_channels_last_copy_map_names_each_writer(algorithm, layer, rng):
    """Trace build of the copy (v10's, v11's): the map of cells (across rows and samples) and
    channels to blocks and threads is the kernel's; every value of the copy is written."""
    import cupy as cp

    x, w, _, p = _layer(layer, rng)
    call = ChannelsLastCall(p, pipelined_launch(p, algorithm, channels_last=True))
    w_cl = cp.empty(call.w_shape, dtype=call.dtype)
    out = cp.full(call.x_shape, 0xFFFF if call.dtype == np.uint16 else np.nan, dtype=call.dtype)
    assert_the_map_names_each_writer(call.copy, cp.asarray(w), w_cl, cp.asarray(x), out)
    assert not np.isnan(_decoded(out.get(), PRECISIONS[algorithm])).any()


@pytest.mark.gpu
@pytest.mark.parametrize("algorithm", PIPELINED)
def test_conv2d_runs_the_copies_then_the_planned_gemm(algorithm, rng):
    """conv2d(algorithm="pipelined_*") on 64 channels: the copy (x and w), then the plan's launch
    (v10, v11; on Hopper v12, and in TF32 v14: 48 filters a group); the second call takes the
    ready path with new values."""
    import cupy as cp

    w = cp.asarray(rng.standard_normal((48, 64, 3, 3)).astype(np.float32))
    plan = gpuops.plan_conv2d((2, 64, 12, 10), w.shape, None, 1, 1, algorithm=algorithm)
    assert re.search(r"_v1[0124]_", plan.launch.kernel)  # v12 / v14 on Hopper
    copy = ChannelsLastCall(plan.problem, plan.launch).copy
    rounding = ROUNDING[PRECISIONS[algorithm]]
    for _ in range(2):
        x = rng.standard_normal((2, 64, 12, 10)).astype(np.float32)
        with launch_module.recorded() as ran:
            got = gpuops.conv2d(cp.asarray(x), w, padding=1, algorithm=algorithm).get()
        assert ran == [copy, plan.launch]
        ref = conv2d_ref(rounding(x), rounding(w.get()), padding=(1, 1))
        np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-3)
