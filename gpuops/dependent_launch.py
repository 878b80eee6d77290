"""Hopper's programmatic dependent launch: a kernel that starts while the launch before it in its
stream still runs.

Why: v17 runs right after a copy of its weights that takes a few microseconds. Launched plainly,
its first block starts only once the copy has finished and the GPU has set up the next grid.
Launched with the attribute CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, its blocks may
start as soon as every block of the copy has executed `griddepcontrol.launch_dependents`; they
bring in what does not depend on the copy (v17: its input tile) and then execute
`griddepcontrol.wait`, which returns once the copy has finished and its writes are visible,
before they read the copy. A kernel launched this way must wait before it reads its
predecessor's output; `Launch.dependent` marks the kernels that do.

CuPy does not wrap cuLaunchKernelEx, the driver call that takes launch attributes, so this calls
the CUDA driver's public C API through ctypes (as gpuops.sm90a calls NVRTC's). Where the driver
lacks it, `launcher` returns None and the plain launch runs (the kernel's wait is then a no-op).
"""

from __future__ import annotations

import ctypes
from typing import Any

from gpuops.cache import memoised

_LIBRARIES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll")
_PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID in cuda.h (CUDA 12)


class _Attribute(ctypes.Structure):
    """CUlaunchAttribute: an id, then a union of 64 bytes at offset 8 (here: one int, 1 = on)."""

    _fields_ = (("id", ctypes.c_int), ("_pad", ctypes.c_char * 4), ("value", ctypes.c_int * 16))


class _Config(ctypes.Structure):
    """CUlaunchConfig: grid, block, dynamic shared memory, stream, attributes."""

    _fields_ = (
        ("grid", ctypes.c_uint * 3),
        ("block", ctypes.c_uint * 3),
        ("shared_bytes", ctypes.c_uint),
        ("stream", ctypes.c_void_p),
        ("attributes", ctypes.POINTER(_Attribute)),
        ("attribute_count", ctypes.c_uint),
    )


@memoised("cuda_driver_launch_ex", 1)
def _launch_ex() -> Any:
    """The driver's cuLaunchKernelEx (CUDA 12.0 and later), or None."""
    for name in _LIBRARIES:
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        function = getattr(library, "cuLaunchKernelEx", None)
        if function is None:
            return None
        function.argtypes = (ctypes.POINTER(_Config), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        function.restype = ctypes.c_int
        return function
    return None


class DependentLaunch:
    """One launch configuration with the programmatic-serialization attribute on. Called with
    the driver's function handle, the stream and the address of the kernel's parameter array, as
    cuLaunchKernel takes them. Not thread-safe on its own: the caller holds its launch lock."""

    def __init__(self, grid: tuple[int, int, int], block: tuple[int, int, int], shared_bytes: int) -> None:
        self._launch_ex = _launch_ex()
        self._attribute = _Attribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
        self._attribute.value[0] = 1
        self._config = _Config(grid, block, shared_bytes, None, ctypes.pointer(self._attribute), 1)

    def __call__(self, function: int, stream: int, params_address: int) -> None:
        self._config.stream = stream
        status = self._launch_ex(ctypes.byref(self._config), function, params_address, None)
        if status != 0:
            raise RuntimeError(f"cuLaunchKernelEx failed with CUresult {status}")


def launcher(launch: Any) -> DependentLaunch | None:
    """A dependent launch of a `Launch`'s grid, block and shared memory, or None where the
    driver cannot make one."""
    if _launch_ex() is None:
        return None
    return DependentLaunch(launch.grid, launch.block, launch.shared_bytes)
