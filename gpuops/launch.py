"""Launch geometry of every GPU kernel: grid, block, tiles and shared memory.

Computed here once, used by the launches and returned to the app, so the picture of
"which block and thread computed this pixel" is the launch that actually ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuops.cuda_kernels import row_grid
from gpuops.geometry import WindowGeometry

TILE = 16  # output tile edge of the conv kernels: 16 x 16 = 256 threads per block
FILTERS_PER_BLOCK = 8  # must equal FILTERS_PER_BLOCK in kernels/conv2d.cu
PIXELS_PER_THREAD = 2  # must equal PIXELS_PER_THREAD in kernels/conv2d.cu (tiled kernel)
SHARED_LIMIT = 48 * 1024  # bytes of shared memory a block gets without opting in
MAX_CHANNELS_PER_STAGE = 8
GRID_YZ_LIMIT = 65535
IG_BM, IG_BN = 64, 128  # must equal IG_BM / IG_BN in kernels/conv2d.cu (implicit GEMM block tile)
IG_THREADS = (IG_BM // 8) * (IG_BN // 8)  # each thread owns 8 filters x 8 pixels
PIXEL_LIMIT = 2**31 - 1  # the implicit GEMM numbers the batch's pixels with 32-bit ints


@dataclass(frozen=True)
class ConvLaunch:
    """A conv kernel launch: grid (tiles, filter blocks, batch), one thread per output pixel."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    tiles_w: int
    tiles_h: int
    filters_per_block: int = 1
    filters_per_group: int = 1
    channels_per_stage: int = 0
    in_tile: tuple[int, int] = (0, 0)  # shared-memory input tile with halo (rows, cols)
    pitch: int = 0  # floats between shared-memory rows (>= cols; padded to avoid bank conflicts)
    shared_bytes: int = 0
    pixels_per_thread: int = 1  # along a row, blockDim.x apart
    out_hw: tuple[int, int] = (0, 0)  # (H_out, W_out), for the implicit GEMM's pixel numbering

    @property
    def tile(self) -> tuple[int, int]:
        """Output pixels one block computes: (rows, columns)."""
        return self.block[1], self.block[0] * self.pixels_per_thread

    def thread_of(
        self, n: int, m: int, oh: int, ow: int
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(blockIdx, threadIdx) of the thread that writes output (n, m, oh, ow)."""
        if self.kernel == "conv2d_implicit_gemm":
            return self._gemm_thread_of(n, m, oh, ow)
        th, tw = self.tile
        if self.kernel == "conv2d_direct":
            by = m
        else:
            group, within = divmod(m, self.filters_per_group)
            m_blocks = -(-self.filters_per_group // self.filters_per_block)
            by = group * m_blocks + within // self.filters_per_block
        bx = (oh // th) * self.tiles_w + ow // tw
        return (bx, by, n), ((ow % tw) % self.block[0], oh % th, 0)

    def _gemm_thread_of(
        self, n: int, m: int, oh: int, ow: int
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """Implicit GEMM: pixel p = n*L + oh*W_out + ow picks blockIdx.x, the filter blockIdx.y;
        inside the 8 x 8 thread tiles, halves of 4 sit IG_BM/2 (IG_BN/2) apart."""
        L = self.out_hw[0] * self.out_hw[1]
        p = n * L + oh * self.out_hw[1] + ow
        group, within = divmod(m, self.filters_per_group)
        m_blocks = -(-self.filters_per_group // IG_BM)
        q, r = p % IG_BN, within % IG_BM
        tn, tm = (q % (IG_BN // 2)) // 4, (r % (IG_BM // 2)) // 4
        return (p // IG_BN, group * m_blocks + within // IG_BM, 0), (tm * (IG_BN // 8) + tn, 0, 0)

    def filters_of_block(self, block_y: int) -> range:
        """Filters computed by blocks with this blockIdx.y."""
        if self.kernel == "conv2d_direct":
            return range(block_y, block_y + 1)
        if self.kernel == "conv2d_implicit_gemm":
            m_blocks = -(-self.filters_per_group // IG_BM)
            group, mb = divmod(block_y, m_blocks)
            start = group * self.filters_per_group + mb * IG_BM
            return range(start, min(start + IG_BM, (group + 1) * self.filters_per_group))
        m_blocks = -(-self.filters_per_group // self.filters_per_block)
        group, mb = divmod(block_y, m_blocks)
        start = group * self.filters_per_group + mb * self.filters_per_block
        stop = min(start + self.filters_per_block, (group + 1) * self.filters_per_group)
        return range(start, stop)


def _check_grid(N: int, blocks_y: int) -> None:
    if N > GRID_YZ_LIMIT:
        raise ValueError(f"batch size {N} exceeds the CUDA grid limit {GRID_YZ_LIMIT}")
    if blocks_y > GRID_YZ_LIMIT:
        raise ValueError(f"{blocks_y} filter blocks exceed the CUDA grid limit {GRID_YZ_LIMIT}")


def conv_direct_launch(g: WindowGeometry, N: int, M: int) -> ConvLaunch:
    tiles_h, tiles_w = -(-g.H_out // TILE), -(-g.W_out // TILE)
    _check_grid(N, M)
    return ConvLaunch("conv2d_direct", (tiles_h * tiles_w, M, N), (TILE, TILE, 1), tiles_w, tiles_h)


def _halo(tile: int, k: int, stride: int, dilation: int) -> int:
    """Input rows a tile of `tile` outputs reads: (tile-1)*stride + (k-1)*dilation + 1."""
    return (tile - 1) * stride + (k - 1) * dilation + 1


def _pitch(in_w: int, tile: int, stride_h: int) -> int:
    """Shared-memory row pitch: a warp of 16-wide blocks covers two thread rows, stride_h*pitch
    floats apart; pitch = 16 (mod 32) puts them in disjoint banks when stride_h is 1."""
    if tile != 16 or stride_h != 1:
        return in_w
    return in_w + (16 - in_w % 32) % 32


def conv_tiled_launch(g: WindowGeometry, N: int, C: int, M: int, groups: int) -> ConvLaunch:
    """Pick the largest tile (16 down to 1 thread a side) whose halo and filters fit in shared memory."""
    Cg, Mg = C // groups, M // groups
    for tile in (TILE, 8, 4, 2, 1):
        in_h = _halo(tile, g.KH, g.stride_h, g.dil_h)
        in_w = _halo(tile * PIXELS_PER_THREAD, g.KW, g.stride_w, g.dil_w)
        pitch = _pitch(in_w, tile, g.stride_h)
        per_channel = 4 * (in_h * pitch + FILTERS_PER_BLOCK * g.KH * g.KW)
        if per_channel + 16 <= SHARED_LIMIT:
            break
    else:
        raise ValueError(
            f"the tiled kernel needs {per_channel} bytes of shared memory per channel for this "
            f"kernel size, stride and dilation, more than the limit {SHARED_LIMIT}; "
            "use algorithm='direct' or 'im2col'"
        )
    cb = max(1, min(Cg, MAX_CHANNELS_PER_STAGE, (SHARED_LIMIT - 16) // per_channel))
    m_blocks = -(-Mg // FILTERS_PER_BLOCK)
    tiles_h, tiles_w = -(-g.H_out // tile), -(-g.W_out // (tile * PIXELS_PER_THREAD))
    _check_grid(N, groups * m_blocks)
    return ConvLaunch(
        "conv2d_tiled",
        (tiles_h * tiles_w, groups * m_blocks, N),
        (tile, tile, 1),
        tiles_w,
        tiles_h,
        filters_per_block=FILTERS_PER_BLOCK,
        filters_per_group=Mg,
        channels_per_stage=cb,
        in_tile=(in_h, in_w),
        pitch=pitch,
        shared_bytes=4 * ((cb * in_h * pitch + 3) // 4 * 4 + cb * FILTERS_PER_BLOCK * g.KH * g.KW),
        pixels_per_thread=PIXELS_PER_THREAD,
    )


def conv_implicit_gemm_launch(g: WindowGeometry, N: int, M: int, groups: int) -> ConvLaunch:
    """One block per IG_BM filters x IG_BN pixels of the whole batch (pixels run across samples)."""
    pixels = N * g.H_out * g.W_out
    if pixels > PIXEL_LIMIT:
        raise ValueError(
            f"implicit_gemm numbers the batch's {pixels} output pixels with 32-bit ints (limit "
            f"{PIXEL_LIMIT}); split the batch or use algorithm='tiled'"
        )
    Mg = M // groups
    m_blocks = -(-Mg // IG_BM)
    _check_grid(1, groups * m_blocks)
    return ConvLaunch(
        "conv2d_implicit_gemm",
        (max(1, -(-pixels // IG_BN)), groups * m_blocks, 1),
        (IG_THREADS, 1, 1),
        0,
        0,
        filters_per_block=IG_BM,
        filters_per_group=Mg,
        shared_bytes=0,  # static __shared__ arrays: 2 * 8 * (IG_BM + IG_BN) floats = 12 KiB
        out_hw=(g.H_out, g.W_out),
    )


@dataclass(frozen=True)
class RowLaunch:
    """A row kernel: block (bx, by) handles `by` rows; the bx threads of a row walk along it."""

    kernel: str
    rows: int
    width: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    def thread_of(
        self, row: int, col: int
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int]]:
        """(blockIdx, threadIdx, (row pass, column step)) of the thread that handles (row, col).

        The grid is capped, so blocks loop over rows (row pass) and threads along a row (step).
        """
        bx, by = self.block[0], self.block[1]
        row_pass, block = divmod(row // by, self.grid[0])
        return (block, 0, 0), (col % bx, row % by, 0), (row_pass, col // bx)


def row_launch(kernel: str, rows: int, width: int) -> RowLaunch:
    grid, block = row_grid(rows, width, kernel)
    return RowLaunch(kernel, rows, width, grid, block)
