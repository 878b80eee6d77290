"""The CPU path equals PyTorch's functional ops on many random shapes (PyTorch as a test-only
dependency; CI installs the CPU build)."""

import numpy as np
import pytest

import gpuops
from tests.support.cases import case_id, random_conv_cases, random_depthwise_cases, reflect_pad_cases
from tests.support.helpers import BACKENDS, host, on

CASES = random_conv_cases(60, seed=3)
backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


@backends
@pytest.mark.parametrize("algorithm", gpuops.ALGORITHMS)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_conv2d_equals_nn_conv2d(case, algorithm, xp, rng, torch):
    x, w, b = case.arrays(rng)
    with torch.no_grad():
        ref = case.torch_layer(w, b, torch)(torch.from_numpy(x)).numpy()
    y = gpuops.conv2d(*on(xp, x, w, b), algorithm=algorithm, **case.kwargs())
    np.testing.assert_allclose(host(y), ref, rtol=1e-4, atol=1e-4)


@backends
@pytest.mark.parametrize("case", random_depthwise_cases(24, seed=15), ids=case_id)
def test_depthwise_rows_equal_nn_conv2d(case, xp, rng, torch):
    """tiled's v15 (it runs every one of these layers) against nn.Conv2d on random depthwise
    layers: odd sizes, planes shorter than a thread's rows, reflect padding, 1-3 filters a channel."""
    x, w, b = case.arrays(rng)
    plan = gpuops.plan_conv2d(
        x.shape, w.shape, None if b is None else b.shape, algorithm="tiled", **case.kwargs()
    )
    assert plan.launch.kernel.startswith("conv2d_v15_depthwise")
    with torch.no_grad():
        ref = case.torch_layer(w, b, torch)(torch.from_numpy(x)).numpy()
    y = gpuops.conv2d(*on(xp, x, w, b), algorithm="tiled", **case.kwargs())
    np.testing.assert_allclose(host(y), ref, rtol=1e-4, atol=1e-4)


@backends
@pytest.mark.parametrize("case", [c for c in CASES if c.padding_mode == "zeros"], ids=case_id)
def test_unfold_and_fold_equal_torch(case, xp, rng, torch):
    F = torch.nn.functional
    x, _, _ = case.arrays(rng)
    kw = dict(
        kernel_size=(case.kh, case.kw), dilation=case.dilation, padding=case.padding, stride=case.stride
    )
    cols = gpuops.unfold(*on(xp, x), **kw)
    np.testing.assert_array_equal(host(cols), F.unfold(torch.from_numpy(x), **kw).numpy())
    noise = rng.standard_normal(cols.shape).astype(np.float32)
    folded = host(gpuops.fold(*on(xp, noise), (case.H, case.W), **kw))
    ref = F.fold(torch.from_numpy(noise), (case.H, case.W), **kw).numpy()
    np.testing.assert_allclose(folded, ref, rtol=1e-5, atol=1e-5)


@backends
@pytest.mark.parametrize("shape,pads", [c for c in reflect_pad_cases(40) if len(c[0]) > 2], ids=str)
def test_reflect_pad_equals_f_pad(shape, pads, xp, rng, torch):
    x = rng.standard_normal(shape).astype(np.float32)
    ref = torch.nn.functional.pad(torch.from_numpy(x), pads, mode="reflect").numpy()
    np.testing.assert_array_equal(host(gpuops.reflect_pad(*on(xp, x), pads)), ref)
