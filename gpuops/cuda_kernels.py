"""Load the CUDA sources in gpuops/kernels once per process and launch them.

The compiled modules are process-wide (every app session shares them); the source text is
what the app shows, byte for byte.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

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


def row_grid(rows: int, width: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Grid and block of a row kernel over `rows` rows of `width` elements (grid capped)."""
    bx, by = row_block(width)
    return (max(1, min(ROW_GRID_CAP, -(-rows // by))), 1, 1), (bx, by, 1)


def kernel_args(*args: Any) -> tuple:
    """Python ints become C `int` (CuPy would pass them as 64-bit); arrays pass through."""
    import numpy as np

    return tuple(np.int32(a) if isinstance(a, (int, np.integer)) else a for a in args)


@functools.lru_cache(maxsize=2048)
def _row_launch(filename: str, name: str, rows: int, width: int, ints: tuple[int, ...]) -> tuple:
    """Kernel, grid, block and packed scalars of a row launch (cached: the same shapes recur)."""
    import numpy as np

    if rows > ROW_LIMIT:
        raise ValueError(f"{rows} rows exceed the row kernels' limit of {ROW_LIMIT}; split the batch")
    grid, block = row_grid(rows, width)
    return function(filename, name), grid, block, (np.uint32(rows), *kernel_args(*ints))


def launch_rows(filename: str, name: str, src: Any, dst: Any, rows: int, width: int, *ints: int) -> None:
    """Launch row kernel `name(src, dst, rows, ints...)`: one thread row per row of `width`."""
    kernel, grid, block, scalars = _row_launch(filename, name, rows, width, ints)
    kernel(grid, block, (src, dst, *scalars))
