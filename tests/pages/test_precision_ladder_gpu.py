"""The Direct page's precision ladder on the GPU (`pytest -m gpu` on the device machine): the
tensor-core kernels run (the kernel named is the one of the launch), their errors against a
float64 reference stay inside what their precision allows, and cuDNN is timed beside them where
PyTorch is installed. Expectations are computed here: a float64 convolution written tap by tap.
"""

from __future__ import annotations

import numpy as np
import pytest

import gpuops
from gpuops import sm90a
from ui import precision_view as precision
from ui.records import Conv

pytestmark = pytest.mark.gpu

BOUND = {
    "fp32": 1e-5,
    "tf32": 2 * 2.0**-11,
    "bf16": 2 * 2.0**-8,
    "fp16": 2 * 2.0**-11,
}  # two rounded operands


def conv64(x: np.ndarray, w: np.ndarray, pads: tuple[int, int, int, int], mode: str) -> np.ndarray:
    """Dense layer, stride 1, dilation 1, in float64: out[m] = sum over c, ki, kj of
    x_pad[c, i + ki, j + kj] * w[m, c, ki, kj]."""
    top, bottom, left, right = pads
    xp = np.pad(
        x.astype(np.float64),
        ((0, 0), (top, bottom), (left, right)),
        mode="reflect" if mode == "reflect" else "constant",
    )
    M, K = w.shape[0], w.shape[2]
    h, wd = xp.shape[1] - K + 1, xp.shape[2] - K + 1
    out = np.zeros((M, h, wd))
    for ki in range(K):
        for kj in range(K):
            out += np.einsum(
                "mc,chw->mhw", w[:, :, ki, kj].astype(np.float64), xp[:, ki : ki + h, kj : kj + wd]
            )
    return out


@pytest.mark.parametrize("padding,mode", [(1, "zeros"), ("same", "reflect")])
def test_the_ladder_runs_the_tensor_core_kernels_within_their_precision(rng, padding, mode):
    gpuops.reset_backend()
    assert gpuops.backend_info().gpu, "the default backend of a GPU machine is CuPy"
    C, M, H, W, K = 64, 64, 96, 80, 3 if padding == 1 else 4
    planes = rng.random((C, H, W), dtype=np.float32)
    weight = (rng.standard_normal((M, C, K, K)) / (C * K)).astype(np.float32)
    plan = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, 1, padding, 1, 1, mode)
    g = plan.geometry
    conv = Conv(weight[0, 0], weight, 1, g, mode, "implicit_gemm", None, None, None, "", ())
    try:
        import torch
    except ImportError:
        torch = None
    tf32_before = torch.backends.cudnn.allow_tf32 if torch else None
    ladder = precision.measure_ladder(planes, conv)
    assert [r.precision for r in ladder.rungs] == ["fp32", "tf32", "bf16", "fp16"]
    want = conv64(planes, weight, (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right), mode)
    assert want.shape[1:] == (g.H_out, g.W_out) and (padding != "same" or want.shape[1:] == (H, W))
    for r in ladder.rungs:
        assert r.note == "" and r.ms > 0 and r.tflops > 0
        assert 0 < r.rel_error < BOUND[r.precision], r
        launch = gpuops.plan_conv2d(
            (1, C, H, W), weight.shape, None, 1, padding, 1, 1, mode, r.algorithm
        ).launch
        assert r.kernel == launch.kernel
    kernels = {r.precision: r.kernel for r in ladder.rungs}
    # 64 channels a group fill whole 32-deep stages: TF32 runs v10 (channels last), 16-bit
    # operands v11 (its 16-bit copies, stages of 64 channels); 64 filters take the 128 x 128
    # tile. On Hopper v12 runs instead, with its 64 x 128 tile for 64 filters.
    for half in ("bf16", "fp16"):
        hopper = f"conv2d_v12_{half}_64x128"
        assert kernels[half] == (hopper if sm90a.available() else f"conv2d_v11_{half}_128x128_c64")
    assert kernels["tf32"].startswith("conv2d_v")
    if torch is None:
        assert "PyTorch is not installed" in ladder.cudnn_note
        return
    assert torch.backends.cudnn.allow_tf32 == tf32_before, "the ladder restores PyTorch's setting"
    if not torch.cuda.is_available():
        assert "PyTorch sees no GPU" in ladder.cudnn_note
        return
    assert ladder.cudnn_note == ""
    for r in ladder.rungs:
        assert r.cudnn_ms > 0 and 0 < r.cudnn_error < 2 * BOUND[r.precision], r
