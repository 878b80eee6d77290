"""Max and average pooling with PyTorch's semantics (F.max_pool2d, F.avg_pool2d) and their
backward passes: check -> plan -> run. Kernels: kernels/pool.cu (max_pool2d_v1 forward with
its winners' indices; max_pool2d_backward_v1_scatter and _v2_gather; avg_pool2d_v1 and
avg_pool2d_backward_v1_gather). The NumPy twins below loop over the window's taps, like the
kernels' inner loops.

The pooling formulas live here once (Python) and in pool.cu once (CUDA): the ceil_mode output
size, the first tap inside the input, the average's divisor.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops.cache import memoised
from gpuops.checks import WindowGeometry, as_float32, as_pair, check_ndim, window_args
from gpuops.index_math import tap_slice
from gpuops.launch import Call, Launch, ints, keep_ready, packed, ready_call, ready_key, row_launch

SOURCE = "pool.cu"
MAX_BACKWARD_ALGORITHMS = ("gather", "scatter")
MAX_BACKWARD_KERNELS = {
    "gather": "max_pool2d_backward_v2_gather",
    "scatter": "max_pool2d_backward_v1_scatter",
}
PLANE_LIMIT = 2**31 - 1  # the kernels index one plane (H x W) with 32-bit ints


# ---- the formulas --------------------------------------------------------------------------------
def pool_count(size: int, pad: int, k: int, stride: int, dilation: int, ceil_mode: bool) -> int:
    """Outputs along one axis (PyTorch's pooling_output_shape): floor, or ceil with ceil_mode,
    of (size + 2 pad - dilation (k - 1) - 1) / stride, plus 1; with ceil_mode the last window
    must still start inside the input or its left/top padding, else it is dropped."""
    span = size + 2 * pad - dilation * (k - 1) - 1
    count = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (count - 1) * stride >= size + pad:
        count -= 1
    return count


def first_inside(start: Any, dilation: int) -> Any:
    """The first tap of a window starting at `start` (may be negative) that lies at or after 0:
    start itself, or start moved on by whole dilations. Ints and arrays alike."""
    start = np.asarray(start)
    moved = start + (-(start // dilation)) * dilation  # start + ceil(-start / d) * d
    found = np.where(start >= 0, start, moved)
    return int(found) if found.ndim == 0 else found


def avg_divisors(size: int, pad: int, k: int, stride: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per output along one axis: (cells of the window inside input + padding, cells inside the
    input alone). PyTorch's rule: a window is cut at the end of the padding (ceil_mode may run
    past it), and count_include_pad=False counts the input's cells only."""
    start = np.arange(count) * stride - pad
    end = np.minimum(start + k, size + pad)
    return end - start, np.minimum(end, size) - np.maximum(start, 0)


# ---- the check stage -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolGeometry:
    """Where pooling windows land: the window arguments (no padding rule: pooling pads with -inf
    for max and with zeros for the average) and the output size, ceil_mode applied."""

    window: WindowGeometry
    ceil_mode: bool
    H_out: int
    W_out: int

    @property
    def in_hw(self) -> tuple[int, int]:
        return self.window.H, self.window.W

    def launch_args(self) -> tuple[tuple[str, Any], ...]:
        return window_args(self.window, self.H_out, self.W_out)


@dataclass(frozen=True)
class AvgRule:
    """How an average divides its sum: by divisor_override when given, else by the window's
    cells with (count_include_pad) or without the padding."""

    count_include_pad: bool
    divisor_override: int | None

    def divisors(self, g: PoolGeometry) -> np.ndarray:
        """(H_out, W_out) divisors, float32 (what each output's sum is divided by)."""
        if self.divisor_override is not None:
            return np.full((g.H_out, g.W_out), self.divisor_override, np.float32)
        w = g.window
        full_h, real_h = avg_divisors(w.H, w.pad_top, w.KH, w.stride_h, g.H_out)
        full_w, real_w = avg_divisors(w.W, w.pad_left, w.KW, w.stride_w, g.W_out)
        rows, cols = (full_h, full_w) if self.count_include_pad else (real_h, real_w)
        return np.outer(rows, cols).astype(np.float32)


def _check_bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _input_dims(shape: tuple[int, ...], name: str = "input") -> tuple[int, int, int, int]:
    """(N, C, H, W) of a 3-D (C, H, W) or 4-D (N, C, H, W) input; only N may be 0 (as PyTorch)."""
    check_ndim(shape, (3, 4), name, "(C, H, W) or (N, C, H, W)")
    N, C, H, W = shape if len(shape) == 4 else (1, *shape)
    for dim, size in (("channels", C), ("height", H), ("width", W)):
        if size < 1:
            raise ValueError(f"{name} {dim} {size} must be at least 1 (shape {tuple(shape)})")
    if H * W > PLANE_LIMIT:
        raise ValueError(f"{name} plane {H} x {W} has more than {PLANE_LIMIT:,} cells")
    return N, C, H, W


@memoised("pool_geometry", 1024)
def pool_geometry(
    H: int,
    W: int,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: Any = False,
) -> PoolGeometry:
    """Check pooling window arguments against an H x W input (PyTorch's pool2d_shape_check),
    return the geometry. stride None means kernel_size (PyTorch's default)."""
    kh, kw = as_pair(kernel_size, "kernel_size")
    sh, sw = as_pair(kernel_size if stride is None else stride, "stride")
    ph, pw = as_pair(padding, "padding")
    dh, dw = as_pair(dilation, "dilation")
    ceil = _check_bool(ceil_mode, "ceil_mode")
    for name, pair, limit in (
        ("kernel_size", (kh, kw), 1),
        ("stride", (sh, sw), 1),
        ("dilation", (dh, dw), 1),
        ("padding", (ph, pw), 0),
    ):
        for axis, v in zip(("height", "width"), pair, strict=True):
            if v < limit:
                raise ValueError(f"{name} {v} ({axis}) must be at least {limit}")
    for axis, p, k in (("height", ph, kh), ("width", pw, kw)):
        if p > k // 2:
            raise ValueError(
                f"padding {p} ({axis}) must be at most half the kernel size {k}, i.e. {k // 2} "
                "(PyTorch's rule: a window may never lie mostly in the padding)"
            )
    counts = []
    for axis, size, p, k, s, d in (("height", H, ph, kh, sh, dh), ("width", W, pw, kw, sw, dw)):
        count = pool_count(size, p, k, s, d, ceil)
        if count < 1:
            extent = d * (k - 1) + 1
            raise ValueError(
                f"kernel {axis} {k} with dilation {d} spans {extent} cells, more than the padded "
                f"input {axis} {size + 2 * p} (input {size} + 2 x padding {p}): no output fits"
            )
        starts = np.arange(count) * s - p
        first = first_inside(starts, d)
        empty = np.flatnonzero(first >= size)
        if empty.size:  # only dilation can step over the whole input; PyTorch would return -inf
            o = int(empty[0])
            raise ValueError(
                f"output {o} along the {axis} reads padding only: its window starts at {int(starts[o])} "
                f"with dilation {d}, so its taps skip over the input's {size} cells; reduce the dilation "
                "or the padding (PyTorch would return -inf and an index outside the input)"
            )
        counts.append(count)
    window = WindowGeometry(H, W, kh, kw, sh, sw, ph, ph, pw, pw, dh, dw)
    return PoolGeometry(window, ceil, counts[0], counts[1])


def check_avg_rule(count_include_pad: Any, divisor_override: Any) -> AvgRule:
    include = _check_bool(count_include_pad, "count_include_pad")
    if divisor_override is not None:
        if not isinstance(divisor_override, numbers.Integral) or isinstance(divisor_override, bool):
            raise ValueError(f"divisor_override must be None or an int, got {divisor_override!r}")
        if divisor_override == 0:
            raise ValueError("divisor_override 0 must not be zero (it divides every window's sum)")
        divisor_override = int(divisor_override)
    return AvgRule(include, divisor_override)


def check_grad_output(shape: tuple[int, ...], in_shape: tuple[int, ...], g: PoolGeometry) -> None:
    expected = (*in_shape[:-2], g.H_out, g.W_out)
    if tuple(shape) != expected:
        raise ValueError(f"grad_output shape {tuple(shape)} must be the pooled output's shape {expected}")


# ---- the plan stage: one thread per output (or input) cell, one thread row per row ---------------------
def max_pool2d_launch(planes: int, g: PoolGeometry) -> Launch:
    """v1: one thread per output cell, a thread row per output row; writes the max and (when
    asked) the flat input index of the first maximum in window scan order."""
    return row_launch(
        "max_pool2d_v1",
        SOURCE,
        ("x", "y", "indices"),
        (planes, g.H_out, g.W_out),
        g.W_out,
        g.launch_args(),
        index="(plane, oh, ow) of y",
    )


def max_pool2d_backward_launch(planes: int, g: PoolGeometry, algorithm: str) -> Launch:
    """v1 scatter: one thread per OUTPUT cell adds its gradient onto its winner (atomicAdd);
    v2 gather: one thread per INPUT cell sums the outputs whose winner it is (no atomics)."""
    H, W = g.in_hw
    shape, index = (
        ((planes, H, W), "(plane, ih, iw) of dx")
        if algorithm == "gather"
        else ((planes, g.H_out, g.W_out), "(plane, oh, ow) of dy")
    )
    return row_launch(
        MAX_BACKWARD_KERNELS[algorithm],
        SOURCE,
        ("dy", "indices", "dx"),
        shape,
        shape[-1],
        g.launch_args(),
        index=index,
    )


def _avg_args(g: PoolGeometry, rule: AvgRule) -> tuple[tuple[str, Any], ...]:
    w = g.window
    return ints(
        H=w.H,
        W=w.W,
        KH=w.KH,
        KW=w.KW,
        H_out=g.H_out,
        W_out=g.W_out,
        stride_h=w.stride_h,
        stride_w=w.stride_w,
        pad_h=w.pad_top,
        pad_w=w.pad_left,
        count_include_pad=int(rule.count_include_pad),
        divisor_override=rule.divisor_override or 0,
    )


def avg_pool2d_launch(planes: int, g: PoolGeometry, rule: AvgRule) -> Launch:
    """v1: one thread per output cell sums its window's input cells, divides by the rule's divisor."""
    return row_launch(
        "avg_pool2d_v1",
        SOURCE,
        ("x", "y"),
        (planes, g.H_out, g.W_out),
        g.W_out,
        _avg_args(g, rule),
        index="(plane, oh, ow) of y",
    )


def avg_pool2d_backward_launch(planes: int, g: PoolGeometry, rule: AvgRule) -> Launch:
    """v1 gather: one thread per input cell sums dy / divisor over the windows that cover it."""
    H, W = g.in_hw
    return row_launch(
        "avg_pool2d_backward_v1_gather",
        SOURCE,
        ("dy", "dx"),
        (planes, H, W),
        W,
        _avg_args(g, rule),
        index="(plane, ih, iw) of dx",
    )


# ---- the NumPy twins -------------------------------------------------------------------------------------
def _extended(a: np.ndarray, g: PoolGeometry, fill: float) -> np.ndarray:
    """a (planes, H, W) padded with `fill`: the padding before, and after it as far as the last
    window reaches (ceil_mode windows may run past the padding)."""
    w = g.window
    bottom = max(w.pad_top, (g.H_out - 1) * w.stride_h + w.dil_h * (w.KH - 1) + 1 - w.H - w.pad_top)
    right = max(w.pad_left, (g.W_out - 1) * w.stride_w + w.dil_w * (w.KW - 1) + 1 - w.W - w.pad_left)
    return np.pad(a, ((0, 0), (w.pad_top, bottom), (w.pad_left, right)), constant_values=fill)


def _taps(g: PoolGeometry):
    """(padded rows, padded cols, input row index, input col index) of every tap, in scan order."""
    w = g.window
    for ki in range(w.KH):
        rows = tap_slice(ki, w.dil_h, w.stride_h, g.H_out)
        for kj in range(w.KW):
            cols = tap_slice(kj, w.dil_w, w.stride_w, g.W_out)
            in_rows = np.arange(rows.start, rows.stop, rows.step) - w.pad_top
            in_cols = np.arange(cols.start, cols.stop, cols.step) - w.pad_left
            yield rows, cols, in_rows, in_cols


def first_index(g: PoolGeometry) -> np.ndarray:
    """(H_out, W_out): the flat input index of each window's first tap inside the input, the
    index a window reports when no value beats -inf (PyTorch's initial maxindex)."""
    w = g.window
    rows = first_inside(np.arange(g.H_out) * w.stride_h - w.pad_top, w.dil_h)
    cols = first_inside(np.arange(g.W_out) * w.stride_w - w.pad_left, w.dil_w)
    return rows[:, None] * w.W + cols[None, :]


def max_pool2d_numpy(x: np.ndarray, g: PoolGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Twin of max_pool2d_v1 on (planes, H, W): (max, int64 flat index), the taps in scan order,
    a tap winning when it is greater than the best so far or NaN (NaN propagates; on ties the
    first maximum keeps its place)."""
    planes = x.shape[0]
    padded = _extended(x, g, -np.inf)
    best = np.full((planes, g.H_out, g.W_out), -np.inf, np.float32)
    index = np.broadcast_to(first_index(g), best.shape).astype(np.int64)
    for rows, cols, in_rows, in_cols in _taps(g):
        v = padded[:, rows, cols]
        wins = (v > best) | np.isnan(v)
        best = np.where(wins, v, best)
        index = np.where(wins, (in_rows[:, None] * g.window.W + in_cols[None, :])[None], index)
    return best, index


def max_pool2d_backward_gather_numpy(dy: np.ndarray, index: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Twin of max_pool2d_backward_v2_gather: tap by tap, every input cell takes the gradient of
    the outputs it won."""
    H, W = g.in_hw
    dx = _extended(np.zeros((dy.shape[0], H, W), np.float32), g, 0.0)
    for rows, cols, in_rows, in_cols in _taps(g):
        mine = index == (in_rows[:, None] * W + in_cols[None, :])[None]
        dx[:, rows, cols] += np.where(mine, dy, np.float32(0))
    w = g.window
    return np.ascontiguousarray(dx[:, w.pad_top : w.pad_top + H, w.pad_left : w.pad_left + W])


def max_pool2d_backward_scatter_numpy(dy: np.ndarray, index: np.ndarray, g: PoolGeometry) -> np.ndarray:
    """Twin of max_pool2d_backward_v1_scatter: every output adds its gradient onto the input cell
    that won it."""
    H, W = g.in_hw
    planes = dy.shape[0]
    flat = (np.arange(planes)[:, None, None] * (H * W) + index).ravel()
    dx = np.zeros(planes * H * W, np.float32)
    np.add.at(dx, flat, dy.ravel())
    return dx.reshape(planes, H, W)


MAX_BACKWARD_TWINS = {
    "gather": max_pool2d_backward_gather_numpy,
    "scatter": max_pool2d_backward_scatter_numpy,
}


def avg_pool2d_numpy(x: np.ndarray, g: PoolGeometry, rule: AvgRule) -> np.ndarray:
    """Twin of avg_pool2d_v1: the window's sum (padding adds zeros), divided per output."""
    padded = _extended(x, g, 0.0)
    total = np.zeros((x.shape[0], g.H_out, g.W_out), np.float32)
    for rows, cols, _, _ in _taps(g):
        total += padded[:, rows, cols]
    return total / rule.divisors(g)


def avg_pool2d_backward_numpy(dy: np.ndarray, g: PoolGeometry, rule: AvgRule) -> np.ndarray:
    """Twin of avg_pool2d_backward_v1_gather: every input cell sums dy / divisor of the windows
    that cover it, tap by tap."""
    H, W = g.in_hw
    share = dy / rule.divisors(g)
    dx = _extended(np.zeros((dy.shape[0], H, W), np.float32), g, 0.0)
    for rows, cols, _, _ in _taps(g):
        dx[:, rows, cols] += share
    w = g.window
    return np.ascontiguousarray(dx[:, w.pad_top : w.pad_top + H, w.pad_left : w.pad_left + W])


# ---- plans: every check, the output's shape and the launches, remembered per arguments -----------------
@dataclass(frozen=True)
class PoolPlan:
    """A checked pooling call (forward or backward): its geometry, the average's rule (None for
    max), the shape it returns and the launch that writes it (None: an empty batch). A max
    backward without the forward's indices runs `forward` first to find the winners."""

    geometry: PoolGeometry
    rule: AvgRule | None
    out_shape: tuple[int, ...]
    launch: Launch | None
    forward: Launch | None = None

    @property
    def planes(self) -> int:
        return int(np.prod(self.out_shape[:-2]))

    @property
    def launches(self) -> tuple[Launch, ...]:
        return tuple(x for x in (self.forward, self.launch) if x is not None)


def _planes(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[:-2]))


@memoised("max_pool2d_plans", 1024)
def plan_max_pool2d(
    shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: Any = False,
) -> PoolPlan:
    """Checks (PyTorch's pool2d_shape_check and ours), then max_pool2d_v1 over every plane."""
    _input_dims(tuple(shape))
    g = pool_geometry(shape[-2], shape[-1], kernel_size, stride, padding, dilation, ceil_mode)
    planes = _planes(shape)
    launch = max_pool2d_launch(planes, g) if planes else None
    return PoolPlan(g, None, (*shape[:-2], g.H_out, g.W_out), launch)


@memoised("max_pool2d_backward_plans", 1024)
def plan_max_pool2d_backward(
    grad_shape: tuple[int, ...],
    shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: Any = False,
    algorithm: str = "gather",
) -> PoolPlan:
    """The forward's checks, grad_output's shape, then the forward (for the winners) and the
    routing kernel: v1 scatter or v2 gather."""
    if algorithm not in MAX_BACKWARD_ALGORITHMS:
        raise ValueError(f"algorithm {algorithm!r} must be one of {MAX_BACKWARD_ALGORITHMS}")
    forward = plan_max_pool2d(shape, kernel_size, stride, padding, dilation, ceil_mode)
    g = forward.geometry
    check_grad_output(tuple(grad_shape), tuple(shape), g)
    planes = _planes(shape)
    launch = max_pool2d_backward_launch(planes, g, algorithm) if planes else None
    return PoolPlan(g, None, tuple(shape), launch, forward.launch)


@memoised("avg_pool2d_plans", 1024)
def plan_avg_pool2d(
    shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: Any = False,
    count_include_pad: Any = True,
    divisor_override: Any = None,
) -> PoolPlan:
    """Checks, the divisor rule, then avg_pool2d_v1 over every plane."""
    _input_dims(tuple(shape))
    g = pool_geometry(shape[-2], shape[-1], kernel_size, stride, padding, 1, ceil_mode)
    rule = check_avg_rule(count_include_pad, divisor_override)
    planes = _planes(shape)
    launch = avg_pool2d_launch(planes, g, rule) if planes else None
    return PoolPlan(g, rule, (*shape[:-2], g.H_out, g.W_out), launch)


@memoised("avg_pool2d_backward_plans", 1024)
def plan_avg_pool2d_backward(
    grad_shape: tuple[int, ...],
    input_shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: Any = False,
    count_include_pad: Any = True,
    divisor_override: Any = None,
) -> PoolPlan:
    """The forward's checks for input_shape, grad_output's shape, then avg_pool2d_backward_v1_gather."""
    shape = tuple(int(v) for v in input_shape)
    forward = plan_avg_pool2d(
        shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    )
    g, rule = forward.geometry, forward.rule
    check_grad_output(tuple(grad_shape), shape, g)
    planes = _planes(shape)
    launch = avg_pool2d_backward_launch(planes, g, rule) if planes else None
    return PoolPlan(g, rule, shape, launch)


# ---- the run stage -----------------------------------------------------------------------------------------
def max_pool2d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    """F.max_pool2d on (C, H, W) or (N, C, H, W): the maximum of each window (padding is -inf,
    NaN propagates); with return_indices also the int64 flat index (ih * W + iw) of the first
    maximum in window scan order, in its plane, as PyTorch returns it."""
    key = ready_key("max_pool2d", (x,), (kernel_size, stride, padding, dilation, ceil_mode, return_indices))
    ready = ready_call(key)
    if ready is not None:  # this shape and these arguments passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    plan = plan_max_pool2d(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    want = _check_bool(return_indices, "return_indices")
    g, out_shape = plan.geometry, plan.out_shape
    if plan.launch is None:
        y, index = xp.zeros(out_shape, np.float32), xp.zeros(out_shape, np.int64)
        return (y, index) if want else y
    if xp is np:
        y, index = max_pool2d_numpy(x.reshape(plan.planes, *g.in_hw), g)
        return (y.reshape(out_shape), index.reshape(out_shape)) if want else y.reshape(out_shape)
    call = MaxPoolCall(out_shape, plan.launch, want)
    keep_ready(key, call)
    return call(x)


class MaxPoolCall:
    """max_pool2d's planned call on the GPU: allocate the output (and the indices when asked for
    them: otherwise the kernel gets a NULL pointer and stores none), launch, return them. Unlike
    launch.Call it has two outputs, the indices after y, as max_pool2d_v1 takes them."""

    def __init__(self, out_shape: tuple[int, ...], launch: Launch, want_indices: bool) -> None:
        import cupy

        self.out_shape, self.launch, self.want_indices = out_shape, launch, want_indices
        self._cupy, self._packed = cupy, packed(launch)

    def __call__(self, x: Any) -> Any:
        y = self._cupy.empty(self.out_shape, np.float32)
        index = self._cupy.empty(self.out_shape, np.int64) if self.want_indices else None
        self._packed((x, y, index))
        return (y, index) if self.want_indices else y


def max_pool2d_backward(
    grad_output: Any,
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    *,
    indices: Any = None,
    algorithm: str = "gather",
) -> Any:
    """The gradient of F.max_pool2d with respect to x: each output's gradient goes to the input
    cell that won its window (ties: the first maximum, as the forward reports). The winners are
    recomputed from x unless the forward's `indices` are passed.

    algorithm: "gather" (v2: one thread per input cell, deterministic, PyTorch's CUDA NCHW
    kernel) or "scatter" (v1: one atomicAdd per output, PyTorch's CPU order)."""
    args = (kernel_size, stride, padding, dilation, ceil_mode, algorithm)
    key = ready_key("max_pool2d_backward", (grad_output, x), args) if indices is None else None
    ready = ready_call(key)
    if ready is not None:  # the winners from the forward's ready call, then the routing kernel
        return ready(grad_output, x)
    xp, x = as_float32(x, "input")
    _, dy = as_float32(grad_output, "grad_output", xp)
    plan = plan_max_pool2d_backward(
        dy.shape, x.shape, kernel_size, stride, padding, dilation, ceil_mode, algorithm
    )
    g = plan.geometry
    if plan.launch is None:
        return xp.zeros(x.shape, np.float32)
    if indices is None:
        _, indices = max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
    elif tuple(indices.shape) != tuple(dy.shape):
        raise ValueError(
            f"indices shape {tuple(indices.shape)} must be grad_output's shape {tuple(dy.shape)}"
        )
    indices = xp.ascontiguousarray(xp.asarray(indices), dtype=np.int64)
    if xp is np:
        planes = plan.planes
        dx = MAX_BACKWARD_TWINS[algorithm](
            dy.reshape(planes, g.H_out, g.W_out), indices.reshape(planes, g.H_out, g.W_out), g
        )
        return dx.reshape(x.shape)
    route = Call(x.shape, plan.launch, zeroed=algorithm == "scatter")
    if key is not None:  # the winners were found here: the next such call finds them the same way
        winners = MaxPoolCall(tuple(dy.shape), plan.forward, want_indices=True)
        keep_ready(key, lambda dy, x: route(dy, winners(x)[1]))
    return route(dy, indices)


def avg_pool2d(
    x: Any,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """F.avg_pool2d on (C, H, W) or (N, C, H, W): each window's sum (padding adds zeros) divided
    by divisor_override, or by the window's cells up to the end of the padding
    (count_include_pad) or inside the input only."""
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    key = ready_key("avg_pool2d", (x,), args)
    ready = ready_call(key)
    if ready is not None:
        return ready(x)
    xp, x = as_float32(x, "input")
    plan = plan_avg_pool2d(x.shape, *args)
    if plan.launch is None:
        return xp.zeros(plan.out_shape, np.float32)
    if xp is np:
        g = plan.geometry
        return avg_pool2d_numpy(x.reshape(plan.planes, *g.in_hw), g, plan.rule).reshape(plan.out_shape)
    call = Call(plan.out_shape, plan.launch)
    keep_ready(key, call)
    return call(x)


def avg_pool2d_backward(
    grad_output: Any,
    input_shape: tuple[int, ...],
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Any:
    """The gradient of F.avg_pool2d with respect to its input of `input_shape`: every input cell
    receives grad / divisor from each window that covers it."""
    args = (kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    key = ready_key("avg_pool2d_backward", (grad_output,), (tuple(input_shape), *args))
    ready = ready_call(key)
    if ready is not None:
        return ready(grad_output)
    xp, dy = as_float32(grad_output, "grad_output")
    plan = plan_avg_pool2d_backward(dy.shape, tuple(input_shape), *args)
    if plan.launch is None:
        return xp.zeros(plan.out_shape, np.float32)
    if xp is np:
        g = plan.geometry
        dx = avg_pool2d_backward_numpy(dy.reshape(plan.planes, g.H_out, g.W_out), g, plan.rule)
        return dx.reshape(plan.out_shape)
    call = Call(plan.out_shape, plan.launch)
    keep_ready(key, call)
    return call(dy)
