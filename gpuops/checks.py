"""The check stage: argument checks and output shapes, shared by every operation.

Every bad argument becomes a ValueError that names the parameter, its value and the limit, so
the app can show it in place of a result; nothing here touches device memory.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from gpuops.backend import array_module
from gpuops.cache import memoised
from gpuops.index_math import window_count
from gpuops.launch import ints

AXES = ("height", "width")


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def as_pair(value: Any, name: str) -> tuple[int, int]:
    """An int or a pair of ints, as PyTorch accepts for sizes, as (h, w)."""
    if _is_int(value):
        return int(value), int(value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(_is_int, value)):
        return int(value[0]), int(value[1])
    raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")


def check_at_least(values: tuple[int, ...], name: str, limit: int) -> None:
    for axis, v in zip(AXES, values, strict=False):
        if v < limit:
            raise ValueError(f"{name} {v} ({axis}) must be at least {limit}")


def check_ndim(shape: tuple[int, ...], allowed: tuple[int, ...], name: str, meaning: str) -> None:
    if len(shape) not in allowed:
        raise ValueError(
            f"{name} must have {' or '.join(map(str, allowed))} dimensions ({meaning}), "
            f"got {len(shape)}: shape {tuple(shape)}"
        )


@dataclass(frozen=True)
class WindowGeometry:
    """Where a KH x KW window (with stride, padding, dilation) lands on an H x W plane."""

    H: int
    W: int
    KH: int
    KW: int
    stride_h: int
    stride_w: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    dil_h: int
    dil_w: int

    @property
    def H_out(self) -> int:
        return window_count(self.H, self.pad_top, self.pad_bottom, self.KH, self.stride_h, self.dil_h)

    @property
    def W_out(self) -> int:
        return window_count(self.W, self.pad_left, self.pad_right, self.KW, self.stride_w, self.dil_w)

    @property
    def L(self) -> int:
        """Number of window positions (columns of the unfolded matrix)."""
        return self.H_out * self.W_out

    @property
    def expansion_ratio(self) -> float:
        """Entries of X_unroll over entries of the input (PMPP): KH*KW*H_out*W_out / (H*W).

        Channels cancel: X_unroll has C*KH*KW rows and the input C*H*W cells.
        """
        return self.KH * self.KW * self.L / (self.H * self.W)

    @property
    def padded_hw(self) -> tuple[int, int]:
        return self.H + self.pad_top + self.pad_bottom, self.W + self.pad_left + self.pad_right

    @property
    def pads(self) -> tuple[int, int, int, int]:
        """(left, right, top, bottom), the order of F.pad and reflect_pad."""
        return self.pad_left, self.pad_right, self.pad_top, self.pad_bottom

    def unpadded(self) -> WindowGeometry:
        """The same windows on an input that has already been padded."""
        Hp, Wp = self.padded_hw
        return WindowGeometry(
            Hp, Wp, self.KH, self.KW, self.stride_h, self.stride_w, 0, 0, 0, 0, self.dil_h, self.dil_w
        )


def checked_pairs(**values: tuple[Any, int]) -> list[tuple[int, int]]:
    """Each argument as an (h, w) pair, at least its limit: checked_pairs(stride=(stride, 1), ...)."""
    pairs = [as_pair(value, name) for name, (value, _) in values.items()]
    for (name, (_, limit)), pair in zip(values.items(), pairs, strict=True):
        check_at_least(pair, name, limit)
    return pairs


def check_groups(groups: Any) -> int:
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"groups {groups!r} must be an int of at least 1")
    return int(groups)


def layer_shapes(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    bias_shape: tuple[int, ...] | None,
    *,
    x_meaning: str,
    w_meaning: str,
    bias_count: Any,
    bias_meaning: str,
) -> tuple[int, ...]:
    """(N, C, H, W, w0, w1, KH, KW) of a layer's input (3-D means one sample) and weight, checked:
    the dimensions, a kernel of at least 1x1, and a bias of bias_count(w0, w1) values."""
    check_ndim(x_shape, (3, 4), "input", x_meaning)
    check_ndim(w_shape, (4,), "weight", w_meaning)
    N, C, H, W = x_shape if len(x_shape) == 4 else (1, *x_shape)
    w0, w1, KH, KW = w_shape
    if KH < 1 or KW < 1:
        raise ValueError(f"weight kernel size {KH}x{KW} must be at least 1x1")
    count = bias_count(w0, w1)
    if bias_shape is not None and tuple(bias_shape) != (count,):
        raise ValueError(f"bias shape {tuple(bias_shape)} must be ({count},), one value per {bias_meaning}")
    return N, C, H, W, w0, w1, KH, KW


@dataclass(frozen=True)
class Layer:
    """A convolution layer's sizes, checked: N samples of C channels, M filters in `groups`
    groups, windows placed by `geometry` (the forward and the backward problems both are one)."""

    N: int
    C: int
    M: int
    groups: int
    geometry: WindowGeometry

    @property
    def w_shape(self) -> tuple[int, int, int, int]:
        return self.M, self.C // self.groups, self.geometry.KH, self.geometry.KW

    def flops_for(self, pixels: int) -> int:
        """Multiply-adds x 2 of a convolution with `pixels` output positions per sample and filter
        (padding taps included, as the kernels do them)."""
        return 2 * self.N * self.M * pixels * (self.C // self.groups) * self.geometry.KH * self.geometry.KW


@memoised("window_geometry", 1024)
def window_geometry(
    H: int, W: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1
) -> WindowGeometry:
    """Check window arguments against an H x W input and return the geometry (symmetric pads).

    Remembered per arguments: the checks cost more than a small kernel launch.
    """
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = checked_pairs(
        kernel_size=(kernel_size, 1), stride=(stride, 1), dilation=(dilation, 1), padding=(padding, 0)
    )
    return _placed(H, W, (kh, kw), (sh, sw), (ph, ph, pw, pw), (dh, dw))


def _placed(
    H: int,
    W: int,
    k: tuple[int, int],
    s: tuple[int, int],
    pads: tuple[int, int, int, int],
    d: tuple[int, int],
) -> WindowGeometry:
    """The geometry of checked pairs and (top, bottom, left, right) pads, once the windows fit."""
    top, bottom, left, right = pads
    for axis, size, kk, dd, before, after in (
        ("height", H, k[0], d[0], top, bottom),
        ("width", W, k[1], d[1], left, right),
    ):
        if size < 1:
            raise ValueError(f"input {axis} {size} must be at least 1")
        extent = dd * (kk - 1) + 1
        padded = size + before + after
        if extent > padded:
            pads_text = f"2 x padding {before}" if before == after else f"padding {before} + {after}"
            raise ValueError(
                f"kernel {axis} {kk} with dilation {dd} spans {extent} cells, more than the padded "
                f"input {axis} {padded} (input {size} + {pads_text})"
            )
    return WindowGeometry(H, W, k[0], k[1], s[0], s[1], top, bottom, left, right, d[0], d[1])


PADDING_STRINGS = ("valid", "same")


def same_pads(kernel_size: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int, int, int]:
    """padding="same" as (top, bottom, left, right), PyTorch's split (F.conv2d, nn.Conv2d's
    _reversed_padding_repeated_twice): dilation*(k-1) cells per axis, half of them (rounded down)
    before, the rest after; an odd total puts the extra row / column on the bottom / right."""
    (kh, kw), (dh, dw) = kernel_size, dilation
    th, tw = dh * (kh - 1), dw * (kw - 1)
    return th // 2, th - th // 2, tw // 2, tw - tw // 2


@memoised("conv_geometry", 1024)
def conv_geometry(
    H: int, W: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1
) -> WindowGeometry:
    """window_geometry for conv2d, whose padding may also be one of F.conv2d's strings:
    "valid" (no padding) or "same" (the output keeps the input's size; stride 1 only, as in
    PyTorch; the pads may differ by one cell, see same_pads)."""
    if not isinstance(padding, str):
        return window_geometry(H, W, kernel_size, stride, padding, dilation)
    if padding not in PADDING_STRINGS:
        raise ValueError(f"padding {padding!r} must be an int, a pair of ints, or one of {PADDING_STRINGS}")
    if padding == "valid":
        return window_geometry(H, W, kernel_size, stride, 0, dilation)
    k, s, d = checked_pairs(kernel_size=(kernel_size, 1), stride=(stride, 1), dilation=(dilation, 1))
    if s != (1, 1):
        raise ValueError(
            f"padding 'same' needs stride 1 in both dimensions, got stride {s} "
            "(PyTorch: padding='same' is not supported for strided convolutions)"
        )
    return _placed(H, W, k, s, same_pads(k, d), d)


def window_args(
    g: WindowGeometry, H_out: int | None = None, W_out: int | None = None
) -> tuple[tuple[str, Any], ...]:
    """The window arguments every sliding-window kernel takes, in this order (conv2d, unfold,
    fold, the backward kernels): H, W, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w,
    dil_h, dil_w. H_out / W_out default to the geometry's own."""
    return ints(
        H=g.H,
        W=g.W,
        KH=g.KH,
        KW=g.KW,
        H_out=g.H_out if H_out is None else H_out,
        W_out=g.W_out if W_out is None else W_out,
        stride_h=g.stride_h,
        stride_w=g.stride_w,
        pad_h=g.pad_top,
        pad_w=g.pad_left,
        dil_h=g.dil_h,
        dil_w=g.dil_w,
    )


