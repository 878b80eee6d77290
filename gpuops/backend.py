"""Pick the array backend once per process: CuPy on a working GPU, else NumPy, and say why.

The decision is cached because probing CUDA is slow and the answer does not change while the
process runs; `reset_backend()` exists for tests that flip CONV_EXPLORER_BACKEND.
"""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

import numpy as np

ENV_VAR = "CONV_EXPLORER_BACKEND"


@dataclass(frozen=True)
class BackendInfo:
    """What computes the results, for the page's badge and for benchmark reports."""

    name: str  # "cupy" or "numpy"
    device: str | None = None
    cupy_version: str | None = None
    cuda_runtime: str | None = None
    cuda_driver: str | None = None
    numpy_version: str = np.__version__
    reason: str | None = None  # on the CPU: why the GPU is not used

    @property
    def gpu(self) -> bool:
        return self.name == "cupy"

    def label(self) -> str:
        """One line for a badge: the GPU and CuPy version, or the CPU and the reason."""
        if self.gpu:
            return f"GPU: {self.device} (CuPy {self.cupy_version}, CUDA {self.cuda_runtime})"
        return f"CPU / NumPy {self.numpy_version}: timings are CPU timings ({self.reason})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"gpu": self.gpu}


def _cuda_version(code: int) -> str:
    return f"{code // 1000}.{(code % 1000) // 10}"


def _probe_cupy() -> tuple[ModuleType | None, BackendInfo]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising at import
        return None, BackendInfo("numpy", reason=f"CuPy is not available ({type(exc).__name__})")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, BackendInfo("numpy", reason="CuPy found no CUDA device")
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        info = BackendInfo(
            "cupy",
            device=name,
            cupy_version=cupy.__version__,
            cuda_runtime=_cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
            cuda_driver=_cuda_version(cupy.cuda.runtime.driverGetVersion()),
        )
    except Exception as exc:  # no driver, driver too old, device busy or lost
        return None, BackendInfo("numpy", reason=f"no usable GPU: {type(exc).__name__}: {exc}")
    try:  # a GPU that cannot build our kernels is no use to us
        from gpuops import launch

        launch.module("reflect_pad.cu")
    except Exception as exc:
        return None, BackendInfo(
            "numpy", reason=f"the CUDA kernels failed to compile: {type(exc).__name__}: {exc}"
        )
    return cupy, info


@functools.lru_cache(maxsize=1)
def _choose() -> tuple[ModuleType | None, BackendInfo]:
    forced = os.environ.get(ENV_VAR, "").strip().lower()
    if forced not in ("", "auto", "numpy", "cupy"):
        raise ValueError(f"{ENV_VAR}={forced!r} is not one of 'numpy', 'cupy', 'auto'")
    if forced == "numpy":
        return None, BackendInfo("numpy", reason=f"{ENV_VAR}=numpy forces the CPU")
    cupy, info = _probe_cupy()
    if forced == "cupy" and cupy is None:
        raise RuntimeError(f"{ENV_VAR}=cupy, but the GPU cannot be used: {info.reason}")
    return cupy, info


def reset_backend() -> None:
    """Forget the cached decision (tests change CONV_EXPLORER_BACKEND)."""
    _choose.cache_clear()


def backend_info() -> BackendInfo:
    """The backend new arrays are created on, with device and versions or the CPU reason."""
    return _choose()[1]


def default_xp() -> ModuleType:
    """The module (cupy or numpy) that `asarray` puts arrays on."""
    cupy = _choose()[0]
    return cupy if cupy is not None else np


def array_module(x: Any) -> ModuleType:
    """cupy for CuPy arrays, numpy for everything else (without importing cupy needlessly)."""
    if type(x).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def asarray(x: Any) -> Any:
    """Move an array to the default backend as contiguous float32."""
    return default_xp().ascontiguousarray(default_xp().asarray(x, dtype=np.float32))


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array (for pictures and downloads)."""
    if array_module(x) is not np:
        return x.get()
    return np.asarray(x)


def is_gpu_oom(exc: BaseException) -> bool:
    """True for CuPy's OutOfMemoryError (without importing cupy on CPU machines)."""
    return type(exc).__name__ == "OutOfMemoryError" and type(exc).__module__.startswith("cupy")


def release_gpu_memory() -> None:
    """Return every cached block of CuPy's memory pools to the driver (after an OOM)."""
    if _choose()[0] is not None:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
