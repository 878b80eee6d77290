"""v16 (what pipelined_tf32 runs on Hopper for 1x1 layers of stride 1 without padding): v14's
pixel rows with wgmma's pixel operand taken from registers, x read as NCHW holds it. Plans,
dispatch and refusals on any machine; on compute capability 9.0 the kernel against float64
PyTorch with poisoned outputs (partial blocks of pixels and filters, groups, samples shorter than
a block), the thread map the app draws, and conv2d running it as one launch.

Why these tolerances: v14's (test_conv2d_pixel_rows' docstring). The operands are rounded to
TF32 inside the kernel (x as each lane loads its fragment, to nearest even: to_tf32_even; w in
shared memory before the tensor cores read it, ties away: to_tf32), so against float64 on the
ROUNDED operands only the fp32 summation differs (rtol 2e-4, atol 2e-4 * sqrt(terms)); against
the unrounded operands the error lies under 1e-3 of the largest output and above 2^-11 / 10 (a
kernel that truncated or skipped the rounding of either operand would still pass the ceiling;
the rounded comparison catches it: truncation leaves errors of ~2^-11 of each product, far past
fp32's summation error).
"""

import re

import numpy as np
import pytest

import gpuops
from gpuops import launch as launch_module
from gpuops import sm90a
from gpuops.conv2d import (
    ARRAYS,
    V16_FILTERS,
    V16_KC,
    V16_KERNEL,
    V16_PITCH,
    V16_PIXELS,
    V16_STAGES,
    WG_ROW_BYTES,
    WG_SOURCE,
    PointwiseMap,
    check_conv2d,
    pipelined_launch,
    pointwise_fits,
    pointwise_launch,
    to_tf32,
    to_tf32_even,
)
from gpuops.launch import Call, kernel_signature, kernel_span, source_text
from tests.support.cases import layer_arrays
from tests.support.traces import assert_the_map_names_each_writer

TF32_CEILING, TF32_FLOOR = 1e-3, 2.0**-11 / 10
GEOMETRIES = [  # (N, C, H, W, M, 1, 1, 0, 1, groups, "zeros")
    (2, 32, 6, 6, 32, 1, 1, 0, 1, 1, "zeros"),  # one stage, half a block of filters, 72 pixels
    (3, 64, 10, 10, 70, 1, 1, 0, 1, 1, "zeros"),  # 70 filters: a second, mostly empty block
    (1, 256, 7, 12, 300, 1, 1, 0, 1, 1, "zeros"),  # 8 stages, 84 pixels
    (2, 128, 9, 12, 128, 1, 1, 0, 1, 4, "zeros"),  # 4 groups of 32 channels, 32 filters each
    (5, 96, 5, 4, 200, 1, 1, 0, 1, 1, "zeros"),  # 3 stages (odd), 20-pixel samples: blocks span 7
    (33, 64, 4, 4, 128, 1, 1, 0, 1, 2, "zeros"),  # 528 pixels: 4 blocks and a partial one
]


def _needs_hopper() -> None:
    if not sm90a.available(WG_SOURCE):
        pytest.skip("v16 runs on compute capability 9.0 (H100, H200) only")


