"""Every GPU kernel launch goes through here: one `Launch` value, one loader, one launch path.

An operation runs check -> plan -> run. Its plan builds a `Launch`: which kernel of which
file, grid, block, shared memory, the scalar arguments by name, and a thread map that says
which block and thread writes each output. `run(launch, arrays)` hands exactly that to the
driver, and the app draws "which thread computed this cell" from the same value
(`launch.thread_of(...)`), so the picture is the launch that ran. The text the app shows is
the kernel's span of its .cu file (`kernel_span`), header included.

Compiled modules are cached per device; kernels are compiled by NVRTC on first use.
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from gpuops import dependent_launch, sm90a
from gpuops.cache import Memo, memoised
from gpuops.index_math import INT32_MAX, ceil_div

KERNEL_DIR = Path(__file__).with_name("kernels")
GRID_YZ_LIMIT = 65535  # blocks along grid y and z; along x the limit is INT32_MAX
SHARED_LIMIT = 48 * 1024  # bytes of shared memory a block gets without opting in
TRACE_OPTION = "-DCONV_EXPLORER_TRACE"


# ---- which thread writes which output ---------------------------------------------------------
@dataclass(frozen=True)
class ThreadRef:
    """One thread of a launch; `step` counts the passes of a loop that visits several outputs
    (a grid-stride loop over rows, threads walking along a row), 0 for the first."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    step: tuple[int, ...] = ()

    def trace_id(self, grid: tuple[int, int, int], block_dim: tuple[int, int, int]) -> int:
        """The id a trace build records for this thread (see index_math.cuh)."""
        bx, by, bz = self.block
        tx, ty, tz = self.thread
        block = (bz * grid[1] + by) * grid[0] + bx
        return block * 1024 + (tz * block_dim[1] + ty) * block_dim[0] + tx + 1


class ThreadMap(Protocol):
    """How a kernel spreads its outputs over threads (one class per launch pattern)."""

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef: ...

    def describe(self) -> str: ...


@dataclass(frozen=True, eq=True)
class Launch:
    """One kernel launch, complete: what `run` passes to the driver and what the app draws."""

    kernel: str  # entry point in `source`, e.g. "conv2d_v3_register_tiled"
    source: str  # file in gpuops/kernels
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    arrays: tuple[str, ...]  # the pointer parameters, in order ("x", "w", "bias", "y")
    args: tuple[tuple[str, Any], ...]  # the scalar parameters that follow, by name (np.int32 / np.uint32)
    threads: Any = field(compare=True)  # a ThreadMap
    index: str = ""  # what thread_of takes, e.g. "(n, m, oh, ow) of y"
    # a programmatic dependent launch (gpuops.dependent_launch): it may start while the launch
    # before it in the stream runs, and its kernel waits (griddepcontrol.wait) before it reads
    # what that launch writes
    dependent: bool = False

    def __hash__(self) -> int:
        # computed once: a Launch is the key of the packed-launch cache on every slow-path call
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(
                (
                    self.kernel,
                    self.source,
                    self.grid,
                    self.block,
                    self.shared_bytes,
                    self.args,
                    self.threads,
                    self.dependent,
                )
            )
            object.__setattr__(self, "_hash", cached)
        return cached

    def thread_of(self, *index: int) -> ThreadRef:
        """The block and thread that write output `index` (see `self.index`)."""
        return self.threads.thread_of(self, tuple(int(i) for i in index))

    def arg(self, name: str) -> int:
        return int(dict(self.args)[name])

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def describe(self) -> str:
        """One line for a caption: grid, block and how outputs map to threads."""
        early = "; it starts while the launch before it runs (programmatic dependent launch)"
        return (
            f"{self.kernel}<<<grid {self.grid}, block {self.block}"
            f"{f', {self.shared_bytes:,} B shared' if self.shared_bytes else ''}>>>: "
            f"{self.threads.describe()}{early if self.dependent else ''}"
        )


