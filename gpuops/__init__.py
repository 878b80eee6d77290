"""Conv Explorer's compute core: conv2d, unfold, fold and reflect_pad with PyTorch semantics.

Each call runs on the backend of its input: CuPy arrays on the GPU kernels in gpuops/kernels,
NumPy arrays on their NumPy twins. Every operation goes check -> plan -> run (README,
"Architecture"). `asarray` moves data to the default backend.
"""

from gpuops.backend import asarray, backend_info, default_xp, reset_backend, to_numpy
from gpuops.checks import WindowGeometry, window_geometry
from gpuops.conv2d import ALGORITHMS, AUTO, ConvPlan, ConvProblem, conv2d, plan_conv2d, resolve_algorithm
from gpuops.im2col import batch_chunk as im2col_batch_chunk
from gpuops.im2col import gemm
from gpuops.reflect_pad import reflect_pad
from gpuops.unfold_fold import FOLD_VARIANTS, fold, unfold

__all__ = [
    "ALGORITHMS",
    "AUTO",
    "FOLD_VARIANTS",
    "ConvPlan",
    "ConvProblem",
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