def _problem(N, C, H, W, M, **kw):
    return check_conv2d((N, C, H, W), (M, C // kw.get("groups", 1), 1, 1), None, **kw)


def _check(got, x, w, b, groups, torch):
    """got against float64 PyTorch within TF32's bounds (module docstring)."""
    assert not np.isnan(got).any(), "outputs never written"

    def expected(xv, wv):
        xt, wt, bt = (torch.from_numpy(a.astype(np.float64)) for a in (xv, wv, b))
        return torch.nn.functional.conv2d(xt, wt, bt, groups=groups).numpy()

    exact = expected(x, w)
    error = np.abs(got - exact).max() / np.abs(exact).max()
    assert TF32_FLOOR < error <= TF32_CEILING, error
    terms = x.shape[1] // groups
    rounded = expected(to_tf32_even(x), to_tf32(w))  # x to nearest even, w ties away (the kernel's)
    np.testing.assert_allclose(got, rounded, rtol=2e-4, atol=2e-4 * np.sqrt(terms))


# ---- plans (any machine) ----------------------------------------------------------------------------
def test_v16_constants_equal_the_kernel_defines():
    text = source_text(WG_SOURCE)
    for name, value in (
        ("V16_STAGES", V16_STAGES),
        ("V16_FILTERS", V16_FILTERS),
        ("V16_PIXELS", V16_PIXELS),
        ("V16_KC", V16_KC),
    ):
        assert re.search(rf"#define {name} {value}\b", text), name
    assert re.search(r"#define V16_PITCH \(V16_PIXELS \+ 8\)", text) and V16_PITCH == V16_PIXELS + 8


def test_the_launch_matches_the_kernel_under_its_header():
    """One kernel in conv2d_hopper.cu under v16's header, taking x and w themselves (no copies)
    and the scalars the host passes; two warpgroups; its stages fit an SM twice."""
    p = _problem(3, 64, 10, 10, 70)
    launch = pointwise_launch(p)
    assert launch.source == WG_SOURCE and launch.kernel == V16_KERNEL
    pointers, scalars = kernel_signature(launch.source, launch.kernel)
    assert list(launch.arrays) == pointers == list(ARRAYS)
    assert [n for n, _ in launch.args] == scalars
    assert dict(launch.args) == dict(N=3, C=64, M=70, L=100, groups=1, m_blocks=2)
    assert re.search(r"// v16 ", kernel_span(launch.source, launch.kernel).text.split("extern")[0])
    shared = V16_STAGES * (V16_FILTERS * WG_ROW_BYTES + V16_KC * V16_PITCH * 4) + 1024
    assert launch.shared_bytes == shared and 2 * (shared + 1024) <= 228 * 1024
    assert launch.block == (2 * V16_PIXELS, 1, 1)
    assert launch.grid == (-(-300 // V16_PIXELS), 2, 1)
    assert "from registers" in launch.describe() and "NCHW" in launch.describe()


@pytest.mark.parametrize(
    "layer, fits",
    [
        (dict(N=2, C=64, H=8, W=8, M=16), True),
        (dict(N=2, C=64, H=8, W=8, M=16, groups=2), True),  # 32 channels a group
        (dict(N=2, C=64, H=8, W=8, M=16, groups=4), False),  # 16 channels a group
        (dict(N=2, C=48, H=8, W=8, M=16), False),  # not whole 32-channel stages
        (dict(N=2, C=64, H=5, W=5, M=16), False),  # 25-pixel planes: a 4-pixel copy would straddle
        (dict(N=2, C=64, H=8, W=8, M=16, padding=1), False),
        (dict(N=2, C=64, H=8, W=8, M=16, stride=2), False),
    ],
)
def test_v16_fits_1x1_layers_of_whole_stages_and_4_pixel_runs(layer, fits):
    p = _problem(**layer)
    assert pointwise_fits(p) == fits
    if not fits:
        with pytest.raises(ValueError, match="v16 runs 1x1 layers"):
            pointwise_launch(p)


def test_pipelined_tf32_runs_v16_on_hopper_where_it_fits(monkeypatch):
    """On a device with sm_90a: v16 for a fitting 1x1 layer; v8 for a 1x1 layer it cannot run
    (25-pixel planes); v12 / v14 for 3x3; an explicit choice (the benchmark's v8 / v12 rows)
    keeps its version. Without sm_90a: v8, as before."""
    p, odd, wide = _problem(2, 64, 8, 8, 96), _problem(2, 64, 5, 5, 96), _problem(2, 64, 8, 8, 96)
    k3 = check_conv2d((2, 64, 8, 8), (96, 64, 3, 3), None, padding=1)
    monkeypatch.setattr(sm90a, "available", lambda filename=WG_SOURCE: True)
    assert pipelined_launch(p).kernel == V16_KERNEL
    assert pipelined_launch(odd).kernel.startswith("conv2d_v8_tf32")
    assert pipelined_launch(k3).kernel.startswith("conv2d_v12_tf32")
    assert pipelined_launch(wide, wide_copies=True).kernel.startswith("conv2d_v8_tf32")
    assert pipelined_launch(p, channels_last=True, wgmma=True).kernel.startswith("conv2d_v12_tf32")
    assert pipelined_launch(p, "pipelined_bf16").kernel.startswith("conv2d_v9_bf16")  # TF32 only
    monkeypatch.setattr(sm90a, "available", lambda filename=WG_SOURCE: False)
    assert pipelined_launch(p).kernel.startswith("conv2d_v8_tf32")


def test_the_map_gives_each_lane_two_pixels_and_its_filter_pairs():
    """PointwiseMap on one block: every thread writes 2 pixels (8 apart, within its warp's 16) x
    32 filters (pairs 2t, 2t + 1 of each 8-filter column block)."""
    launch = pointwise_launch(_problem(1, 32, 16, V16_PIXELS // 16, V16_FILTERS))
    assert isinstance(launch.threads, PointwiseMap)
    written: dict[int, list[tuple[int, int]]] = {}
    for m in range(V16_FILTERS):
        for q in range(V16_PIXELS):
            ref = launch.thread_of(0, m, *divmod(q, V16_PIXELS // 16))
            assert ref.block == (0, 0, 0)
            written.setdefault(ref.thread[0], []).append((q, m))
    assert sorted(written) == list(range(2 * V16_PIXELS))
    for thread, outputs in written.items():
        warp, lane = divmod(thread, 32)
        assert sorted({q for q, _ in outputs}) == [16 * warp + lane // 4, 16 * warp + lane // 4 + 8]
        filters = sorted({m for _, m in outputs})
        assert filters == sorted(8 * j + 2 * (lane % 4) + e for j in range(V16_FILTERS // 8) for e in (0, 1))


# ---- the kernel (compute capability 9.0) -------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("shape", GEOMETRIES, ids=str)
def test_v16_against_float64_torch_with_poisoned_output(shape, rng, torch):
    """y starts as NaN (an output no thread writes fails); the values are float64 PyTorch's
    within TF32's bounds, on the unrounded and on the rounded operands."""
    import cupy as cp

    _needs_hopper()
    x, w, b, p = layer_arrays(shape, rng)
    launch = pointwise_launch(p)
    y = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    launch_module.packed(launch)((cp.asarray(x), cp.asarray(w), cp.asarray(b), y))
    _check(y.get(), x, w, b, shape[9], torch)


@pytest.mark.gpu
def test_v16_is_deterministic_and_leaves_its_inputs_alone(rng):
    """The same call twice gives the same bits; x and w are read, never written (the kernel
    rounds its copies of w in shared memory, not w)."""
    import cupy as cp

    _needs_hopper()
    x, w, b, p = layer_arrays((4, 96, 6, 10, 80, 1, 1, 0, 1, 1, "zeros"), rng)
    xd, wd, bd = cp.asarray(x), cp.asarray(w), cp.asarray(b)
    call = Call(p.out_shape, pointwise_launch(p))
    first, second = call(xd, wd, bd).get(), call(xd, wd, bd).get()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(xd.get(), x)
    np.testing.assert_array_equal(wd.get(), w)


@pytest.mark.gpu
def test_v16_thread_map_names_each_writer(rng):
    """Trace build: PointwiseMap, the map the app draws, names the thread that wrote each output
    (70 filters: a second block of columns, mostly empty; 2 x 100 pixels: a partial block)."""
    import cupy as cp

    _needs_hopper()
    x, w, _, p = layer_arrays((2, 64, 10, 10, 70, 1, 1, 0, 1, 1, "zeros"), rng)
    launch = pointwise_launch(p)
    out = cp.full(p.out_shape, cp.nan, dtype=cp.float32)
    assert_the_map_names_each_writer(launch, cp.asarray(x), cp.asarray(w), None, out)
    assert not np.isnan(out.get()).any()


@pytest.mark.gpu
def test_conv2d_runs_v16_as_one_launch(rng, torch):
    """conv2d(algorithm="pipelined_tf32") on a fitting 1x1 layer runs the plan's one launch (no
    copy kernels); the second call takes the ready path with new values; (C, H, W) input too."""
    import cupy as cp

    _needs_hopper()
    w = rng.standard_normal((96, 64, 1, 1)).astype(np.float32)
    b = rng.standard_normal(96).astype(np.float32)
    plan = gpuops.plan_conv2d((3, 64, 12, 12), w.shape, b.shape, algorithm="pipelined_tf32")
    assert plan.launch.kernel == V16_KERNEL
    for _ in range(2):
        x = rng.standard_normal((3, 64, 12, 12)).astype(np.float32)
        with launch_module.recorded() as ran:
            got = gpuops.conv2d(cp.asarray(x), cp.asarray(w), cp.asarray(b), algorithm="pipelined_tf32")
        assert ran == [plan.launch]
        _check(got.get(), x, w, b, 1, torch)
    single = gpuops.conv2d(cp.asarray(x[0]), cp.asarray(w), cp.asarray(b), algorithm="pipelined_tf32")
    _check(single.get()[None], x[:1], w, b, 1, torch)