def ints(**named: int) -> tuple[tuple[str, Any], ...]:
    """Scalar kernel arguments as C `int`s (CuPy would pass Python ints as 64-bit)."""
    return tuple((name, np.int32(value)) for name, value in named.items())


def longs(**named: int) -> tuple[tuple[str, Any], ...]:
    """Scalar kernel arguments as C `long long`s (offsets that may pass 2^31)."""
    return tuple((name, np.int64(value)) for name, value in named.items())


def check_grid(grid: tuple[int, int, int], what: str) -> None:
    """Refuse a grid the hardware cannot launch, naming the dimension and the limit."""
    limits = (INT32_MAX, GRID_YZ_LIMIT, GRID_YZ_LIMIT)
    for axis, size, limit in zip("xyz", grid, limits, strict=True):
        if size > limit:
            raise ValueError(
                f"{what} needs {size:,} blocks along grid {axis}, more than the CUDA limit {limit:,}"
            )


# ---- the row-kernel pattern (reflect pad, unfold, fold) ----------------------------------------------
ROW_THREADS = 256  # threads per block of a row kernel
ROW_GRID_CAP = 4096  # blocks; row kernels loop over further rows (grid-stride)


def row_block(threads_per_row: int) -> tuple[int, int, int]:
    """(bx, by, 1): bx threads walk a row (a power of two, 8..256, enough for the row's work),
    by = 256 / bx rows per block. The one place threads-per-row is decided."""
    bx = 8
    while bx < min(threads_per_row, ROW_THREADS):
        bx *= 2
    return bx, ROW_THREADS // bx, 1


