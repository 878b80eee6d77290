"""Conv Explorer's compute core: conv2d, unfold, fold and reflect_pad with PyTorch semantics.

Each call runs on the backend of its input: CuPy arrays on the GPU kernels in gpuops/kernels,
NumPy arrays on the vectorised CPU twins. `asarray` moves data to the default backend.
"""

from gpuops.backend import asarray, backend_info, default_xp, reset_backend, to_numpy
from gpuops.conv import (
    ALGORITHMS,
    AUTO,
    ConvPlan,
    conv2d,
    gemm,
    im2col_batch_chunk,
    plan_conv2d,
    resolve_algorithm,
)
from gpuops.geometry import WindowGeometry, window_geometry
from gpuops.reflect import reflect_pad
from gpuops.unfold import FOLD_VARIANTS, fold, unfold

__all__ = [
    "ALGORITHMS",
    "AUTO",
    "FOLD_VARIANTS",
    "ConvPlan",
    "WindowGeometry",
    "asarray",
    "backend_info",
    "conv2d",
    "default_xp",
    "fold",
    "gemm",
    "im2col_batch_chunk",
    "plan_conv2d",
    "reflect_pad",
    "reset_backend",
    "resolve_algorithm",
    "to_numpy",
    "unfold",
    "window_geometry",
]
