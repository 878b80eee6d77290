"""The tensor-core kernels v7-v9 (pipelined_tf32 / _bf16 / _fp16): exact sums of the rounded
operands, errors against float64 that their precision explains, every output written.

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
from gpuops.conv2d import (
    HALF_ALGORITHMS,
    PIPE_BK,
    PIPE_STAGES,
    PIPE_TILES,
    PRECISIONS,
    check_conv2d,
    pipelined_launch,
    pipelined_tile,
    to_bf16,
    to_fp16,
    to_tf32,
)
from gpuops.launch import kernel_signature, kernel_span, source_text
from tests.cases import case_id, random_conv_cases
from tests.conftest import BACKENDS, host, on
from tests.references import conv2d_ref

PIPELINED = ("pipelined_tf32", *HALF_ALGORITHMS)
ROUNDING = {"tf32": to_tf32, "bf16": to_bf16, "fp16": to_fp16}
UNIT_ROUNDOFF = {"tf32": 2.0**-11, "bf16": 2.0**-8, "fp16": 2.0**-11}
ERROR_CEILING = {"tf32": 1e-3, "bf16": 1e-2, "fp16": 1e-3}  # ~2x sqrt(2/3) u (module docstring)
CASES = random_conv_cases(40, seed=27)
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


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


def test_tile_and_version_choice():
    vgg = _problem(8, 128, 112, 112, 128, 3, padding=1)
    late = _problem(32, 512, 7, 7, 512, 3, padding=1)
    few_filters = _problem(16, 32, 64, 64, 64, 5, padding=2)
    assert pipelined_tile(vgg) == (128, 128)
    assert pipelined_tile(late) == (64, 64)  # 52 large blocks would leave most SMs idle
    assert pipelined_tile(few_filters) == (64, 64)
    assert "_v8_" in pipelined_launch(vgg).kernel  # stride 1: 16-byte input copies
    assert "_v7_" in pipelined_launch(_problem(8, 16, 40, 40, 16, 3, stride=2)).kernel
    assert "_v7_" in pipelined_launch(_problem(1, 2, 9, 9, 4, 3, padding=2, padding_mode="reflect")).kernel
    assert "_v9_" in pipelined_launch(_problem(1, 2, 9, 9, 4, 3, stride=2), "pipelined_bf16").kernel


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
    launch = pipelined_launch(p, algorithm, tile=tile, wide_copies=wide)
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
    launch = pipelined_launch(p, algorithm, tile=tile)
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    writer, dims = launch_module.traced(launch, cp.asarray(x), cp.asarray(w), None, out)
    assert not np.isnan(out.get()).any() and (writer > 0).all()
    assert dims == (*launch.grid, *launch.block)
    for index in np.ndindex(out.shape):
        assert launch.thread_of(*index).trace_id(launch.grid, launch.block) == writer[index], index


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
