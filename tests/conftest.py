"""Shared fixtures: PyTorch as a reference, the GPU marker, and CI strictness.

In CI (CI=true) nothing may skip silently: a missing test dependency is a failure.
GPU tests skip with the reason when no CUDA device answers (always so in CI).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np
import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(module: str, why: str) -> ModuleType:
    """Import a test dependency: fail in CI when missing, skip with the reason elsewhere."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if IN_CI:
            raise RuntimeError(f"CI must install {module} ({why}): {exc}") from exc
        pytest.skip(f"{module} not installed here: {why}", allow_module_level=True)


def gpu_available() -> tuple[bool, str]:
    from gpuops.backend import _probe_cupy

    cupy, info = _probe_cupy()
    return cupy is not None, info.reason or ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any("gpu" in item.keywords for item in items):
        return
    ok, reason = gpu_available()
    if not ok:
        skip = pytest.mark.skip(reason=f"no usable CUDA GPU: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    module = require("torch", "parity with PyTorch's F.conv2d / unfold / fold / pad")
    module.backends.cudnn.allow_tf32 = False
    module.backends.cuda.matmul.allow_tf32 = False
    return module


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh generator per test, seeded by the test's name (reproducible, not shared)."""
    return np.random.default_rng(abs(hash(request.node.nodeid)) % 2**32)