@dataclass(frozen=True)
class RowMap:
    """A row kernel: the output (index space `shape`) is cut into rows of `row_length` cells;
    block b takes rows b*by .. b*by+by-1, then b*by + grid*by on its next pass; thread x of a row
    takes cell x, x + bx, ... (or, with cells=4, the 4-cell groups x, x + bx, ...).
    head=True: the row first writes 0-3 single cells up to a 16-byte boundary (reflect pad)."""

    shape: tuple[int, ...]
    row_length: int
    cells: int = 1
    head: bool = False

    def row_col(self, index: tuple[int, ...]) -> tuple[int, int]:
        flat = int(np.ravel_multi_index(index, self.shape))
        return divmod(flat, self.row_length)

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        row, col = self.row_col(index)
        bx, by, _ = launch.block
        row_pass, block = divmod(row // by, launch.grid[0])
        if self.head:  # reflect: head cells, then 4-cell groups, then tail cells
            W = self.row_length
            head = min(W, (4 - (row & 3) * (W & 3)) & 3)
            groups = (W - head) >> 2
            if col < head:
                phase, t, k = 0, col, 0
            elif col < head + 4 * groups:
                phase, (k, t) = 1, divmod((col - head) // 4, bx)
            else:
                phase, (k, t) = 2, divmod(col - head - 4 * groups, bx)
            return ThreadRef((block, 0, 0), (t, row % by, 0), (row_pass, phase, k))
        k, t = divmod(col // self.cells, bx)
        return ThreadRef((block, 0, 0), (t, row % by, 0), (row_pass, k))

    def describe(self) -> str:
        per = "4 neighbouring cells (one 16-byte store)" if self.cells == 4 else "one cell"
        if self.head:
            per = (
                "4 neighbouring cells per 16-byte store, after 0-3 single cells that reach a 16-byte boundary"
            )
        return f"one thread row per output row of {self.row_length} cells; each thread writes {per} per step"


def row_launch(
    kernel: str,
    source: str,
    arrays: tuple[str, ...],
    shape: tuple[int, ...],
    row_length: int,
    args: tuple[tuple[str, Any], ...],
    *,
    cells: int = 1,
    head: bool = False,
    grid_cap: int = ROW_GRID_CAP,
    index: str = "",
) -> Launch:
    """The Launch of a row kernel over `shape` (rows of `row_length`); `rows` goes first in args."""
    rows = int(np.prod(shape)) // max(1, row_length)
    if rows > INT32_MAX:  # row kernels count rows in 32 bits
        raise ValueError(f"{rows:,} rows exceed the row kernels' limit of {INT32_MAX:,}; split the batch")
    threads_per_row = max(1, row_length // cells if cells > 1 else row_length)
    block = row_block(threads_per_row)
    grid = (max(1, min(grid_cap, ceil_div(rows, block[1]))), 1, 1)
    return Launch(
        kernel,
        source,
        grid,
        block,
        0,
        arrays,
        (("rows", np.uint32(rows)), *args),
        RowMap(tuple(shape), row_length, cells, head),
        index,
    )


# ---- loading kernels (once per device) -----------------------------------------------------------
@memoised("kernel_source", 64)
def source_text(filename: str) -> str:
    """The verbatim text of a kernel file (also readable without a GPU)."""
    return (KERNEL_DIR / filename).read_text(encoding="utf-8")


_modules = Memo("compiled_modules", 64)


def module(filename: str, options: tuple[str, ...] = ()) -> Any:
    """The compiled module of a kernel file on the current device (NVRTC, cached per device;
    gpuops.sm90a for files built for one architecture)."""
    import cupy

    device = cupy.cuda.runtime.getDevice()

    def compile_it() -> Any:
        flags = ("-std=c++17", f"-I{KERNEL_DIR}", *options)
        if sm90a.needs_target(filename):  # built for one architecture: NVRTC's own target option
            return sm90a.compile_module(filename, source_text(filename), flags)
        return cupy.RawModule(code=source_text(filename), options=flags)

    return _modules.get_or_make((device, filename, options), compile_it)


def function(filename: str, name: str, options: tuple[str, ...] = ()) -> Any:
    return module(filename, options).get_function(name)


@memoised("l2_bytes", 16)
def l2_bytes(device: int = 0) -> int:
    """A GPU's L2 cache size in bytes (50 MiB on the H100)."""
    import cupy

    return int(cupy.cuda.Device(device).attributes["L2CacheSize"])


# ---- the one launch path ---------------------------------------------------------------------------
class _Packed:
    """A launch whose grid, block and scalar arguments are packed once into C storage; per
    call only the array pointers change before cuLaunchKernel.

    Why: CuPy's generic kernel call re-packs every argument on every call (~7 us on the H100
    host, more than a 6 MB reflect pad takes on the GPU); this costs ~2 us. The lock keeps two
    app sessions from interleaving their pointer writes; the driver copies the arguments before
    cuLaunchKernel returns.
    """

    _CTYPES: ClassVar = {
        np.dtype(np.int32): ctypes.c_int32,
        np.dtype(np.uint32): ctypes.c_uint32,
        np.dtype(np.int64): ctypes.c_int64,
    }

    def __init__(self, launch: Launch, options: tuple[str, ...] = ()) -> None:
        import cupy
        from cupy.cuda import driver

        self.launch = launch
        self._kernel = function(launch.source, launch.kernel, options)
        self._pointers = (ctypes.c_uint64 * len(launch.arrays))()
        self._values = [self._CTYPES[np.asarray(v).dtype](int(v)) for _, v in launch.args]
        base = ctypes.addressof(self._pointers)
        addresses = [base + 8 * i for i in range(len(launch.arrays))]
        addresses += [ctypes.addressof(v) for v in self._values]
        self._params = (ctypes.c_void_p * len(addresses))(*addresses)
        self._params_address = ctypes.addressof(self._params)
        self._dims = (*launch.grid, *launch.block)
        self._launch_kernel = driver.launchKernel
        self._current_stream = cupy.cuda.get_current_stream
        self._function: int | None = None  # the driver handle, looked up on the first launch
        # launch.dependent: cuLaunchKernelEx with its attribute, where the driver has it
        self._dependent = dependent_launch.launcher(launch) if launch.dependent else None
        self._lock = threading.Lock()

    def __call__(self, arrays: tuple[Any, ...]) -> None:
        if self._function is None:
            self._function = self._kernel.kernel.ptr  # loads the module on first use
            _allow_shared(self._kernel, self.launch.shared_bytes)
        stream = self._current_stream().ptr
        with self._lock:
            for i, a in enumerate(arrays):
                self._pointers[i] = 0 if a is None else a.data.ptr
            if self._dependent is not None:
                self._dependent(self._function, stream, self._params_address)
            else:
                self._launch_kernel(
                    self._function, *self._dims, self.launch.shared_bytes, stream, self._params_address, 0
                )
        if _recording is not None:
            _recording.append(self.launch)


_packed = Memo("packed_launches", 4096)
_shared_lock = threading.Lock()


def _allow_shared(kernel: Any, shared_bytes: int) -> None:
    """Opt the kernel in to shared_bytes of dynamic shared memory where it needs more than the
    default. The limit belongs to the kernel, not to a launch, and only ever grows: v17's blocks
    take a size that depends on the layer, and a later, smaller launch of the same kernel must
    not shrink it under an earlier one (the driver refuses that launch: CUDA_ERROR_INVALID_VALUE)."""
    if shared_bytes <= SHARED_LIMIT:
        return
    with _shared_lock:
        if kernel.max_dynamic_shared_size_bytes < shared_bytes:
            kernel.max_dynamic_shared_size_bytes = shared_bytes


def packed(launch: Launch) -> _Packed:
    """The packed form of a launch on the current device (cached)."""
    import cupy

    return _packed.get_or_make((cupy.cuda.runtime.getDevice(), launch), lambda: _Packed(launch))


def run(launch: Launch, *arrays: Any) -> None:
    """Launch on the current device and stream: pointers for `launch.arrays`, in order
    (None passes a NULL pointer, e.g. no bias)."""
    if len(arrays) != len(launch.arrays):
        raise ValueError(
            f"{launch.kernel} takes {len(launch.arrays)} arrays {launch.arrays}, got {len(arrays)}"
        )
    packed(launch)(arrays)


class Call:
    """One planned call with its output: allocate it (zeroed when the kernel adds into it),
    launch, return it. Ops build one from their plan; the ready-call cache below keeps it for the
    next call with the same arguments (the hot path of a classroom that reruns the same settings)."""

    def __init__(self, out_shape: tuple[int, ...], launch: Launch | None, zeroed: bool = False) -> None:
        import cupy

        self.out_shape, self.launch = out_shape, launch
        self._alloc = cupy.zeros if zeroed else cupy.empty
        self._packed = packed(launch) if launch is not None else None

    def __call__(self, *inputs: Any) -> Any:
        out = self._alloc(self.out_shape, dtype=np.float32)
        if self._packed is not None:  # None: nothing to compute (an empty batch)
            self._packed((*inputs, out))
        return out


# ---- the ready-call cache: a repeat GPU call skips its checks ------------------------------------------
_gpu_array: type | None = None
_ready = Memo("ready_calls", 4096)


def ready_device(*arrays: Any) -> int | None:
    """The current device when every array (None allowed) is a C-contiguous float32 CuPy array,
    else None: only such calls may skip the checks on a repeat."""
    global _gpu_array
    if _gpu_array is None:
        if not type(arrays[0]).__module__.startswith("cupy"):
            return None
        import cupy

        _gpu_array = cupy.ndarray
    for a in arrays:
        if a is not None and (type(a) is not _gpu_array or a.dtype != np.float32 or not a.flags.c_contiguous):
            return None
    import cupy

    return cupy.cuda.runtime.getDevice()


def ready_key(op: str, arrays: tuple[Any, ...], args: Any) -> tuple | None:
    """The key of a GPU call in the ready-call cache: the operation, the device, the arrays'
    shapes and the other arguments as the caller gave them (by repr: 1 and 1.0 differ). None
    unless every array is a C-contiguous float32 CuPy array (anything else goes through the
    full checks and conversions)."""
    device = ready_device(*arrays)
    if device is None:
        return None
    return (op, device, tuple(None if a is None else a.shape for a in arrays), repr(args))


def ready_call(key: tuple | None) -> Any:
    """The call a checked plan made for this key before (None: not seen, or not a ready call)."""
    return None if key is None else _ready.get(key)


def keep_ready(key: tuple | None, call: Any) -> None:
    """Remember the call that the checks and the plan gave for this key (no-op for key None)."""
    if key is not None:
        _ready.put(key, call)


# ---- tests: what really ran, and who wrote each output -------------------------------------------
_recording: list[Launch] | None = None


@contextlib.contextmanager
def recorded() -> Iterator[list[Launch]]:
    """Collect every Launch handed to the driver inside the block (for tests)."""
    global _recording
    previous, _recording = _recording, []
    try:
        yield _recording
    finally:
        _recording = previous


def traced(launch: Launch, *arrays: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    """Run `launch` built with -DCONV_EXPLORER_TRACE; return, for every element of the last
    array (the output), the trace id of the thread that stored it (0: none), and the gridDim
    and blockDim the kernel saw."""
    import cupy

    out = arrays[-1]
    writer = cupy.zeros(out.size, dtype=cupy.uint64)
    mod = module(launch.source, (TRACE_OPTION,))
    address = np.array([writer.data.ptr], dtype=np.uint64)
    mod.get_global("trace_writer").copy_from_host(address.ctypes.data, address.nbytes)
    _Packed(launch, (TRACE_OPTION,))(arrays)
    cupy.cuda.runtime.deviceSynchronize()
    dims = np.zeros(6, dtype=np.uint32)
    mod.get_global("trace_dims").copy_to_host(dims.ctypes.data, dims.nbytes)
    return writer.get().reshape(out.shape), tuple(int(v) for v in dims)


# ---- the source the app shows -------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceSpan:
    """The lines of a kernel file that define one kernel, from its version header to its end."""

    filename: str
    first_line: int  # 1-based, inclusive
    last_line: int
    text: str


_HEADER = re.compile(r"^// ={20,}")


@memoised("kernel_spans", 256)
def kernel_span(filename: str, kernel: str) -> SourceSpan:
    """The kernel's version header (the `// ====` block above it), anything between, and its body."""
    lines = source_text(filename).splitlines()
    entry = re.compile(rf"__global__\s+void\s+(__launch_bounds__\([^)]*\)\s+)?{re.escape(kernel)}\s*\(")
    start = next((i for i, line in enumerate(lines) if entry.search(line)), None)
    if start is None:
        raise ValueError(f"kernel {kernel!r} is not defined in {filename}")
    first = start
    while first > 0 and not _HEADER.match(lines[first]):
        first -= 1
    while first > 0 and lines[first - 1].startswith("//"):  # the header's opening rule and text
        first -= 1
    depth, seen, last = 0, False, start
    for last in range(start, len(lines)):
        depth += lines[last].count("{") - lines[last].count("}")
        seen = seen or "{" in lines[last]
        if seen and depth == 0:
            break
    return SourceSpan(filename, first + 1, last + 1, "\n".join(lines[first : last + 1]))


def file_preamble(filename: str) -> str:
    """The file's opening comment and shared helpers: everything before its first version header."""
    lines = source_text(filename).splitlines()
    cut = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
    return "\n".join(lines[:cut]).rstrip()


def includes(filename: str) -> list[str]:
    """Header files a kernel file includes (the app shows them too)."""
    return [
        line.split('"')[1] for line in source_text(filename).splitlines() if line.startswith('#include "')
    ]


def kernel_signature(filename: str, kernel: str) -> tuple[list[str], list[str]]:
    """(pointer parameter names, scalar parameter names) of a kernel, parsed from its source:
    tests check them against the Launch's arrays and args."""
    text = kernel_span(filename, kernel).text
    params = re.sub(r"//[^\n]*", "", text[text.index(kernel + "(") + len(kernel) + 1 :])
    params = params[: params.index(")")]
    pointers, scalars = [], []
    for part in (p.strip() for p in params.split(",")):
        name = re.split(r"[\s*]+", part)[-1]
        (pointers if "*" in part else scalars).append(name)
    return pointers, scalars
