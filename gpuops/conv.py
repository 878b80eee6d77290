"""conv2d with PyTorch F.conv2d semantics, three ways: direct, tiled, im2col + GEMM."""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import autotune, cuda_kernels
from gpuops.arrays import as_float32
from gpuops.backend import array_module
from gpuops.geometry import (
    WindowGeometry,
    as_pair,
    check_ndim,
    check_reflect_pads,
    window_geometry,
)
from gpuops.indexmath import tap_slice
from gpuops.launch import (
    ConvLaunch,
    conv_direct_launch,
    conv_implicit_gemm_launch,
    conv_tiled_launch,
)
from gpuops.reflect import reflect_pad
from gpuops.unfold import unfold_cupy_into, unfold_numpy, zero_pad_numpy

ALGORITHMS = ("direct", "tiled", "im2col", "implicit_gemm")
AUTO = "auto"  # measure the three once per shape on the GPU and keep the fastest (cuDNN-style)
NULL = np.uint64(0)
PADDING_MODES = ("zeros", "reflect")
SOURCE = "conv2d.cu"
IM2COL_MIN_BUDGET = 64 * 2**20  # bytes; X_unroll may use this much even when memory is tight


@dataclass(frozen=True)
class ConvPlan:
    """Everything checked about one conv2d call, before any memory is touched."""

    N: int
    C: int
    M: int
    groups: int
    geometry: WindowGeometry
    padding_mode: str
    algorithm: str

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return self.N, self.M, self.geometry.H_out, self.geometry.W_out

    @property
    def flops(self) -> int:
        """Multiply-adds x 2 actually needed (padding taps included, as the kernels do them)."""
        g = self.geometry
        return 2 * self.N * self.M * g.L * (self.C // self.groups) * g.KH * g.KW

    @property
    def x_unroll_bytes_per_sample(self) -> int:
        g = self.geometry
        return 4 * self.C * g.KH * g.KW * g.L

    def launch(self) -> ConvLaunch | None:
        """Grid/block of the conv kernel for this call (None for im2col, which runs unfold+GEMM,
        and for auto, which is resolved per call)."""
        if self.algorithm == "direct":
            return conv_direct_launch(self.geometry, self.N, self.M)
        if self.algorithm == "tiled":
            return conv_tiled_launch(self.geometry, self.N, self.C, self.M, self.groups)
        if self.algorithm == "implicit_gemm":
            return conv_implicit_gemm_launch(self.geometry, self.N, self.M, self.groups)
        return None


def plan_conv2d(x_shape: tuple[int, ...], w_shape: tuple[int, ...], bias_shape: tuple[int, ...] | None = None,
                stride: Any = 1, padding: Any = 0, dilation: Any = 1, groups: Any = 1,
                padding_mode: str = "zeros", algorithm: str = "direct") -> ConvPlan:  # fmt: skip
    """Validate conv2d's arguments by shape alone (the app calls this before any compute).

    Cached: a classroom reruns the same settings over and over, and on the GPU these checks
    would cost more than a small convolution.
    """
    args = (tuple(x_shape), tuple(w_shape), None if bias_shape is None else tuple(bias_shape), stride, padding,
            dilation, groups, padding_mode, algorithm)  # fmt: skip
    try:
        return _plan_cached(*args)
    except TypeError:  # unhashable (lists): check without the cache
        return _plan_conv2d(*args)


def _plan_conv2d(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    bias_shape: tuple[int, ...] | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: Any = 1,
    padding_mode: str = "zeros",
    algorithm: str = "direct",
) -> ConvPlan:
    check_ndim(x_shape, (3, 4), "input", "(C, H, W) or (N, C, H, W)")
    check_ndim(w_shape, (4,), "weight", "(out_channels, in_channels/groups, kh, kw)")
    N, C, H, W = x_shape if len(x_shape) == 4 else (1, *x_shape)
    M, Cg, KH, KW = w_shape
    if algorithm not in (*ALGORITHMS, AUTO):
        raise ValueError(f"algorithm {algorithm!r} must be one of {(*ALGORITHMS, AUTO)}")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"padding_mode {padding_mode!r} must be one of {PADDING_MODES}")
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"groups {groups!r} must be an int of at least 1")
    if C % groups:
        raise ValueError(f"groups {groups} must divide the input channels {C}")
    if M % groups:
        raise ValueError(f"groups {groups} must divide the output channels (filters) {M}")
    if Cg != C // groups:
        raise ValueError(
            f"weight has {Cg} input channels per filter, but input channels {C} / groups {groups} "
            f"= {C // groups}"
        )
    if KH < 1 or KW < 1:
        raise ValueError(f"weight kernel size {KH}x{KW} must be at least 1x1")
    if bias_shape is not None and tuple(bias_shape) != (M,):
        raise ValueError(f"bias shape {tuple(bias_shape)} must be ({M},), one value per filter")
    ph, pw = as_pair(padding, "padding")
    if padding_mode == "reflect":
        check_reflect_pads(H, W, (pw, pw, ph, ph))
    g = window_geometry(H, W, (KH, KW), stride, padding, dilation)
    return ConvPlan(N, C, M, int(groups), g, padding_mode, algorithm)