def reflect_pads(padding: Any) -> tuple[int, int, int, int]:
    """Padding as (left, right, top, bottom), from an int or a 4-sequence (F.pad order)."""
    if _is_int(padding):
        return (int(padding),) * 4  # type: ignore[return-value]
    if isinstance(padding, (tuple, list)) and len(padding) == 4 and all(map(_is_int, padding)):
        return tuple(int(v) for v in padding)  # type: ignore[return-value]
    raise ValueError(f"padding must be an int or (left, right, top, bottom), got {padding!r}")


def check_reflect_pads(H: int, W: int, pads: tuple[int, int, int, int]) -> None:
    """Reflection needs each pad smaller than the input side it mirrors (PyTorch's rule)."""
    for side, pad, size, axis in zip(
        ("left", "right", "top", "bottom"),
        pads,
        (W, W, H, H),
        ("width", "width", "height", "height"),
        strict=True,
    ):
        if pad < 0:
            raise ValueError(f"reflect padding {pad} ({side}) must be at least 0")
        if pad >= size:
            raise ValueError(f"reflect padding {pad} ({side}) must be smaller than the input {axis} {size}")


def as_float32(x: Any, name: str, xp: ModuleType | None = None) -> tuple[ModuleType, Any]:
    """Return (module, contiguous float32 array) on x's own backend, or on `xp` when given."""
    own = array_module(x)
    module = xp if xp is not None else own
    if module is own and getattr(x, "dtype", None) == np.float32 and x.flags.c_contiguous:
        return module, x  # the hot path of every GPU call: nothing to convert
    if module is not np and array_module(x) is np:
        x = np.asarray(x)
    elif module is np and array_module(x) is not np:
        x = x.get()
    try:
        arr = module.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return module, module.ascontiguousarray(arr, dtype=np.float32)
