"""What test modules share: CI strictness, the two backends, seeds (tests/conftest.py holds the
fixtures and hooks; modules import these from here, never from conftest)."""

from __future__ import annotations

import importlib
import os
import zlib
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


def seed_of(test_id: str) -> int:
    """A stable seed from a test's id: the same in every process (Python's hash() is salted per
    process, so a failure seeded by it could not be replayed)."""
    return zlib.crc32(test_id.encode())


# One test body for both backends (CuPy's numpy_cupy_* pattern): parametrise with BACKENDS and
# take the `xp` fixture; the CuPy half is marked gpu and runs with `pytest -m gpu`.
BACKENDS = [pytest.param("numpy", id="numpy"), pytest.param("cupy", id="cupy", marks=pytest.mark.gpu)]


def on(xp: ModuleType, *arrays: np.ndarray | None) -> tuple:
    """The arrays on backend xp (None stays None)."""
    return tuple(None if a is None else xp.asarray(a) for a in arrays)


def host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") else np.asarray(a)
