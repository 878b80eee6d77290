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


def grid_1d(total: int, threads: int = THREADS_1D, max_blocks: int = 65535 * 32) -> int:
    """Blocks for a grid-stride loop over `total` elements (capped; the loop covers the rest)."""
    return max(1, min(max_blocks, -(-total // threads)))


def kernel_args(*args: Any) -> tuple:
    """Python ints become C `int` (CuPy would pass them as 64-bit); arrays pass through."""
    import numpy as np

    return tuple(np.int32(a) if isinstance(a, (int, np.integer)) else a for a in args)


def launch_1d(filename: str, name: str, src: Any, dst: Any, total: int, *ints: int) -> None:
    """Launch a grid-stride elementwise kernel `name(src, dst, total, ints...)`."""
    import numpy as np

    kernel = function(filename, name)
    kernel((grid_1d(total),), (THREADS_1D,), (src, dst, np.int64(total), *kernel_args(*ints)))