_plan_cached = functools.lru_cache(maxsize=1024)(_plan_conv2d)


@functools.lru_cache(maxsize=1024)
def _launch_and_args(plan: ConvPlan) -> tuple[ConvLaunch, tuple]:
    """The launch geometry and the packed scalar arguments of a conv kernel (cached per plan)."""
    g = plan.geometry
    launch = plan.launch()
    args = [plan.N, plan.C, g.H, g.W, plan.M, g.KH, g.KW, g.H_out, g.W_out, g.stride_h, g.stride_w,
            g.pad_top, g.pad_left, g.dil_h, g.dil_w, plan.groups,
            int(plan.padding_mode == "reflect"), launch.tiles_w]  # fmt: skip
    if launch.kernel == "conv2d_tiled":
        m_blocks = launch.grid[1] // plan.groups
        args += [m_blocks, launch.channels_per_stage, *launch.in_tile, launch.pitch]
    elif launch.kernel == "conv2d_implicit_gemm":
        args += [launch.grid[1] // plan.groups]  # m_blocks
    return launch, cuda_kernels.kernel_args(*args)


def _conv_numpy(x: np.ndarray, w: np.ndarray, plan: ConvPlan) -> np.ndarray:
    """CPU twin: pad once, then for each tap (ki, kj) multiply a strided slice by W[:, :, ki, kj].

    direct/tiled/implicit_gemm accumulate tap by tap (K*K matrix products over channels, no
    X_unroll: the implicit GEMM's point); im2col builds the whole X_unroll and does one GEMM,
    as the GPU path does.
    """
    g, G = plan.geometry, plan.groups
    N, C, M = plan.N, plan.C, plan.M
    Cg, Mg = C // G, M // G
    if plan.algorithm == "im2col":
        cols = unfold_numpy(_padded_input(x, plan), _unpadded(g))  # (N, C*KK, L)
        out = w.reshape(G, Mg, Cg * g.KH * g.KW) @ cols.reshape(N, G, Cg * g.KH * g.KW, g.L)
        return out.reshape(plan.out_shape)
    padded = _padded_input(x, plan).reshape(N, G, Cg, *g.padded_hw)
    wg = w.reshape(G, Mg, Cg, g.KH, g.KW)
    out = np.zeros((N, G, Mg, g.L), dtype=np.float32)
    for ki in range(g.KH):
        rows = tap_slice(ki, g.dil_h, g.stride_h, g.H_out)
        for kj in range(g.KW):
            patch = padded[..., rows, tap_slice(kj, g.dil_w, g.stride_w, g.W_out)]
            out += wg[:, :, :, ki, kj] @ patch.reshape(N, G, Cg, g.L)
    return out.reshape(plan.out_shape)


def _unpadded(g: WindowGeometry) -> WindowGeometry:
    """The same windows on an input that has already been padded."""
    Hp, Wp = g.padded_hw
    return WindowGeometry(Hp, Wp, g.KH, g.KW, g.stride_h, g.stride_w, 0, 0, 0, 0, g.dil_h, g.dil_w)


def _padded_input(x: Any, plan: ConvPlan) -> Any:
    g = plan.geometry
    if plan.padding_mode == "reflect":
        return reflect_pad(x, (g.pad_left, g.pad_right, g.pad_top, g.pad_bottom))
    return zero_pad_numpy(x, g)


def im2col_batch_chunk(plan: ConvPlan, budget_bytes: int | None = None) -> int:
    """Samples per GEMM so that X_unroll stays within the budget (default: half of free memory).

    Raises ValueError when one sample alone does not fit, saying how many bytes it needs.
    """
    per_sample = max(1, plan.x_unroll_bytes_per_sample)
    if budget_bytes is None and plan.N * per_sample <= IM2COL_MIN_BUDGET:
        return plan.N  # fits the budget it always has: no need to ask the driver (a few us)
    if budget_bytes is None:
        import cupy

        free, _total = cupy.cuda.runtime.memGetInfo()
        pool = cupy.get_default_memory_pool()
        free += pool.free_bytes()
        budget_bytes = max(IM2COL_MIN_BUDGET, free // 2)
    if per_sample > budget_bytes:
        raise ValueError(
            f"im2col needs {per_sample:,} bytes for X_unroll of one sample, more than the "
            f"{budget_bytes:,} bytes of GPU memory it may use; use algorithm='direct' or 'tiled'"
        )
    return max(1, min(plan.N, budget_bytes // per_sample))


_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)


def gemm_batched(w_mat: Any, cols: Any, out: Any) -> None:
    """out[n] = w_mat @ cols[n] for every n: ONE cuBLAS strided-batched SGEMM, the filter matrix
    shared by every sample (batch stride 0), nothing copied.

    cuBLAS is column-major: a row-major (K, L) block is a column-major (L, K) matrix, so we ask
    for out[n]^T (L x M) = cols[n]^T (L x K) @ w_mat^T (K x M), which is out[n] in row-major.
    cols and out may be views (a group's rows of a sample); rows must be contiguous.
    """
    import cupy
    from cupy.cuda import cublas, device

    nb, K, L = cols.shape
    M = w_mat.shape[0]
    w_mat = cupy.ascontiguousarray(w_mat)
    sample_cols, row_cols = cols.strides[0] // 4, cols.strides[1] // 4
    sample_out, row_out = out.strides[0] // 4, out.strides[1] // 4
    if cols.strides[2] != 4 or out.strides[2] != 4:
        raise ValueError("gemm_batched needs rows with unit stride")
    cublas.sgemmStridedBatched(
        device.get_cublas_handle(), cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_N, L, M, K,
        _ONE.ctypes.data, cols.data.ptr, row_cols, sample_cols, w_mat.data.ptr, K, 0,
        _ZERO.ctypes.data, out.data.ptr, row_out, sample_out, nb,
    )  # fmt: skip


def _conv_im2col_cupy(x: Any, w: Any, plan: ConvPlan, y: Any, budget_bytes: int | None) -> None:
    """Unroll a chunk of samples into one reused X_unroll buffer, then one batched GEMM."""
    import cupy

    g, G = plan.geometry, plan.groups
    if plan.padding_mode == "reflect":  # pad first, then unroll without padding
        x, g = reflect_pad(x, (g.pad_left, g.pad_right, g.pad_top, g.pad_bottom)), _unpadded(g)
    Cg, Mg, kk = plan.C // G, plan.M // G, g.KH * g.KW
    chunk = im2col_batch_chunk(plan, budget_bytes)
    buffer = cupy.empty((chunk, plan.C * kk, g.L), dtype=np.float32)
    y_rows = y.reshape(plan.N, plan.M, g.L)  # a view: y is contiguous
    for n0 in range(0, plan.N, chunk):
        nb = min(chunk, plan.N - n0)
        cols = unfold_cupy_into(x[n0 : n0 + nb], g, buffer[:nb])
        for group in range(G):  # one strided-batched GEMM per group, over the samples
            gemm_batched(w[group * Mg : (group + 1) * Mg].reshape(Mg, Cg * kk),
                         cols[:, group * Cg * kk : (group + 1) * Cg * kk],
                         y_rows[n0 : n0 + nb, group * Mg : (group + 1) * Mg])  # fmt: skip


def _conv_kernel_cupy(x: Any, w: Any, bias: Any, plan: ConvPlan, y: Any) -> None:
    launch, args = _launch_and_args(plan)
    kernel = cuda_kernels.function(SOURCE, launch.kernel)
    bias_ptr = bias if bias is not None else NULL  # the kernel skips a NULL bias
    kernel(launch.grid, launch.block, (x, w, bias_ptr, y, *args), shared_mem=launch.shared_bytes)


def resolve_algorithm(x: Any, w: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                      groups: int = 1, padding_mode: str = "zeros") -> str:  # fmt: skip
    """The algorithm that "auto" runs for these arguments.

    On the GPU: the first call for a shape times direct, tiled and im2col (CUDA events, median
    of 5) and remembers the fastest (gpuops.autotune); later calls reuse the choice. On the
    CPU: direct (the tap-by-tap NumPy loop needs no K*K-times larger X_unroll).
    """
    if array_module(x) is np:
        return "direct"
    key = ("conv2d", tuple(x.shape), tuple(w.shape), bias is None, repr(stride), repr(padding), repr(dilation),
           groups, padding_mode)  # fmt: skip
    candidates = {
        a: functools.partial(conv2d, x, w, bias, stride, padding, dilation, groups, padding_mode, a)
        for a in ALGORITHMS
    }
    return autotune.fastest(key, candidates) or "direct"  # if all refuse, direct raises the message


def gemm(filter_matrix: Any, x_unroll: Any) -> Any:
    """The GEMM step of im2col on its own: (M, K) @ (K, L) or (N, K, L) -> (M, L) or (N, M, L).

    On the GPU this is the same strided-batched cuBLAS call im2col makes, so the page's
    "unroll vs GEMM" split times what conv2d(algorithm="im2col") really runs.
    """
    xp = array_module(x_unroll)
    if xp is np:
        return np.matmul(filter_matrix, x_unroll)
    batched = x_unroll.ndim == 3
    cols = x_unroll if batched else x_unroll[None]
    out = xp.empty((cols.shape[0], filter_matrix.shape[0], cols.shape[2]), dtype=np.float32)
    gemm_batched(filter_matrix, xp.ascontiguousarray(cols), out)
    return out if batched else out[0]


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    algorithm: str = "direct",
    *,
    im2col_budget_bytes: int | None = None,
) -> Any:
    """F.conv2d (cross-correlation) on (N,C,H,W) or (C,H,W) input; weight (M, C/groups, kh, kw).

    padding_mode "reflect" behaves as nn.Conv2d(padding_mode="reflect"). im2col_budget_bytes
    caps X_unroll on the GPU (default: half of the free device memory).
    """
    xp, x = as_float32(x, "input")
    _, w = as_float32(weight, "weight", xp)
    b = None if bias is None else as_float32(bias, "bias", xp)[1]
    if algorithm == AUTO:
        algorithm = resolve_algorithm(x, w, b, stride, padding, dilation, groups, padding_mode)
    plan = plan_conv2d(x.shape, w.shape, None if b is None else b.shape, stride, padding,
                       dilation, groups, padding_mode, algorithm)  # fmt: skip
    batched = x.ndim == 4
    x = x if batched else x[None]
    if min(plan.out_shape) == 0 or x.size == 0:
        y = xp.zeros(plan.out_shape, dtype=np.float32)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
    elif xp is np:
        y = _conv_numpy(x, w, plan)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
    else:
        y = xp.empty(plan.out_shape, dtype=np.float32)
        if algorithm == "im2col":
            _conv_im2col_cupy(x, w, plan, y, im2col_budget_bytes)
            if b is not None:
                y += b.reshape(1, -1, 1, 1)
        else:
            _conv_kernel_cupy(x, w, b, plan, y)
    return y if batched else y[0]
