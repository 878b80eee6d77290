"""Bring any real-valued input (uint8 images, float64, lists) to contiguous float32."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from gpuops.backend import array_module


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
