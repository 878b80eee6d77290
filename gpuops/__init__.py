"""Conv Explorer's compute core: conv2d, unfold, fold and reflect_pad with PyTorch semantics, and
the backward pass: conv2d_backward, conv_transpose2d, reflect_pad_backward.

Each call runs on the backend of its input: CuPy arrays on the GPU kernels in gpuops/kernels,
NumPy arrays on their NumPy twins. Every operation goes check -> plan -> run
(docs/architecture.md). `asarray` moves data to the default backend.
"""

from gpuops.backend import asarray, backend_info, default_xp, reset_backend, to_numpy
from gpuops.checks import WindowGeometry, window_geometry
from gpuops.conv2d import (
    ALGORITHMS,
    ALL_ALGORITHMS,
    AUTO,
    TF32_ALGORITHMS,
    ConvPlan,
    ConvProblem,
    conv2d,
    offered_algorithms,
    plan_conv2d,
    resolve_algorithm,
)
from gpuops.conv_backward import (
    GRAD_INPUT_ALGORITHMS,
    GRAD_WEIGHT_ALGORITHMS,
    HOPPER_WEIGHT_ALGORITHMS,
    BackwardPlan,
    GradProblem,
    TransposeGeometry,
    adjoint_identity,
    conv2d_backward,
    conv2d_grad_input,
    conv2d_grad_weight,
    conv_transpose2d,
    offered_weight_algorithms,
    plan_conv2d_backward,
    plan_conv_transpose2d,
    transpose_geometry,
)
from gpuops.im2col import GemmPlan, gemm, plan_gemm
from gpuops.im2col import batch_chunk as im2col_batch_chunk
from gpuops.pool import (
    PoolPlan,
    avg_pool2d,
    avg_pool2d_backward,
    max_pool2d,
    max_pool2d_backward,
    plan_avg_pool2d,
    plan_avg_pool2d_backward,
    plan_max_pool2d,
    plan_max_pool2d_backward,
)
from gpuops.reflect_pad import BACKWARD_ALGORITHMS as REFLECT_BACKWARD_ALGORITHMS
from gpuops.reflect_pad import (
    ReflectPadBackwardPlan,
    ReflectPadPlan,
    plan_reflect_pad,
    plan_reflect_pad_backward,
    reflect_pad,
    reflect_pad_backward,
)
from gpuops.unfold_fold import FOLD_VARIANTS, FoldPlan, UnfoldPlan, fold, plan_fold, plan_unfold, unfold

__all__ = [
    "ALGORITHMS",
    "ALL_ALGORITHMS",
    "AUTO",
    "FOLD_VARIANTS",
    "GRAD_INPUT_ALGORITHMS",
    "GRAD_WEIGHT_ALGORITHMS",
    "HOPPER_WEIGHT_ALGORITHMS",
    "REFLECT_BACKWARD_ALGORITHMS",
    "TF32_ALGORITHMS",
    "BackwardPlan",
    "ConvPlan",
    "ConvProblem",
    "FoldPlan",
    "GemmPlan",
    "GradProblem",
    "PoolPlan",
    "ReflectPadBackwardPlan",
    "ReflectPadPlan",
    "TransposeGeometry",
    "UnfoldPlan",
    "WindowGeometry",
    "adjoint_identity",
    "asarray",
    "avg_pool2d",
    "avg_pool2d_backward",
    "backend_info",
    "conv2d",
    "conv2d_backward",
    "conv2d_grad_input",
    "conv2d_grad_weight",
    "conv_transpose2d",
    "default_xp",
    "fold",
    "gemm",
    "im2col_batch_chunk",
    "max_pool2d",
    "max_pool2d_backward",
    "offered_algorithms",
    "offered_weight_algorithms",
    "plan_avg_pool2d",
    "plan_avg_pool2d_backward",
    "plan_conv2d",
    "plan_conv2d_backward",
    "plan_conv_transpose2d",
    "plan_fold",
    "plan_gemm",
    "plan_max_pool2d",
    "plan_max_pool2d_backward",
    "plan_reflect_pad",
    "plan_reflect_pad_backward",
    "plan_unfold",
    "reflect_pad",
    "reflect_pad_backward",
    "reset_backend",
    "resolve_algorithm",
    "to_numpy",
    "transpose_geometry",
    "unfold",
    "window_geometry",
]
