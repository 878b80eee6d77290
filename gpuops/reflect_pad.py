"""Reflect padding with PyTorch ReflectionPad2d semantics (per-side pads, edge not repeated):
check -> plan -> run. Kernel: kernels/reflect_pad.cu (reflect_pad_v1)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuops.cache import Memo, memoised
from gpuops.checks import as_float32, check_ndim, check_reflect_pads, reflect_pads
from gpuops.index_math import reflect_index
from gpuops.launch import Call, Launch, ints, ready_device, row_launch

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


_ready = Memo("reflect_pad_ready_calls", 4096)


def reflect_pad(x: Any, padding: Any) -> Any:
    """F.pad(x, (left, right, top, bottom), mode="reflect") on (H,W), (C,H,W) or (N,C,H,W)."""
    device = ready_device(x)
    key = (device, x.shape, repr(padding)) if device is not None else None
    ready = _ready.get(key) if key else None
    if ready is not None:  # this shape and padding passed every check before
        return ready(x)
    xp, x = as_float32(x, "input")
    pads = check_reflect_pad(x.shape, padding)
    left, right, top, bottom = pads
    H, W = x.shape[-2:]
    out_shape = (*x.shape[:-2], H + top + bottom, W + left + right)
    if x.size == 0:
        return xp.zeros(out_shape, dtype=np.float32)
    if xp is np:
        return reflect_pad_numpy(x, pads)
    call = Call(out_shape, reflect_pad_launch(x.size // (H * W), H, W, pads))
    if key:
        _ready.put(key, call)
    return call(x)
