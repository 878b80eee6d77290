"""Load the CUDA sources in gpuops/kernels once per process and launch them.

The compiled modules are process-wide (every app session shares them); the source text is
what the app shows, byte for byte.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

KERNEL_DIR = Path(__file__).with_name("kernels")
THREADS_1D = 256


@functools.cache
def source(filename: str) -> str:
    """The verbatim text of a kernel file (also readable without a GPU)."""
    return (KERNEL_DIR / filename).read_text(encoding="utf-8")


def sources_for(filename: str) -> dict[str, str]:
    """A kernel file and the headers it includes, in the order a reader needs them."""
    text = source(filename)
    files = {}
    for line in text.splitlines():
        if line.startswith('#include "'):
            header = line.split('"')[1]
            files[header] = source(header)
    files[filename] = text
    return files


@functools.cache
def module(filename: str) -> Any:
    """Compile a kernel file with NVRTC (cached per process)."""
    import cupy

    return cupy.RawModule(
        code=source(filename), options=("-std=c++17", f"-I{KERNEL_DIR}"), name_expressions=None
    )


@functools.cache
def l2_bytes() -> int:
    """The GPU's L2 cache size in bytes (50 MiB on the H100)."""
    import cupy

    return int(cupy.cuda.Device().attributes["L2CacheSize"])


def function(filename: str, name: str) -> Any:
    return module(filename).get_function(name)


ROW_LIMIT = 2**31 - 1  # the row kernels index rows with 32-bit unsigned arithmetic


def row_block(width: int, threads: int = THREADS_1D) -> tuple[int, int]:
    """(bx, by) for a row kernel: bx threads walk a row (a power of two, 8..threads), by rows."""
    bx = 8
    while bx < min(width, threads):
        bx *= 2
    return bx, threads // bx


ROW_GRID_CAP = 4096  # blocks; the row kernels loop over further rows (a few waves on any GPU)
# reflect pad's rows are short and carry little work each: a larger grid keeps more of them in
# flight (H100: stride2 0.0446 -> 0.0425 ms, resnet56 0.0252 -> 0.0245 ms; bench/NOTES.md)
GRID_CAPS = {"reflect_pad2d": 16384}


def row_grid(rows: int, width: int, kernel: str = "") -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of row kernel `kernel` over `rows` rows of `width` elements (grid capped)."""
    bx, by = row_block(width)
    cap = GRID_CAPS.get(kernel, ROW_GRID_CAP)
    return (max(1, min(cap, -(-rows // by))), 1, 1), (bx, by, 1)


def kernel_args(*args: Any) -> tuple:
    """Python ints become C `int` (CuPy would pass them as 64-bit); arrays pass through."""
    return tuple(np.int32(a) if isinstance(a, (int, np.integer)) else a for a in args)


class PackedLaunch:
    """A kernel launch whose grid, block and scalar arguments are fixed; per call only the
    source and destination pointers change.

    Why: CuPy's generic RawKernel call re-packs every argument on every call (~7 us on the
    device machine, more than a 6 MB reflect pad takes on the GPU). Here the arguments are
    packed once into C storage, and a call writes two pointers and calls cuLaunchKernel
    (~2 us). The lock keeps two app sessions from interleaving their pointer writes; the
    driver copies the arguments before cuLaunchKernel returns.
    """

    def __init__(self, kernel: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
                 scalars: tuple) -> None:  # fmt: skip
        import ctypes
        import threading

        import cupy
        from cupy.cuda import driver

        self.kernel, self.grid, self.block, self.scalars = kernel, grid, block, scalars
        self._pointers = (ctypes.c_uint64 * 2)()
        ctype = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.uint32): ctypes.c_uint32}
        self._values = [ctype[np.asarray(v).dtype](int(v)) for v in scalars]
        base = ctypes.addressof(self._pointers)
        addresses = [base, base + 8, *(ctypes.addressof(v) for v in self._values)]
        self._params = (ctypes.c_void_p * len(addresses))(*addresses)
        self._params_address = ctypes.addressof(self._params)
        self._dims = (*grid, *block)
        self._launch_kernel = driver.launchKernel
        self._current_stream = cupy.cuda.get_current_stream
        self._function = None  # the driver handle, looked up on the first launch
        self._lock = threading.Lock()

    def __call__(self, src: Any, dst: Any) -> None:
        if self._function is None:
            self._function = self.kernel.kernel.ptr  # compiles / loads the module once
        stream = self._current_stream().ptr
        with self._lock:
            self._pointers[0] = src.data.ptr
            self._pointers[1] = dst.data.ptr
            self._launch_kernel(self._function, *self._dims, 0, stream, self._params_address, 0)


@functools.lru_cache(maxsize=2048)
def _row_launch(filename: str, name: str, rows: int, width: int, ints: tuple[int, ...]) -> PackedLaunch:
    """The packed launch of a row kernel (cached: the same shapes recur)."""
    if rows > ROW_LIMIT:
        raise ValueError(f"{rows} rows exceed the row kernels' limit of {ROW_LIMIT}; split the batch")
    grid, block = row_grid(rows, width, name)
    return PackedLaunch(function(filename, name), grid, block, (np.uint32(rows), *kernel_args(*ints)))


class RowCall:
    """One row-kernel call with its output: allocate it (zeroed when the kernel adds into it),
    launch, return it. The slow path builds one after its checks; ReadyCalls keeps it."""

    def __init__(self, out_shape: tuple[int, ...], launch: PackedLaunch | None, zeroed: bool = False) -> None:
        import cupy

        self.out_shape, self.launch = out_shape, launch
        self._alloc = cupy.zeros if zeroed else cupy.empty

    def __call__(self, src: Any) -> Any:
        dst = self._alloc(self.out_shape, dtype=np.float32)
        if self.launch is not None:  # None: nothing to compute (e.g. an empty batch)
            self.launch(src, dst)
        return dst


class ReadyCalls:
    """The hot path of a repeated GPU call: skip every argument check the first call passed.

    A class keeps recurring launches here, keyed by (input shape, the call's other arguments):
    a classroom reruns the same settings, and for a 6 MB image the Python checks (~10 us)
    cost more than the kernel. Only a C-contiguous float32 CuPy array of a seen shape takes
    this path; anything else goes through the full checks. Bounded: cleared when full. The
    key is the arguments' repr, so 1, 1.0 and True (equal as dict keys) stay apart.
    """

    LIMIT = 4096

    def __init__(self) -> None:
        self._plans: dict[tuple, RowCall] = {}
        self._array_type: type | None = None  # cupy.ndarray, learnt from the first stored call

    def get(self, x: Any, key: tuple) -> RowCall | None:
        """The stored call for this array and key, or None."""
        if type(x) is not self._array_type or x.dtype != np.float32 or not x.flags.c_contiguous:
            return None
        return self._plans.get((x.shape, repr(key)))

    def put(self, x: Any, key: tuple, plan: RowCall) -> None:
        if len(self._plans) >= self.LIMIT:
            self._plans.clear()
        self._array_type = type(x)
        self._plans[(x.shape, repr(key))] = plan


def row_plan(filename: str, name: str, rows: int, width: int, *ints: int) -> PackedLaunch:
    """The launch of row kernel `name(src, dst, rows, ints...)`: one thread row per row of
    `width` threads' work; call it with (src, dst)."""
    return _row_launch(filename, name, rows, width, ints)
