"""Launch geometry of every GPU kernel: grid, block, tiles and shared memory.

Computed here once, used by the launches and returned to the app, so the picture of
"which block and thread computed this pixel" is the launch that actually ran.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuops.cuda_kernels import THREADS_1D, grid_1d
from gpuops.geometry import WindowGeometry

TILE = 16  # output tile edge of the conv kernels: 16 x 16 = 256 threads per block
FILTERS_PER_BLOCK = 8  # must equal FILTERS_PER_BLOCK in kernels/conv2d.cu
SHARED_LIMIT = 48 * 1024  # bytes of shared memory a block gets without opting in
MAX_CHANNELS_PER_STAGE = 8
GRID_YZ_LIMIT = 65535


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
    shared_bytes: int = 0

    @property
    def tile(self) -> tuple[int, int]:
        return self.block[1], self.block[0]

    def thread_of(
        self, n: int, m: int, oh: int, ow: int
    ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(blockIdx, threadIdx) of the thread that writes output (n, m, oh, ow)."""
        th, tw = self.tile
        if self.kernel == "conv2d_direct":
            by = m
        else:
            group, within = divmod(m, self.filters_per_group)
            m_blocks = -(-self.filters_per_group // self.filters_per_block)
            by = group * m_blocks + within // self.filters_per_block
        bx = (oh // th) * self.tiles_w + ow // tw
        return (bx, by, n), (ow % tw, oh % th, 0)

    def filters_of_block(self, block_y: int) -> range:
        """Filters computed by blocks with this blockIdx.y."""
        if self.kernel == "conv2d_direct":
            return range(block_y, block_y + 1)
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


def conv_tiled_launch(g: WindowGeometry, N: int, C: int, M: int, groups: int) -> ConvLaunch:
    """Pick the largest tile (16, 8, 4) whose halo and filters fit the shared-memory limit."""
    Cg, Mg = C // groups, M // groups
    for tile in (TILE, 8, 4):
        in_h, in_w = _halo(tile, g.KH, g.stride_h, g.dil_h), _halo(tile, g.KW, g.stride_w, g.dil_w)
        per_channel = 4 * (in_h * in_w + FILTERS_PER_BLOCK * g.KH * g.KW)
        if per_channel <= SHARED_LIMIT:
            break
    else:
        raise ValueError(
            f"the tiled kernel needs {per_channel} bytes of shared memory per channel for this "
            f"kernel size, stride and dilation, more than the limit {SHARED_LIMIT}; "
            "use algorithm='direct' or 'im2col'"
        )
    cb = max(1, min(Cg, MAX_CHANNELS_PER_STAGE, SHARED_LIMIT // per_channel))
    m_blocks = -(-Mg // FILTERS_PER_BLOCK)
    tiles_h, tiles_w = -(-g.H_out // tile), -(-g.W_out // tile)
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
        shared_bytes=cb * per_channel,
    )


@dataclass(frozen=True)
class ElementwiseLaunch:
    """A 1-D grid-stride launch: thread t handles elements t, t + grid*block, ..."""

    kernel: str
    total: int
    grid: tuple[int, int, int]
    block: tuple[int, int, int]

    def thread_of(self, flat_index: int) -> tuple[int, int, int]:
        """(blockIdx.x, threadIdx.x, loop iteration) that handles one flat element."""
        per_pass = self.grid[0] * self.block[0]
        iteration, pos = divmod(flat_index, per_pass)
        return pos // self.block[0], pos % self.block[0], iteration


def elementwise_launch(kernel: str, total: int) -> ElementwiseLaunch:
    return ElementwiseLaunch(kernel, total, (grid_1d(total), 1, 1), (THREADS_1D, 1, 1))
