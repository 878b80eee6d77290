"""Reflect padding with PyTorch ReflectionPad2d semantics (per-side pads, edge not repeated), and its
backward pass: check -> plan -> run. Kernels: kernels/reflect_pad.cu (reflect_pad_v1 forward;
reflect_pad_backward_v1_scatter and reflect_pad_backward_v2_gather)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import autotune
from gpuops.cache import memoised
from gpuops.checks import as_float32, check_ndim, check_reflect_pads, reflect_pads
from gpuops.index_math import reflect_copies, reflect_index
from gpuops.launch import Call, Launch, ints, keep_ready, ready_call, ready_key, row_launch

SOURCE = "reflect_pad.cu"
# reflect pad's rows are short and carry little work each: a larger grid keeps more of them in
# flight (H100: stride2 0.0446 -> 0.0425 ms, resnet56 0.0252 -> 0.0245 ms; bench/NOTES.md)
GRID_CAP = 16384


@memoised("reflect_pad_checks", 1024)
def check_reflect_pad(shape: tuple[int, ...], padding: Any) -> tuple[int, int, int, int]:
    """Validate the input shape and pads; return them as (left, right, top, bottom)."""
    check_ndim(shape, (2, 3, 4), "input", "(H, W), (C, H, W) or (N, C, H, W)")
    pads = reflect_pads(padding)
    check_reflect_pads(shape[-2], shape[-1], pads)
    return pads


def reflect_pad_launch(planes: int, H: int, W: int, pads: tuple[int, int, int, int]) -> Launch:
    """v1: one thread row per output row of every plane (planes = N * C)."""
    left, right, top, bottom = pads
    H_out, W_out = H + top + bottom, W + left + right
    return row_launch(
        "reflect_pad_v1",
        SOURCE,
        ("x", "y"),
        (planes, H_out, W_out),
        W_out,
        ints(H=H, W=W, H_out=H_out, W_out=W_out, pad_top=top, pad_left=left),
        cells=4,
        head=True,
        grid_cap=GRID_CAP,
        index="(plane, oy, ox) of y",
    )


def reflect_source_rows(size: int, pad_before: int, pad_after: int) -> np.ndarray:
    """Input index copied by each padded position along one axis (the kernel's formula)."""
    return reflect_index(np.arange(size + pad_before + pad_after) - pad_before, size)


def reflect_pad_numpy(x: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """Twin of reflect_pad_v1: the same source index per row and per column, as two 1-D gathers
    (they move far less index data than one 2-D gather)."""
    left, right, top, bottom = pads
    H, W = x.shape[-2:]
    rows, cols = reflect_source_rows(H, top, bottom), reflect_source_rows(W, left, right)
    return np.take(np.take(x, rows, axis=-2), cols, axis=-1)


@dataclass(frozen=True)
class ReflectPadPlan:
    """A checked reflect_pad call: pads (left, right, top, bottom), the output's shape and the
    launch that writes it (None: an empty input, nothing to compute)."""

    pads: tuple[int, int, int, int]
    out_shape: tuple[int, ...]
    launch: Launch | None

    @property
    def launches(self) -> tuple[Launch, ...]:
        return () if self.launch is None else (self.launch,)


@memoised("reflect_pad_plans", 1024)
def plan_reflect_pad(shape: tuple[int, ...], padding: Any) -> ReflectPadPlan:
    """check_reflect_pad, then the output's shape and v1's launch over every plane."""
    pads = check_reflect_pad(tuple(shape), padding)
    left, right, top, bottom = pads
    H, W = shape[-2:]
    size = int(np.prod(shape))
    launch = reflect_pad_launch(size // (H * W), H, W, pads) if size else None
    return ReflectPadPlan(pads, (*shape[:-2], H + top + bottom, W + left + right), launch)


def reflect_pad(x: Any, padding: Any) -> Any:
    """F.pad(x, (left, right, top, bottom), mode="reflect") on (H,W), (C,H,W) or (N,C,H,W)."""
    key = ready_key("reflect_pad", (x,), padding)
    ready = ready_call(key)
    if ready is not None:  # this shape and padding passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    plan = plan_reflect_pad(x.shape, padding)
    if plan.launch is None:
        return xp.zeros(plan.out_shape, dtype=np.float32)
    if xp is np:
        return reflect_pad_numpy(x, plan.pads)
    call = Call(plan.out_shape, plan.launch)
    keep_ready(key, call)
    return call(x)


# ---- backward: the gradient of every padded cell goes back to the input cell it copied ---------------
BACKWARD_ALGORITHMS = ("scatter", "gather")
BACKWARD_KERNELS = {"scatter": "reflect_pad_backward_v1_scatter", "gather": "reflect_pad_backward_v2_gather"}


@memoised("reflect_pad_backward_checks", 1024)
def check_reflect_pad_backward(
    shape: tuple[int, ...], padding: Any
) -> tuple[tuple[int, ...], tuple[int, int, int, int]]:
    """Validate grad_output's shape and the pads; return (the input's shape, (left, right, top, bottom))."""
    check_ndim(shape, (2, 3, 4), "grad_output", "(H, W), (C, H, W) or (N, C, H, W)")
    pads = reflect_pads(padding)
    left, right, top, bottom = pads
    for pad, side in zip(pads, ("left", "right", "top", "bottom"), strict=True):
        if pad < 0:
            raise ValueError(f"reflect padding {pad} ({side}) must be at least 0")
    H_out, W_out = shape[-2:]
    H, W = H_out - top - bottom, W_out - left - right
    for axis, size, padded, before, after, names in (
        ("height", H, H_out, top, bottom, ("top", "bottom")),
        ("width", W, W_out, left, right, ("left", "right")),
    ):
        if size < 1:
            raise ValueError(
                f"grad_output {axis} {padded} leaves an input {axis} of {size} after padding "
                f"{names[0]} {before} + {names[1]} {after}; it must be at least 1"
            )
    check_reflect_pads(H, W, pads)
    return (*shape[:-2], H, W), pads


def check_backward_algorithm(algorithm: str) -> None:
    if algorithm not in (*BACKWARD_ALGORITHMS, "auto"):
        raise ValueError(f"algorithm {algorithm!r} must be one of {(*BACKWARD_ALGORITHMS, 'auto')}")


def reflect_pad_backward_launch(
    planes: int, H: int, W: int, pads: tuple[int, int, int, int], algorithm: str
) -> Launch:
    """v1 scatter walks the rows of grad_output (planes, H_out, W_out), one cell per thread and
    step; v2 gather the rows of grad_input (planes, H, W)."""
    left, right, top, bottom = pads
    H_out, W_out = H + top + bottom, W + left + right
    args = ints(H=H, W=W, H_out=H_out, W_out=W_out, pad_top=top, pad_left=left)
    shape, index = (
        ((planes, H_out, W_out), "(plane, oy, ox) of dy")
        if algorithm == "scatter"
        else ((planes, H, W), "(plane, y, x) of dx")
    )
    return row_launch(
        BACKWARD_KERNELS[algorithm],
        SOURCE,
        ("dy", "dx"),
        shape,
        shape[-1],
        args,
        grid_cap=GRID_CAP,
        index=index,
    )


def reflect_pad_backward_scatter_numpy(dy: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """Twin of reflect_pad_backward_v1 (scatter): fold one axis at a time. The middle of the
    padded axis goes to the input as it is, the margin before it is added back mirrored onto
    input cells 1..pad_before, the margin after it onto cells size-1-pad_after..size-2."""
    left, right, top, bottom = pads
    rows = _fold_axis(dy, dy.shape[-2] - top - bottom, top, bottom, axis=-2)
    return _fold_axis(rows, dy.shape[-1] - left - right, left, right, axis=-1)


def _fold_axis(a: np.ndarray, size: int, before: int, after: int, axis: int) -> np.ndarray:
    """Fold the padding of `a` along axis -2 or -1 back onto its `size` input cells."""

    def at(s: slice) -> tuple:
        return (Ellipsis, s) if axis == -1 else (Ellipsis, s, slice(None))

    out = a[at(slice(before, before + size))].copy()
    if before:  # padded index before-1-j (j = 0..before-1) copies input j+1
        out[at(slice(1, before + 1))] += a[at(slice(before - 1, None, -1))]
    if after:  # padded index before+size+j copies input size-2-j
        out[at(slice(size - 1 - after, size - 1))] += a[
            at(slice(before + size + after - 1, before + size - 1, -1))
        ]
    return out


def reflect_pad_backward_gather_numpy(dy: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """Twin of reflect_pad_backward_v2 (gather): every input cell sums the padded cells
    reflect_copies names, one of the 3 x 3 (row copy, column copy) pairs at a time."""
    left, right, top, bottom = pads
    H, W = dy.shape[-2] - top - bottom, dy.shape[-1] - left - right
    ry, py = reflect_copies(np.arange(H), H, top, bottom)
    rx, px = reflect_copies(np.arange(W), W, left, right)
    dx = np.zeros((*dy.shape[:-2], H, W), dtype=np.float32)
    for a in range(3):
        if not py[a].any():
            continue
        for b in range(3):
            if not px[b].any():
                continue
            rows = np.where(py[a], ry[a] + top, 0)
            cols = np.where(px[b], rx[b] + left, 0)
            dx += np.where(py[a][:, None] & px[b][None, :], dy[..., rows[:, None], cols[None, :]], 0)
    return dx


BACKWARD_TWINS = {"scatter": reflect_pad_backward_scatter_numpy, "gather": reflect_pad_backward_gather_numpy}


@dataclass(frozen=True)
class ReflectPadBackwardPlan:
    """A checked reflect_pad_backward call: the input's shape (that of grad_input), the pads, the
    algorithm and its launch (None: "auto", chosen per call, or nothing to compute)."""

    in_shape: tuple[int, ...]
    pads: tuple[int, int, int, int]
    algorithm: str
    launch: Launch | None

    @property
    def empty(self) -> bool:
        return int(np.prod(self.in_shape)) == 0

    @property
    def launches(self) -> tuple[Launch, ...]:
        return () if self.launch is None else (self.launch,)

    def call(self) -> Call:
        """The GPU call of a plan with a launch: scatter adds into dx, so dx starts at zero."""
        return Call(self.in_shape, self.launch, zeroed=self.algorithm == "scatter")


def resolve_backward_algorithm(grad_output: Any, padding: Any) -> str:
    """The algorithm reflect_pad_backward's "auto" runs for this call: on the GPU the faster of
    scatter and gather, measured once per shape and padding (gpuops.autotune); on the CPU scatter."""
    xp, dy = as_float32(grad_output, "grad_output")
    plan = plan_reflect_pad_backward(dy.shape, padding, "auto")
    if xp is np or plan.empty:
        return "scatter"
    plans = {a: plan_reflect_pad_backward(dy.shape, padding, a) for a in BACKWARD_ALGORITHMS}
    candidates = {a: functools.partial(q.call(), dy) for a, q in plans.items()}
    return autotune.fastest(("reflect_pad_backward", plan.in_shape, plan.pads), candidates) or "gather"


@memoised("reflect_pad_backward_plans", 1024)
def plan_reflect_pad_backward(
    shape: tuple[int, ...], padding: Any, algorithm: str = "auto"
) -> ReflectPadBackwardPlan:
    """check_reflect_pad_backward and the algorithm, then the launch that algorithm makes."""
    check_backward_algorithm(algorithm)
    in_shape, pads = check_reflect_pad_backward(tuple(shape), padding)
    H, W = in_shape[-2:]
    planes = int(np.prod(in_shape[:-2]))  # 0: an empty batch, nothing to compute
    launch = (
        None
        if algorithm == "auto" or not planes
        else reflect_pad_backward_launch(planes, H, W, pads, algorithm)
    )
    return ReflectPadBackwardPlan(in_shape, pads, algorithm, launch)


def reflect_pad_backward(grad_output: Any, padding: Any, *, algorithm: str = "auto") -> Any:
    """The gradient of F.pad(x, (left, right, top, bottom), mode="reflect") with respect to x,
    given the gradient of its output: every padded cell's gradient goes back to the input cell
    it copied, so border cells collect up to 3 x 3 of them.

    algorithm: "scatter" (reflect_pad_backward_v1, atomicAdd, as PyTorch), "gather" (v2,
    deterministic) or "auto": on the GPU the faster for the shape, measured once; on the CPU
    scatter (slices per axis).
    """
    key = ready_key("reflect_pad_backward", (grad_output,), (padding, algorithm))
    ready = ready_call(key)
    if ready is not None:  # this shape, padding and algorithm passed every check before
        return ready(grad_output)
    check_backward_algorithm(algorithm)
    xp, dy = as_float32(grad_output, "grad_output")
    plan = plan_reflect_pad_backward(dy.shape, padding, algorithm)
    if plan.empty:
        return xp.zeros(plan.in_shape, dtype=np.float32)
    if xp is np:
        return BACKWARD_TWINS["scatter" if algorithm == "auto" else algorithm](dy, plan.pads)
    if algorithm == "auto":
        plan = plan_reflect_pad_backward(dy.shape, padding, resolve_backward_algorithm(dy, padding))
    call = plan.call()
    keep_ready(key, call)  # "auto" too: its choice is fixed per shape once measured
    return call(dy)
