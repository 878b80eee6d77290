"""conv2d with PyTorch F.conv2d semantics: check -> plan -> run, on CuPy or NumPy.

The algorithms, in the order a student meets them (kernels/conv2d.cu holds v1-v4):
  direct         v1: one thread per output element
  tiled_basic    v2: v1 + the block's input tile staged in shared memory (PMPP)
  tiled          v3: v2 + register blocking (2 pixels x 8 filters per thread); for filters
                 that see one channel (depthwise layers, greyscale images) v15: a thread walks
                 the input rows of a column of outputs once, in registers (3x3 and 5x5
                 windows, stride 1 or 2), or elsewhere v6: one group per block, all its
                 filters from one staged tile
  implicit_gemm  v4: im2col's GEMM without storing X_unroll
  im2col         unfold + one cuBLAS GEMM (gpuops/im2col.py); for 1x1 kernels a plain GEMM
  auto           on the GPU the fastest of them for the shape, measured once (cuDNN's
                 benchmark mode); on the CPU, direct

and, opt-in because they round the operands (sums stay fp32; `auto` never picks them):
  implicit_gemm_tf32  v5: v4 on the tensor cores in TF32 (10 mantissa bits, like PyTorch's
                      allow_tf32; error ~3e-4 relative instead of ~1e-7)
  pipelined_tf32      v7 / v8: the tensor-core kernel that keeps the tensor cores busy (wide,
                      3-deep cp.async stages, register-sized warp tiles, ldmatrix; v8 adds
                      16-byte input copies where stride-1 rows allow)
                      and v10 where each group's channels fill whole 32-deep stages: x and w
                      copied once to channels-last TF32, so a stage is one tap and the input
                      copies need no gather; on Hopper (H100, H200) v12 instead: v10 with the
                      warpgroup MMA (wgmma, kernels/conv2d_hopper.cu, gpuops/sm90a.py),
                      and on 1x1 layers of stride 1 there v16: wgmma with the pixels from
                      registers, so x is read as NCHW holds it (no copies); on groups of up
                      to 32 filters at stride 1 v17: v16 on a halo tile of x, taps as offsets
  pipelined_bf16      v9: v8 with bf16 operands and m16n8k16 (error ~2e-3 relative)
                      and v11 where v10 would run: v10 with the copies rounded to bf16 (half
                      the bytes, rounded once), stages of one tap x 64 (or 32) channels; v12
                      on Hopper where the stages hold 64 channels
  pipelined_fp16      v9 / v11 / v12 with fp16 operands (error ~3e-4; values past 65504 overflow)
  pixel_rows_tf32     v14 (Hopper only): v12 with the pixels on the tensor cores' 64 rows and the
                      filters on their 32 or 64 columns, for groups of few filters (v12's rows
                      are filters, half empty where a group has 32)

and on Hopper only, in fp32 accuracy (so `auto` measures it beside the fp32 kernels there):
  pipelined_3xtf32    v13: v12 with every value a pair of TF32 values, three tensor-core products
                      per term, the tensor cores' sums moved to fp32 registers every
                      X3_PROMOTE stages (error ~5e-7 relative, as the fp32 kernels': 3e-7 to 2e-6)
  pixel_rows_3xtf32   v14 in v13's precision: pixels on the rows, fp32 values as TF32 pairs
PRECISIONS names each algorithm's operand precision (v13's and v14's 3xTF32: fp32, carried in pairs).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import autotune, im2col, sm90a
from gpuops.backend import array_module
from gpuops.cache import memoised
from gpuops.checks import (
    Layer,
    WindowGeometry,
    as_float32,
    as_pair,
    check_groups,
    check_reflect_pads,
    conv_geometry,
    layer_shapes,
    window_args,
)
from gpuops.cublas import MIN_BUDGET
from gpuops.index_math import INT32_MAX, ceil_div, tap_slices
from gpuops.launch import (
    GRID_YZ_LIMIT,
    SHARED_LIMIT,
    Call,
    Launch,
    ThreadRef,
    check_grid,
    ints,
    keep_ready,
    longs,
    packed,
    ready_call,
    ready_key,
)
from gpuops.reflect_pad import reflect_pad

ALGORITHMS = ("direct", "tiled_basic", "tiled", "im2col", "implicit_gemm")  # fp32 throughout
# tensor cores: inputs rounded to TF32
TF32_ALGORITHMS = ("implicit_gemm_tf32", "pipelined_tf32", "pixel_rows_tf32")
HALF_ALGORITHMS = ("pipelined_bf16", "pipelined_fp16")  # tensor cores: 16-bit operands, fp32 sums
SPLIT_ALGORITHMS = ("pipelined_3xtf32", "pixel_rows_3xtf32")  # Hopper's tensor cores, fp32 accuracy
PIXEL_ROWS_ALGORITHMS = {"pixel_rows_tf32": "tf32", "pixel_rows_3xtf32": "3xtf32"}  # v14 -> its operands
HOPPER_ALGORITHMS = ("pixel_rows_tf32", *SPLIT_ALGORITHMS)  # sm_90a kernels alone: offered on Hopper only
ALL_ALGORITHMS = ALGORITHMS + TF32_ALGORITHMS + HALF_ALGORITHMS + SPLIT_ALGORITHMS
PRECISIONS = {  # what each algorithm multiplies: its operands' precision (sums are fp32 in all)
    **dict.fromkeys(ALGORITHMS + SPLIT_ALGORITHMS, "fp32"),
    **dict.fromkeys(TF32_ALGORITHMS, "tf32"),
    "pipelined_bf16": "bf16",
    "pipelined_fp16": "fp16",
}
AUTO = "auto"
PADDING_MODES = ("zeros", "reflect")
SOURCE = "conv2d.cu"
KERNELS = {
    "direct": "conv2d_v1_direct",
    "tiled_basic": "conv2d_v2_tiled",
    "tiled": "conv2d_v3_register_tiled",
    "implicit_gemm": "conv2d_v4_implicit_gemm",
    "implicit_gemm_tf32": "conv2d_v5_implicit_gemm_tf32",
    "depthwise": "conv2d_v6_depthwise",  # what "tiled" runs when each filter sees one channel
}
ARRAYS = ("x", "w", "bias", "y")

# launch constants; a CPU test checks they equal the #defines of kernels/conv2d.cu
DIRECT_BLOCK = (16, 16, 1)  # v1: 16 consecutive pixels x 16 filters, as in the source article
TILE = 16  # v2/v3: output tile edge in threads
FILTERS_PER_BLOCK = 8  # v3
PIXELS_PER_THREAD = 2  # v3
DW_PIXELS = 4  # v6: the most outputs per thread
DW_BLOCK_COST = 4096  # v6's tile choice: what a block costs beyond its taps and loads
DW_BLOCKS = ((32, 8), (16, 16), (16, 8), (32, 4), (8, 16), (8, 8), (8, 4), (4, 4), (2, 2), (1, 1))  # (w, h)
DW_ROWS_THREADS = 256  # v15: threads a block
DW_ROWS_KERNELS = {  # v15: (kernel size, stride) -> (its kernel, output rows a thread)
    (3, 1): ("conv2d_v15_depthwise_k3s1", 8),
    (3, 2): ("conv2d_v15_depthwise_k3s2", 4),
    (5, 1): ("conv2d_v15_depthwise_k5s1", 8),
    (5, 2): ("conv2d_v15_depthwise_k5s2", 4),
}
MAX_CHANNELS_PER_STAGE = 8  # v3
IG_BM, IG_BN = 64, 128  # v4 block tile: filters x pixels
IG_THREADS = (IG_BM // 8) * (IG_BN // 8)  # each thread owns 8 filters x 8 pixels
TC_BM, TC_BN = 64, 128  # v5 block tile: filters x pixels, in warps of 32 x 64
TC_THREADS = 32 * (TC_BM // 32) * (TC_BN // 64)
PIPE_BK, PIPE_STAGES = 32, 3  # v7-v10: k per shared-memory stage, stages in flight
PIPE_TILES = {  # v7-v11 block tiles: (BM, BN) -> (warps along filters, along pixels)
    (128, 128): (2, 4),
    (64, 64): (2, 2),
}
PIPE_SMS = 132  # the H100's multiprocessors
PIPE_SPLIT_BELOW = 2  # v7-v11 split K only where the grid gives fewer blocks than this per SM,
PIPE_SPLIT_STAGES = 32  # into splits of about this many stages of k (bench.suite --sweep, H100)
PIPE_PREFIX = {"pipelined_tf32": "tf32", "pipelined_bf16": "bf16", "pipelined_fp16": "fp16"}
CL_TILE = 32  # v10: the channels-last copy moves 32 channels ...
CL_CELLS = 64  # ... x 64 consecutive cells of the copy a block
CL_BLOCK = (CL_TILE, 8, 1)
CL_ARRAYS = ("x_cl", "w_cl", "bias", "y")  # v10's GEMM reads the channels-last copies
HALF_CODES = {"bf16": 1, "fp16": 2}  # v11's copy: PREC_BF16 / PREC_FP16 of kernels/conv2d.cu
WG_SOURCE = "conv2d_hopper.cu"  # v12: Hopper's warpgroup MMA (sm_90a only; gpuops/sm90a.py)
WG_TILES = ((64, 128), (128, 128))  # v12 block tiles: a warpgroup per 64 filters
WG_STAGES, WG_ROW_BYTES = 4, 128  # v12: shared-memory stages; bytes of k a stage row holds
# v12 splits k half as often as v10 (H100, bench.suite --sweep, 128 x 128, ms by splits): late
# 7x7x512 1: 0.117, 2: 0.095, 4 (v10's count): 0.105; 7x7x1024 4: 0.169, 9 (v10's): 0.184
WG_SPLIT_STAGES = 2 * PIPE_SPLIT_STAGES
SPLIT_TF32 = "3xtf32"  # v13: fp32 values as TF32 pairs, three wgmma products per term
X3_STAGES = {128: 3, 64: 4}  # v13: shared-memory stages by the tile's filter rows (192 KB both)
# v13: stages the tensor cores sum before their sums move to fp32 registers. H100, one lease, 9
# layers: every 2 stages, error 4.8-6.3e-7 of the largest output (our fp32 kernels: 0.7-4.0e-6)
# at -5% to +10% of the time of never moving them (error 2.3e-6 to 1.8e-5: the tensor cores'
# additions along k round less carefully than fp32's); every stage 3.1-4.9e-7 at up to 25% more;
# every 4 stages 0.9-1.1e-6
X3_PROMOTE = 2
# pipelined_tf32 runs v14 where a group has at most this many filters, where v12 takes its
# 64 x 128 tile (a warpgroup's 64 filter rows, half empty where a group has 32). H100, grouped_g4
# (32 filters a group), two runs in one lease: v12 0.238 / 0.230 ms, v14 TF32 0.198 / 0.180,
# cuDNN-TF32 0.195 / 0.177 (h100_v14_run1/2.json, in git history since 2026-11-27). With 64
# filters a group v14's 64 x 128 tile beat v12's in both runs of h100_v16_run1/2.json: k5 0.060 /
# 0.060 ms against 0.065 / 0.065, resnet56 0.084 / 0.084 against 0.091 / 0.090; past 64 (v12's
# 128 x 128) v12 won: VGG-like 0.191 against 0.234, late 14x14x256 0.052 against 0.060
V14_TF32_FILTERS = 64
PIXEL_TILES = ((32, 64), (32, 128), (64, 128))  # v14 block tiles, filters x pixels: a warpgroup per 64 pixels
V14_STAGES = {"tf32": 4, SPLIT_TF32: 4}  # v14's stages by operands: TF32 48-96 KB a block, 3xTF32 96-192
PIXEL_ROWS_FILTERS = 64  # auto measures v14 where a group has at most this many filters (its columns)
# v16 (1x1 layers of stride 1 without padding, TF32, Hopper): x read as NCHW, the pixels given to
# wgmma from registers; constants equal kernels/conv2d_hopper.cu's #defines (a CPU test checks)
V16_STAGES, V16_FILTERS, V16_PIXELS, V16_KC, V16_PITCH = 4, 64, 128, 32, 136
V16_KERNEL = "conv2d_v16_pointwise_tf32"
# v17 (KH x KW windows of stride 1, TF32, Hopper): x read as NCHW into a halo tile, the taps as
# register offsets; constants equal kernels/conv2d_hopper.cu's #defines (a CPU test checks)
V17_PIXELS, V17_KC, V17_COL0 = 128, 32, 4
V17_TAPS = 3  # taps whose fragments a warpgroup loads before it issues their wgmma
HALO_ARRAYS = ("x", "w_cl", "bias", "y")  # v17 reads x itself and the TF32 copy of w
SM90_SHARED = 227 * 1024  # the most dynamic shared memory a block may have on compute capability 9.0
SM90_SM_SHARED = 228 * 1024  # an SM's shared memory (each block also holds 1 KB of the system's)
# pipelined_tf32 runs v17 where a group has at most this many filters and two blocks fit an SM.
# H100, one lease, two rounds of 30 queued calls, ms (v17 with its copy of w / v14 with its copies
# / cuDNN-TF32): grouped g=4 56x56 0.127 / 0.154 / 0.164, g=8 28x28 0.072 / 0.086 / 0.089, 32
# channels 112x112 0.069 / 0.083 / 0.093; with 64 filters (v17's 64 x 128 block, one block an SM)
# v14 won: resnet56 0.114 against 0.084, and on 5x5 groups (170 KB of stages) 0.175 against 0.147
V17_TF32_FILTERS = 32
OPERANDS = {"tf32": "TF32", "bf16": "BF16", "fp16": "FP16", SPLIT_TF32: "3xTF32"}  # for captions


# ---- check --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConvProblem(Layer):
    """Everything checked about one conv2d call, before any memory is touched."""

    padding_mode: str

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return self.N, self.M, self.geometry.H_out, self.geometry.W_out

    @property
    def reflect(self) -> bool:
        return self.padding_mode == "reflect"

    @property
    def flops(self) -> int:
        return self.flops_for(self.geometry.L)

    @property
    def x_unroll_bytes_per_sample(self) -> int:
        g = self.geometry
        return 4 * self.C * g.KH * g.KW * g.L


@memoised("conv2d_checks", 1024)
def check_conv2d(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    bias_shape: tuple[int, ...] | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: Any = 1,
    padding_mode: str = "zeros",
) -> ConvProblem:
    """Validate conv2d's arguments by shape alone; ValueError names the parameter and the limit.
    padding may be "valid" or "same" (checks.conv_geometry); the geometry holds all four pads."""
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"padding_mode {padding_mode!r} must be one of {PADDING_MODES}")
    groups = check_groups(groups)
    N, C, H, W, M, Cg, KH, KW = layer_shapes(
        x_shape,
        w_shape,
        bias_shape,
        x_meaning="(C, H, W) or (N, C, H, W)",
        w_meaning="(out_channels, in_channels/groups, kh, kw)",
        bias_count=lambda m, _: m,
        bias_meaning="filter",
    )
    if C % groups:
        raise ValueError(f"groups {groups} must divide the input channels {C}")
    if M % groups:
        raise ValueError(f"groups {groups} must divide the output channels (filters) {M}")
    if Cg != C // groups:
        raise ValueError(
            f"weight has {Cg} input channels per filter, but input channels {C} / groups {groups} "
            f"= {C // groups}"
        )
    if not isinstance(padding, str):
        ph, pw = as_pair(padding, "padding")
        if padding_mode == "reflect":
            check_reflect_pads(H, W, (pw, pw, ph, ph))
    # "same" may pad one cell more on the bottom / right: the geometry keeps all four pads, and
    # every kernel and twin reads them right (kernels take the top / left pad and H_out / W_out,
    # and a cell at or past H / W is padding; reflect mode mirrors it)
    g = conv_geometry(H, W, (KH, KW), stride, padding, dilation)
    if padding_mode == "reflect" and isinstance(padding, str):
        check_reflect_pads(H, W, g.pads)
    return ConvProblem(N, C, M, groups, g, padding_mode)


def check_algorithm(algorithm: str) -> None:
    if algorithm not in (*ALL_ALGORITHMS, AUTO):
        raise ValueError(f"algorithm {algorithm!r} must be one of {(*ALL_ALGORITHMS, AUTO)}")


# ---- plan: one launch helper per kernel ---------------------------------------------------------------
def _geometry_args(p: ConvProblem) -> tuple[tuple[str, Any], ...]:
    """The arguments every conv2d kernel takes after its arrays, in the order of kernels/conv2d.cu."""
    return ints(N=p.N, C=p.C, M=p.M) + window_args(p.geometry) + ints(groups=p.groups, reflect=int(p.reflect))


@dataclass(frozen=True)
class PixelRowMap:
    """v1: a block is `pixels` consecutive output pixels (p = oh*W_out + ow) x `filters` filters."""

    pixels: int
    filters: int
    W_out: int
    does: str = "one thread per output element"  # what each thread does with its (n, m, oh, ow)

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        p = oh * self.W_out + ow
        return ThreadRef((p // self.pixels, m // self.filters, n), (p % self.pixels, m % self.filters, 0))

    def describe(self) -> str:
        return f"{self.does}; a block is {self.pixels} consecutive output pixels x {self.filters} filter(s)"


@dataclass(frozen=True)
class TileMap:
    """v2/v3: a block computes a tile of output pixels for `filters_per_block` filters of a group;
    thread (tx, ty) owns pixels (ty, tx + p*threads_w) of the tile, p < pixels_per_thread."""

    threads_h: int
    threads_w: int
    tiles_w: int
    pixels_per_thread: int
    filters_per_block: int
    filters_per_group: int
    one_channel: bool = False  # v6: the block stages one channel and computes its filters in turn

    @property
    def tile(self) -> tuple[int, int]:
        """Output pixels one block computes: (rows, columns)."""
        return self.threads_h, self.threads_w * self.pixels_per_thread

    def block_y(self, m: int) -> int:
        group, within = divmod(m, self.filters_per_group)
        m_blocks = ceil_div(self.filters_per_group, self.filters_per_block)
        return group * m_blocks + within // self.filters_per_block

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        th, tw = self.tile
        bx = (oh // th) * self.tiles_w + ow // tw
        return ThreadRef((bx, self.block_y(m), n), ((ow % tw) % self.threads_w, oh % th, 0))

    def tile_origin(self, oh: int, ow: int) -> tuple[int, int]:
        """First output row and column of the tile that holds (oh, ow)."""
        th, tw = self.tile
        return (oh // th) * th, (ow // tw) * tw

    def filters_of_block(self, block_y: int) -> range:
        m_blocks = ceil_div(self.filters_per_group, self.filters_per_block)
        group, mb = divmod(block_y, m_blocks)
        start = group * self.filters_per_group + mb * self.filters_per_block
        return range(start, min(start + self.filters_per_block, (group + 1) * self.filters_per_group))

    def pixels_of_thread(self, oh: int, ow: int) -> list[tuple[int, int]]:
        """The output pixels computed by the thread that computes (oh, ow) (unclipped)."""
        _, c0 = self.tile_origin(oh, ow)
        tx = (ow - c0) % self.threads_w
        return [(oh, c0 + tx + p * self.threads_w) for p in range(self.pixels_per_thread)]

    def describe(self) -> str:
        th, tw = self.tile
        if self.one_channel:
            return (
                f"each thread computes {self.pixels_per_thread} pixel(s) of a row for each of its group's "
                f"{self.filters_per_block} filter(s), one filter after the other; a block is a {th} x {tw} "
                "tile of one group, whose one input channel is staged once"
            )
        if self.pixels_per_thread == 1 and self.filters_per_block == 1:
            return f"one thread per output pixel; a block is a {th} x {tw} tile of one filter"
        return (
            f"each thread computes {self.pixels_per_thread} pixels x {self.filters_per_block} filters "
            f"in registers; a block is a {th} x {tw} tile of {self.filters_per_block} filters"
        )


@dataclass(frozen=True)
class GemmMap:
    """v4: pixels of the whole batch are one row, p = n*L + oh*W_out + ow; a block computes
    BM filters x BN pixels; inside, thread t owns 8 x 8 outputs in two halves of 4."""

    BM: int
    BN: int
    filters_per_group: int
    H_out: int
    W_out: int

    def _thread(self, m: int, p: int) -> tuple[tuple[int, int, int], int]:
        group, within = divmod(m, self.filters_per_group)
        m_blocks = ceil_div(self.filters_per_group, self.BM)
        q, r = p % self.BN, within % self.BM
        tn, tm = (q % (self.BN // 2)) // 4, (r % (self.BM // 2)) // 4
        return (p // self.BN, group * m_blocks + within // self.BM, 0), tm * (self.BN // 8) + tn

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        block, t = self._thread(m, n * self.H_out * self.W_out + oh * self.W_out + ow)
        return ThreadRef(block, (t, 0, 0))

    def pixels_of_block(self, block_x: int, n_samples: int) -> np.ndarray:
        """(n, oh, ow) of the batch pixels a block computes (all filters of its block row)."""
        L = self.H_out * self.W_out
        p = np.arange(block_x * self.BN, min((block_x + 1) * self.BN, n_samples * L))
        return np.stack([p // L, (p % L) // self.W_out, p % self.W_out], axis=1)

    def pixels_of_thread(self, n: int, oh: int, ow: int) -> np.ndarray:
        """(n, oh, ow) of the 8 batch pixels of the thread that computes pixel (n, oh, ow)."""
        L = self.H_out * self.W_out
        p = n * L + oh * self.W_out + ow
        p0, tn = p - p % self.BN, (p % self.BN % (self.BN // 2)) // 4
        q = p0 + np.array([tn * 4 + j for j in range(4)] + [self.BN // 2 + tn * 4 + j for j in range(4)])
        return np.stack([q // L, (q % L) // self.W_out, q % self.W_out], axis=1)

    def describe(self) -> str:
        return (
            f"a GEMM: a block computes {self.BM} filters x {self.BN} pixels of the batch, each thread "
            f"8 filters x 8 pixels in registers"
        )


def direct_launch(p: ConvProblem) -> Launch:
    """v1: grid (pixel blocks, filter blocks, batch)."""
    g, (bx, by, _) = p.geometry, DIRECT_BLOCK
    grid = (max(1, ceil_div(g.L, bx)), ceil_div(p.M, by), p.N)
    check_grid(grid, "the direct kernel")
    return Launch(
        KERNELS["direct"],
        SOURCE,
        grid,
        DIRECT_BLOCK,
        0,
        ARRAYS,
        _geometry_args(p),
        PixelRowMap(bx, by, g.W_out),
        "(n, m, oh, ow) of y",
    )


def _halo(tile: int, k: int, stride: int, dilation: int) -> int:
    """Input cells a tile of `tile` outputs reads along one axis: (tile-1)*stride + (k-1)*dilation + 1."""
    return (tile - 1) * stride + (k - 1) * dilation + 1


def _check_int32(count: int, counted: str, what: str) -> None:
    """Refuse up front what a kernel would index past 32 bits (instead of a wrong answer): v2/v3
    index inside an input plane with ints (faster tile loads), v4/v5 number the batch's pixels."""
    if count > INT32_MAX:
        raise ValueError(
            f"the {what} kernel numbers {counted} with 32-bit ints: {count:,} is over the limit "
            f"{INT32_MAX:,}; split the batch or use algorithm='direct'"
        )


def _check_plane(g: WindowGeometry, what: str) -> None:
    _check_int32(g.H * g.W, f"the cells of a {g.H} x {g.W} input plane", what)


def tiled_basic_launch(p: ConvProblem) -> Launch:
    """v2: the largest square tile (16 down to 1 thread a side) whose halo fits in shared memory."""
    g = p.geometry
    _check_plane(g, "tiled_basic")
    for tile in (TILE, 8, 4, 2, 1):
        in_h, in_w = _halo(tile, g.KH, g.stride_h, g.dil_h), _halo(tile, g.KW, g.stride_w, g.dil_w)
        shared = 4 * (in_h * in_w + g.KH * g.KW)
        if shared <= SHARED_LIMIT:
            break
    else:
        raise ValueError(
            f"the tiled_basic kernel needs {shared:,} bytes of shared memory for this kernel size, "
            f"stride and dilation, more than the limit {SHARED_LIMIT:,}; use algorithm='direct'"
        )
    tiles_w = ceil_div(g.W_out, tile)
    grid = (ceil_div(g.H_out, tile) * tiles_w, p.M, p.N)
    check_grid(grid, "the tiled_basic kernel")
    return Launch(
        KERNELS["tiled_basic"],
        SOURCE,
        grid,
        (tile, tile, 1),
        shared,
        ARRAYS,
        _geometry_args(p) + ints(tiles_w=tiles_w, in_h=in_h, in_w=in_w),
        TileMap(tile, tile, tiles_w, 1, 1, p.M // p.groups),
        "(n, m, oh, ow) of y",
    )


def _pitch(in_w: int, tile: int, stride_h: int) -> int:
    """v3's shared row pitch: a warp of 16-wide blocks covers two thread rows, stride_h*pitch
    floats apart; pitch = 16 (mod 32) puts them in disjoint banks when stride_h is 1."""
    if tile != 16 or stride_h != 1:
        return in_w
    return in_w + (16 - in_w % 32) % 32


def tiled_launch(p: ConvProblem) -> Launch:
    """v3: the largest tile (16 down to 1 thread a side) whose halo and filters fit in shared
    memory; where each filter sees one channel and a group has fewer filters than v3 computes
    per thread (its filter slots would stay empty): v15 for the windows and strides it is
    built for, else v6 where its tile fits."""
    g = p.geometry
    _check_plane(g, "tiled")
    Cg, Mg = p.C // p.groups, p.M // p.groups
    if Cg == 1 and Mg < FILTERS_PER_BLOCK:
        depthwise = depthwise_rows_launch(p) or depthwise_launch(p)
        if depthwise is not None:
            return depthwise
    for tile in (TILE, 8, 4, 2, 1):
        in_h = _halo(tile, g.KH, g.stride_h, g.dil_h)
        in_w = _halo(tile * PIXELS_PER_THREAD, g.KW, g.stride_w, g.dil_w)
        pitch = _pitch(in_w, tile, g.stride_h)
        per_channel = 4 * (in_h * pitch + FILTERS_PER_BLOCK * g.KH * g.KW)
        if per_channel + 16 <= SHARED_LIMIT:
            break
    else:
        raise ValueError(
            f"the tiled kernel needs {per_channel:,} bytes of shared memory per channel for this "
            f"kernel size, stride and dilation, more than the limit {SHARED_LIMIT:,}; "
            "use algorithm='direct' or 'im2col'"
        )
    cb = max(1, min(Cg, MAX_CHANNELS_PER_STAGE, (SHARED_LIMIT - 16) // per_channel))
    m_blocks = ceil_div(Mg, FILTERS_PER_BLOCK)
    tiles_w = ceil_div(g.W_out, tile * PIXELS_PER_THREAD)
    grid = (ceil_div(g.H_out, tile) * tiles_w, p.groups * m_blocks, p.N)
    check_grid(grid, "the tiled kernel")
    shared = 4 * ((cb * in_h * pitch + 3) // 4 * 4 + cb * FILTERS_PER_BLOCK * g.KH * g.KW)
    args = _geometry_args(p) + ints(
        tiles_w=tiles_w, m_blocks=m_blocks, cb_max=cb, in_h=in_h, in_w=in_w, pitch=pitch
    )
    return Launch(
        KERNELS["tiled"],
        SOURCE,
        grid,
        (tile, tile, 1),
        shared,
        ARRAYS,
        args,
        TileMap(tile, tile, tiles_w, PIXELS_PER_THREAD, FILTERS_PER_BLOCK, Mg),
        "(n, m, oh, ow) of y",
    )


def _depthwise_tile(p: ConvProblem) -> tuple[int, int, int, int, int, int] | None:
    """v6's block (threads_w, threads_h) and outputs per thread: of the shapes whose tile fits in
    shared memory, the one with the least work, counted as taps computed (edge waste included),
    four per input cell staged (a global load and a shared store) and DW_BLOCK_COST per block
    (its start, barrier and weights: this keeps blocks from shrinking to a few threads just to
    save halo cells). Then (in_h, in_w, pitch). None when not even a one-thread tile fits."""
    g, Mg = p.geometry, p.M // p.groups
    best, best_cost = None, None
    for tw, th in DW_BLOCKS:
        for px in (DW_PIXELS, 2, 1):
            in_h = _halo(th, g.KH, g.stride_h, g.dil_h)
            in_w = _halo(tw * px, g.KW, g.stride_w, g.dil_w)
            # rows of one warp sit stride_h*pitch floats apart: pitch = tw (mod 32) puts the
            # 32 // tw rows of a warp in different banks (as v3's pitch does for tw = 16)
            pitch = in_w + (tw - in_w % 32) % 32 if tw < 32 and g.stride_h == 1 else in_w
            if 4 * (in_h * pitch + Mg * g.KH * g.KW) > SHARED_LIMIT:
                continue
            tiles = ceil_div(g.H_out, th) * ceil_div(g.W_out, tw * px)
            cost = tiles * (th * tw * px * g.KH * g.KW * Mg + 4 * in_h * in_w + DW_BLOCK_COST)
            if best_cost is None or cost < best_cost:
                best, best_cost = (tw, th, px, in_h, in_w, pitch), cost
    return best


def depthwise_launch(p: ConvProblem) -> Launch | None:
    """v6 (filters that see one channel): grid (tiles, groups, N); None when its tile does not
    fit in shared memory (tiled_launch then uses v3)."""
    g = p.geometry
    if p.C // p.groups != 1:
        raise ValueError(
            f"the depthwise kernel needs filters that see one channel; these see {p.C // p.groups}"
        )
    tile = _depthwise_tile(p)
    if tile is None:
        return None
    tw, th, px, in_h, in_w, pitch = tile
    tiles_w = ceil_div(g.W_out, tw * px)
    grid = (ceil_div(g.H_out, th) * tiles_w, p.groups, p.N)
    check_grid(grid, "the tiled (depthwise) kernel")
    Mg = p.M // p.groups
    return Launch(
        KERNELS["depthwise"],
        SOURCE,
        grid,
        (tw, th, 1),
        4 * (in_h * pitch + Mg * g.KH * g.KW),
        ARRAYS,
        _geometry_args(p) + ints(pixels=px, tiles_w=tiles_w, in_h=in_h, in_w=in_w, pitch=pitch),
        TileMap(th, tw, tiles_w, px, Mg, Mg, one_channel=True),
        "(n, m, oh, ow) of y",
    )


@dataclass(frozen=True)
class ColumnRowsMap:
    """v15: thread t of the grid computes `rows` outputs of one column: t = ((n*M + m)*strips +
    oh // rows)*W_out + ow, `threads` threads a block."""

    rows: int
    strips: int
    W_out: int
    M: int
    threads: int

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        t = ((n * self.M + m) * self.strips + oh // self.rows) * self.W_out + ow
        return ThreadRef((t // self.threads, 0, 0), (t % self.threads, 0, 0))

    def describe(self) -> str:
        return (
            f"a thread computes {self.rows} outputs of one column, reading each input row they need "
            f"once; consecutive threads take consecutive columns, {self.threads} threads a block"
        )


def depthwise_rows_launch(p: ConvProblem) -> Launch | None:
    """v15 (filters that see one channel): one kernel per (kernel size, stride) in
    DW_ROWS_KERNELS, square windows, no dilation; None for any other layer (v6 runs it)."""
    g = p.geometry
    if p.C // p.groups != 1:
        raise ValueError(
            f"the depthwise kernel needs filters that see one channel; these see {p.C // p.groups}"
        )
    built = g.KH == g.KW and g.stride_h == g.stride_w and g.dil_h == g.dil_w == 1
    if not built or (g.KH, g.stride_h) not in DW_ROWS_KERNELS:
        return None
    kernel, rows = DW_ROWS_KERNELS[(g.KH, g.stride_h)]
    strips = ceil_div(g.H_out, rows)
    grid = (ceil_div(p.N * p.M * strips * g.W_out, DW_ROWS_THREADS), 1, 1)
    check_grid(grid, "the tiled (depthwise rows) kernel")
    return Launch(
        kernel,
        SOURCE,
        grid,
        (DW_ROWS_THREADS, 1, 1),
        0,
        ARRAYS,
        _geometry_args(p) + ints(strips=strips),
        ColumnRowsMap(rows, strips, g.W_out, p.M, DW_ROWS_THREADS),
        "(n, m, oh, ow) of y",
    )


def _check_pixels(p: ConvProblem, what: str) -> None:
    _check_int32(p.N * p.geometry.L, "the output pixels of the whole batch", what)


def implicit_gemm_launch(p: ConvProblem) -> Launch:
    """v4: one block per IG_BM filters x IG_BN pixels of the whole batch."""
    g = p.geometry
    _check_pixels(p, "implicit_gemm")
    pixels = p.N * g.L
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, IG_BM)
    grid = (max(1, ceil_div(pixels, IG_BN)), p.groups * m_blocks, 1)
    check_grid(grid, "the implicit_gemm kernel")
    return Launch(
        KERNELS["implicit_gemm"],
        SOURCE,
        grid,
        (IG_THREADS, 1, 1),
        0,
        ARRAYS,
        _geometry_args(p) + ints(m_blocks=m_blocks),
        GemmMap(IG_BM, IG_BN, Mg, g.H_out, g.W_out),
        "(n, m, oh, ow) of y",
    )


@dataclass(frozen=True)
class WarpTileMap:
    """v5, v7-v11: a block computes BM filters x BN batch pixels with warps of warp_m x warp_n
    outputs (v5: 32 x 64), each as tensor-core tiles of 16 x 8; lane 4g + t holds sums
    (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1) of every tile and writes them out itself."""

    BM: int
    BN: int
    filters_per_group: int
    H_out: int
    W_out: int
    warp_m: int = 32
    warp_n: int = 64
    operands: str = "TF32"  # what the tensor cores multiply
    k_splits: int = 1  # v7-v12: blocks along z that add their share of k into the same outputs
    warpgroups: bool = False  # v12: wgmma of 64 x 128 a warpgroup, sums laid out as mma tiles

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        p = n * self.H_out * self.W_out + oh * self.W_out + ow
        group, within = divmod(m, self.filters_per_group)
        m_blocks = ceil_div(self.filters_per_group, self.BM)
        r, q = within % self.BM, p % self.BN
        warp = (r // self.warp_m) * (self.BN // self.warp_n) + q // self.warp_n
        lane = (r % 8) * 4 + (q % 8) // 2
        return ThreadRef((p // self.BN, group * m_blocks + within // self.BM, 0), (warp * 32 + lane, 0, 0))

    def describe(self) -> str:
        warps = (self.BM // self.warp_m) * (self.BN // self.warp_n)
        if self.warpgroups:
            what = f"{self.operands} wgmma"
            if self.operands == OPERANDS[SPLIT_TF32]:  # v13
                what = "three TF32 wgmma a k-step (each value a pair of TF32 values: fp32 accuracy)"
            work = (
                f"{self.BM // 64} warpgroups of 4 warps issue {what} of 64 x 128 from shared "
                f"memory; each of its {warps} warps holds {self.warp_m} x {self.warp_n} of the sums"
            )
        else:
            work = (
                f"each of its {warps} warps computes {self.warp_m} x {self.warp_n} outputs as "
                f"{self.warp_m // 16} x {self.warp_n // 8} {self.operands} mma tiles of 16 x 8"
            )
        return f"tensor cores: a block computes {self.BM} filters x {self.BN} pixels of the batch; {work}" + (
            f"; k is split over {self.k_splits} blocks along z, which add into y" if self.k_splits > 1 else ""
        )


@dataclass(frozen=True)
class PixelRowsMap(WarpTileMap):
    """v14: WarpTileMap's block (BM filters x BN batch pixels) with wgmma's roles swapped: a
    warpgroup per 64 pixels, warp w of the block holds pixels 16w..16w+15 of it x all BM filters,
    and lane 4g + t holds sums (pixel g, filters 2t, 2t+1) and (pixel g + 8, the same) of every
    8-filter column block."""

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        p = n * self.H_out * self.W_out + oh * self.W_out + ow
        group, within = divmod(m, self.filters_per_group)
        m_blocks = ceil_div(self.filters_per_group, self.BM)
        r, q = within % self.BM, p % self.BN
        warp, lane = q // 16, (q % 8) * 4 + (r % 8) // 2
        return ThreadRef((p // self.BN, group * m_blocks + within // self.BM, 0), (warp * 32 + lane, 0, 0))

    def describe(self) -> str:
        what = f"{self.operands} wgmma"
        if self.operands == OPERANDS[SPLIT_TF32]:
            what = "three TF32 wgmma a k-step (each value a pair of TF32 values: fp32 accuracy)"
        split = f"; k is split over {self.k_splits} blocks along z, which add into y"
        return (
            f"tensor cores: a block computes {self.BM} filters x {self.BN} pixels of the batch; "
            f"{self.BN // 64} warpgroups of 4 warps issue {what} of 64 pixels x {self.BM} filters "
            f"from shared memory (pixels on the rows); each of its {self.BN // 16} warps holds 16 "
            f"pixels x {self.BM} filters of the sums{split if self.k_splits > 1 else ''}"
        )


def implicit_gemm_tf32_launch(p: ConvProblem) -> Launch:
    """v5: one block per TC_BM filters x TC_BN pixels, 4 warps."""
    g = p.geometry
    _check_pixels(p, "implicit_gemm_tf32")
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, TC_BM)
    grid = (max(1, ceil_div(p.N * g.L, TC_BN)), p.groups * m_blocks, 1)
    check_grid(grid, "the implicit_gemm_tf32 kernel")
    return Launch(
        KERNELS["implicit_gemm_tf32"],
        SOURCE,
        grid,
        (TC_THREADS, 1, 1),
        0,
        ARRAYS,
        _geometry_args(p) + ints(m_blocks=m_blocks),
        WarpTileMap(TC_BM, TC_BN, Mg, g.H_out, g.W_out),
        "(n, m, oh, ow) of y",
    )


def pipelined_tile(p: ConvProblem) -> tuple[int, int]:
    """v7-v9's block tile: 128 x 128 where a group has more than 64 filters, else 64 x 64 (half
    of a large tile's filter rows would be empty). Measured on the H100 (bench.suite --sweep):
    the large tile won on every layer with 128+ filters, small grids too (late 14x14x256: 0.25
    ms against 0.31 with 64 x 64, 4x the blocks); small grids split k instead (pipelined_splits)."""
    return (128, 128) if p.M // p.groups > 64 else (64, 64)


def channels_last_tile(p: ConvProblem) -> tuple[int, int]:
    """v10's block tile: 128 x 128 where a group has more than 32 filters, else 64 x 64. v10
    runs two 128 x 128 blocks per SM (v7-v9 one), which pays even with half the filter rows
    empty: H100, bench.suite --sweep, one run: 5x5 layer of 64 filters 0.120 ms with 128 x 128,
    0.146 with 64 x 64; grouped layer of 32 filters a group 0.268 and 0.250."""
    return (128, 128) if p.M // p.groups > 32 else (64, 64)


def pipelined_launch(
    p: ConvProblem,
    algorithm: str = "pipelined_tf32",
    *,
    wide_copies: bool | None = None,
    tile: tuple[int, int] | None = None,
    k_splits: int | None = None,
    channels_last: bool | None = None,
    wgmma: bool | None = None,
) -> Launch:
    """v7-v12. The channels-last GEMM where channels_last_fits, except on 1x1 layers of stride 1
    without padding (measured on the H100, 32x256x28x28: v8 0.074 ms, v10 0.087; bf16 v9
    0.075 / 0.073, v11 0.081 / 0.078 in two runs: there v8 / v9 read x without a gather and the
    copy of x is pure cost): v12 (warpgroup_launch) where the device has Hopper's wgmma, else
    v10 in TF32, v11 with 16-bit operands (run by ChannelsLastCall). Elsewhere TF32 runs v8
    (16-byte input copies) where rows are contiguous (stride_w 1, no reflect) and v7 elsewhere,
    16-bit operands v9 (v8's gather); tile from pipelined_tile, k split over gridDim.z by
    pipelined_splits. In TF32 on Hopper, groups of at most V14_TF32_FILTERS filters run v14
    (pixels on wgmma's rows; measured faster than v12's 64 x 128 tile), 1x1 layers of stride 1
    without padding v16 (pointwise_launch), and groups of at most V17_TF32_FILTERS filters at
    stride 1 v17 where it fits (halo_launch). `wide_copies` (v7 / v8 /
    v9, never v10-v12), `channels_last`, `wgmma` (False: v10 / v11, True: v12), `tile` and
    `k_splits` override the choices (the benchmark and tests run each)."""
    g = p.geometry
    _check_pixels(p, algorithm)
    _check_plane(g, algorithm)
    precision = PIPE_PREFIX[algorithm]
    chosen = (wide_copies, tile, k_splits, channels_last, wgmma)
    if precision == "tf32" and all(c is None for c in chosen) and _runs_pointwise(p):
        return pointwise_launch(p)  # v16
    if precision == "tf32" and all(c is None for c in chosen) and _runs_halo(p):
        return halo_launch(p)  # v17
    if channels_last is None:  # a 1x1 layer of stride 1 without padding: v8 copies x without a gather
        pointwise = (g.KH, g.KW, g.stride_h, g.stride_w) == (1, 1, 1, 1) and not any(g.pads)
        channels_last = wide_copies is None and channels_last_fits(p) and not pointwise
    if channels_last and not channels_last_fits(p):
        raise ValueError(
            f"v10 / v11 (channels last) run layers whose groups have a multiple of {PIPE_BK} channels"
        )
    if wgmma and not channels_last:
        raise ValueError("v12 (wgmma) runs on the channels-last copies: channels_last must hold")
    if channels_last and _runs_wgmma(p, precision, tile, wgmma):
        if precision == "tf32" and wgmma is None and tile is None and p.M // p.groups <= V14_TF32_FILTERS:
            return warpgroup_launch(p, precision, k_splits=k_splits, pixel_rows=True)  # v14
        return warpgroup_launch(p, precision, tile=tile, k_splits=k_splits)
    BM, BN = tile or (channels_last_tile(p) if channels_last else pipelined_tile(p))
    warps_m, warps_n = PIPE_TILES[BM, BN]
    stage_k = channels_last_stage(p, precision) if channels_last else PIPE_BK
    if channels_last:
        version = "v10" if precision == "tf32" else "v11"
    elif precision == "tf32":
        wide = (g.stride_w == 1 and not p.reflect) if wide_copies is None else wide_copies
        version = "v8" if wide else "v7"
    else:
        version = "v9"
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, BM)
    grid = (max(1, ceil_div(p.N * g.L, BN)), p.groups * m_blocks, 1)
    splits = pipelined_splits(p, grid[0] * grid[1], k_splits, stage_k=stage_k)
    grid = (grid[0], grid[1], splits)
    check_grid(grid, f"the {algorithm} kernel")
    a_pitch, b_pitch = (PIPE_BK + 4, BN + 8) if precision == "tf32" else (PIPE_BK + 8, BN + 4)
    shared = 4 * PIPE_STAGES * (BM * a_pitch + PIPE_BK * b_pitch)
    threads = WarpTileMap(
        BM, BN, Mg, g.H_out, g.W_out, BM // warps_m, BN // warps_n, precision.upper(), splits
    )
    kernel = f"conv2d_{version}_{precision}_{BM}x{BN}"
    block = (32 * warps_m * warps_n, 1, 1)
    args = _geometry_args(p) + ints(m_blocks=m_blocks, k_splits=splits)
    arrays = ARRAYS
    if channels_last:  # both operands as [row][k] stages of stage_k values, pitch: 4 more words
        value_bytes = 4 if precision == "tf32" else 2
        shared = 4 * PIPE_STAGES * (BM + BN) * (stage_k * value_bytes // 4 + 4)
        args += ints(**dict(zip(("Hp", "Wp"), channels_last_size(p), strict=True)))
        arrays = CL_ARRAYS
        if version == "v11":
            kernel += f"_c{stage_k}"
    return Launch(kernel, SOURCE, grid, block, shared, arrays, args, threads, "(n, m, oh, ow) of y")


def wgmma_fits(p: ConvProblem, precision: str) -> bool:
    """Where v12 can run, beyond v10's conditions: its stage rows are 128 bytes, 32 TF32 values
    or 64 16-bit ones, so 16-bit operands need groups of a multiple of 64 channels."""
    return precision == "tf32" or channels_last_stage(p, precision) == WG_ROW_BYTES // 2


def _runs_wgmma(p: ConvProblem, precision: str, tile: tuple[int, int] | None, wgmma: bool | None) -> bool:
    if wgmma is None:  # by default where it fits and the device runs sm_90a code (a tile asked for is v12's)
        return (tile is None or tile in WG_TILES) and wgmma_fits(p, precision) and sm90a.available(WG_SOURCE)
    if wgmma and not wgmma_fits(p, precision):
        raise ValueError(
            f"v12 with {precision} operands runs layers whose groups have a multiple of 64 channels"
        )
    return wgmma


def warpgroup_tile(p: ConvProblem) -> tuple[int, int]:
    """v12's block tile: 128 x 128 where a group has more than 64 filters, else 64 x 128 (one
    warpgroup, two blocks an SM). Measured on the H100 (one run, ms, 64 x 128 / 128 x 128):
    VGG-like 0.258 / 0.203, late 7x7x1024 0.192 / 0.173; 5x5 with 64 filters 0.081 / 0.093,
    resnet56 0.107 / 0.127, grouped with 32 filters a group 0.204 / 0.288."""
    return (128, 128) if p.M // p.groups > 64 else (64, 128)


def warpgroup_launch(
    p: ConvProblem,
    precision: str,
    *,
    tile: tuple[int, int] | None = None,
    k_splits: int | None = None,
    promote: int | None = None,
    pixel_rows: bool = False,
) -> Launch:
    """v12 (kernels/conv2d_hopper.cu): v10's / v11's GEMM on Hopper's warpgroup MMA, on the same
    channels-last copies (ChannelsLastCall runs it); v13 with precision "3xtf32": the same GEMM
    on pairs of TF32 copies; v14 (`pixel_rows`, TF32 or 3xTF32): either with the pixels on
    wgmma's rows. Shared memory: the stages (WG_STAGES of BM + BN rows of 128 bytes; v13:
    X3_STAGES of twice the rows; v14: V14_STAGES), and 1 KB for the kernel to start its tiles on
    a 1 KB boundary. A warpgroup (128 threads) per 64 filters (v12, v13) or pixels (v14)."""
    g = p.geometry
    version = "v14" if pixel_rows else "v13" if precision == SPLIT_TF32 else "v12"
    tiles = PIXEL_TILES if pixel_rows else WG_TILES
    BM, BN = tile or (pixel_rows_tile(p, precision) if pixel_rows else warpgroup_tile(p))
    if (BM, BN) not in tiles:
        named = ", ".join(f"{m} x {n}" for m, n in tiles)
        raise ValueError(f"{version}'s tiles are {named}, not {BM} x {BN}")
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, BM)
    grid = (max(1, ceil_div(p.N * g.L, BN)), p.groups * m_blocks, 1)
    stage_k = channels_last_stage(p, precision)
    splits = pipelined_splits(p, grid[0] * grid[1], k_splits, stage_k=stage_k, split_stages=WG_SPLIT_STAGES)
    grid = (grid[0], grid[1], splits)
    check_grid(grid, f"the {version} {precision} kernel")
    Hp, Wp = channels_last_size(p)
    args = _geometry_args(p) + ints(m_blocks=m_blocks, k_splits=splits, Hp=Hp, Wp=Wp)
    parts = 1
    if precision == SPLIT_TF32:  # v13, v14 in 3xTF32: both parts of both copies
        parts = 2
        args += longs(x_part=p.N * Hp * Wp * p.C, w_part=p.M * g.KH * g.KW * (p.C // p.groups))
        args += ints(promote=promote or X3_PROMOTE)
    if pixel_rows and precision == "tf32":  # one tap a stage: the next stage's pixel rows through L1
        args += ints(x_via_l1=int(p.C // p.groups == stage_k))
    if pixel_rows:  # a warp's sums: 16 pixels x BM filters (v12, v13: 16 filters x BN pixels)
        stages = V14_STAGES[precision]
        threads = PixelRowsMap(BM, BN, Mg, g.H_out, g.W_out, 16, BM, OPERANDS[precision], splits, True)
    else:
        stages = X3_STAGES[BM] if parts == 2 else WG_STAGES
        threads = WarpTileMap(BM, BN, Mg, g.H_out, g.W_out, 16, BN, OPERANDS[precision], splits, True)
    shared = stages * parts * (BM + BN) * WG_ROW_BYTES + 1024
    kernel = f"conv2d_{version}_{precision}_{BM}x{BN}"
    block = (2 * (BN if pixel_rows else BM), 1, 1)
    return Launch(kernel, WG_SOURCE, grid, block, shared, CL_ARRAYS, args, threads, "(n, m, oh, ow) of y")


def pixel_rows_tile(p: ConvProblem, precision: str = "tf32") -> tuple[int, int]:
    """v14's block tile (filters x pixels): 64 x 128 (m64n64k8) where a group has more than 32
    filters (more than 64 take several blocks); else the 32 columns of m64n32k8, on 128 pixels in
    TF32 (80 KB of stages: two blocks an SM) and on 64 in 3xTF32 (its stages are twice as large:
    96 KB and two blocks an SM, where 32 x 128 would hold one; the header of v14 says why two)."""
    if p.M // p.groups > 32:
        return 64, 128
    return (32, 64) if precision == SPLIT_TF32 else (32, 128)


def pixel_rows_launch(
    p: ConvProblem,
    algorithm: str = "pixel_rows_tf32",
    *,
    tile: tuple[int, int] | None = None,
    k_splits: int | None = None,
    promote: int | None = None,
) -> Launch:
    """v14 (pixel_rows_tf32 / pixel_rows_3xtf32): v12 / v13 with the pixels on the tensor cores'
    rows. It runs where v12 runs in TF32 (groups of a multiple of PIPE_BK channels) and only on
    Hopper (launch_call refuses elsewhere); elsewhere a ValueError. Its header in
    kernels/conv2d_hopper.cu says what it changes and what it gains."""
    _check_pixels(p, algorithm)
    _check_plane(p.geometry, algorithm)
    if not channels_last_fits(p):
        raise ValueError(f"{algorithm} (v14) runs layers whose groups have a multiple of {PIPE_BK} channels")
    precision = PIXEL_ROWS_ALGORITHMS[algorithm]
    return warpgroup_launch(p, precision, tile=tile, k_splits=k_splits, promote=promote, pixel_rows=True)


@dataclass(frozen=True)
class PointwiseMap(PixelRowsMap):
    """v16: v14's map (a warpgroup per 64 pixels, warp w holding pixels 16w..16w+15 of the block
    x all BM filters); only how the operands reach the tensor cores differs."""

    def describe(self) -> str:
        return (
            f"tensor cores: a block computes {self.BM} filters x {self.BN} pixels of the batch, "
            f"reading x as it lies (NCHW: a channel's pixels are consecutive in a 1x1 layer); "
            f"{self.BN // 64} warpgroups of 4 warps issue TF32 wgmma of 64 pixels x {self.BM} "
            f"filters, the pixels from registers (each lane loads and rounds its own fragment), "
            f"the filters from shared memory; each of its {self.BN // 16} warps holds 16 pixels x "
            f"{self.BM} filters of the sums"
        )


def pointwise_fits(p: ConvProblem) -> bool:
    """Where v16 can run: a 1x1 window, stride 1, no padding (output pixel l reads input cell l
    of every channel), groups of a multiple of V16_KC channels (whole 128-byte filter rows a
    stage), and planes of a multiple of 4 pixels (a 16-byte copy of 4 pixels never straddles two
    samples)."""
    g = p.geometry
    one_by_one = (g.KH, g.KW, g.stride_h, g.stride_w) == (1, 1, 1, 1) and not any(g.pads)
    Cg = p.C // p.groups
    return one_by_one and Cg > 0 and Cg % V16_KC == 0 and g.L % 4 == 0


def _runs_pointwise(p: ConvProblem) -> bool:
    """pipelined_tf32 runs v16 where it fits and the device runs sm_90a code."""
    return pointwise_fits(p) and sm90a.available(WG_SOURCE)


def pointwise_launch(p: ConvProblem) -> Launch:
    """v16 (kernels/conv2d_hopper.cu): a 1x1 layer's GEMM on Hopper's wgmma, reading x and w as
    they lie (no channels-last copies, no copy kernels: one launch); a block is V16_FILTERS
    filters of a group x V16_PIXELS pixels of the batch. Shared memory: V16_STAGES stages of the
    filter rows (128 bytes each) and a V16_KC-channel x V16_PITCH-float x tile, and 1 KB for the
    kernel to start its filter tiles on a 1 KB boundary. ValueError where it cannot run."""
    if not pointwise_fits(p):
        raise ValueError(
            f"v16 runs 1x1 layers of stride 1 without padding whose groups have a multiple of "
            f"{V16_KC} channels and whose planes a multiple of 4 pixels"
        )
    _check_pixels(p, "pipelined_tf32")
    g = p.geometry
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, V16_FILTERS)
    grid = (ceil_div(p.N * g.L, V16_PIXELS), p.groups * m_blocks, 1)
    check_grid(grid, "the v16 kernel")
    shared = V16_STAGES * (V16_FILTERS * WG_ROW_BYTES + V16_KC * V16_PITCH * 4) + 1024
    args = ints(N=p.N, C=p.C, M=p.M, L=g.L, groups=p.groups, m_blocks=m_blocks)
    threads = PointwiseMap(
        V16_FILTERS, V16_PIXELS, Mg, g.H_out, g.W_out, 16, V16_FILTERS, OPERANDS["tf32"], 1, True
    )
    block = (2 * V16_PIXELS, 1, 1)
    return Launch(V16_KERNEL, WG_SOURCE, grid, block, shared, ARRAYS, args, threads, "(n, m, oh, ow) of y")


@dataclass(frozen=True)
class HaloMap(PixelRowsMap):
    """v17: v14's warps and lanes (16 pixels x BM filters a warp), with blocks that never
    straddle two samples: block x covers pixels BN * (x % tiles) .. of sample x // tiles, where
    tiles = ceil(L / BN)."""

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, m, oh, ow = index
        l = oh * self.W_out + ow
        group, within = divmod(m, self.filters_per_group)
        m_blocks = ceil_div(self.filters_per_group, self.BM)
        r, q = within % self.BM, l % self.BN
        warp, lane = q // 16, (q % 8) * 4 + (r % 8) // 2
        block_x = n * ceil_div(self.H_out * self.W_out, self.BN) + l // self.BN
        return ThreadRef((block_x, group * m_blocks + within // self.BM, 0), (warp * 32 + lane, 0, 0))

    def describe(self) -> str:
        return (
            f"tensor cores: a block computes {self.BM} filters x {self.BN} pixels of one sample, "
            f"reading x as it lies (NCHW) into a halo tile: the input rows under its pixels and "
            f"the window's rows below them, every value once; {self.BN // 64} warpgroups of 4 "
            f"warps issue TF32 wgmma of 64 pixels x {self.BM} filters a tap, the pixels from "
            f"registers (each lane loads its fragment at its pixels' cells plus the tap's offset), "
            f"the filters from shared memory; each of its {self.BN // 16} warps holds 16 pixels x "
            f"{self.BM} filters of the sums"
        )


@dataclass(frozen=True)
class HaloTile:
    """v17's shared memory for one layer: `stages` stages, each the filter rows of every tap
    (BM rows of 128 bytes a tap) and a halo tile of V17_KC channels x rows_in rows x row_pitch
    floats, channel_pitch floats a channel (8 or 24 more than a multiple of 32: a fragment load
    of 4 channels hits 4 different groups of 8 banks)."""

    BM: int
    l_tiles: int  # blocks along x per sample
    rows_in: int
    row_pitch: int
    channel_pitch: int
    stages: int
    stage_bytes: int

    @property
    def shared_bytes(self) -> int:
        return self.stages * self.stage_bytes + 1024  # and 1 KB to start the filter tiles on 1 KB


def halo_tile(p: ConvProblem) -> HaloTile:
    """v17's layout: the block tile (32 filters where a group has at most 32, else 64) and the
    halo: the most output rows a block's V17_PIXELS pixels span in one sample, plus the window's
    (KH - 1) * dil_h; tile rows from V17_COL0 columns of padding before input column 0 to the
    right padding, rounded to 16 bytes. Two stages where a group has more than V17_KC channels
    and two fit in a block's shared memory, else one."""
    g = p.geometry
    Mg = p.M // p.groups
    BM = 32 if Mg <= 32 else 64
    l_tiles = ceil_div(g.L, V17_PIXELS)
    # the first W_out blocks of a plane start at every remainder mod W_out a block start can have
    rows_out = max(
        min(l0 + V17_PIXELS, g.L) - 1 - l0 // g.W_out * g.W_out
        for l0 in range(0, min(l_tiles, g.W_out) * V17_PIXELS, V17_PIXELS)
    )
    rows_out = rows_out // g.W_out + 1
    rows_in = rows_out + (g.KH - 1) * g.dil_h
    row_pitch = V17_COL0 + g.W + ceil_div(g.pad_right, 4) * 4
    channel_pitch = rows_in * row_pitch
    while channel_pitch % 32 not in (8, 24):
        channel_pitch += 4
    filters = g.KH * g.KW * BM * WG_ROW_BYTES
    stage_bytes = ceil_div(filters + 4 * V17_KC * channel_pitch, 1024) * 1024
    two = (p.C // p.groups) > V17_KC and 2 * stage_bytes + 1024 <= SM90_SHARED
    return HaloTile(BM, l_tiles, rows_in, row_pitch, channel_pitch, 2 if two else 1, stage_bytes)


def halo_fits(p: ConvProblem) -> bool:
    """Where v17 can run: stride 1 (a tile row is an input row), zero padding of at most
    V17_COL0 columns a side, groups of a multiple of V17_KC channels, rows of a multiple of 4
    floats (16-byte copies) and of at most one 16-byte run a thread (a thread copies one column
    of runs), and a stage that fits a block's shared memory."""
    g = p.geometry
    Cg = p.C // p.groups
    shape_ok = (
        (g.stride_h, g.stride_w) == (1, 1)
        and not p.reflect
        and max(g.pad_left, g.pad_right) <= V17_COL0
        and Cg > 0
        and Cg % V17_KC == 0
        and g.W % 4 == 0
        and g.L > 0
    )
    if not shape_ok:
        return False
    tile = halo_tile(p)
    return tile.row_pitch // 4 <= 2 * V17_PIXELS and tile.shared_bytes <= SM90_SHARED


def _runs_halo(p: ConvProblem) -> bool:
    """pipelined_tf32 runs v17 where it fits with a group of at most V17_TF32_FILTERS filters,
    two blocks fit an SM, and the device runs sm_90a code."""
    if not halo_fits(p) or p.M // p.groups > V17_TF32_FILTERS:
        return False
    return 2 * (halo_tile(p).shared_bytes + 1024) <= SM90_SM_SHARED and sm90a.available(WG_SOURCE)


def halo_launch(p: ConvProblem) -> Launch:
    """v17 (kernels/conv2d_hopper.cu): a window's GEMM on Hopper's wgmma, x read as it lies
    into halo tiles (HaloTile) and w from its TF32 channels-last copy (HaloCall runs that copy,
    then this launch, which may start while the copy runs); a block is 32 or 64 filters of a
    group x V17_PIXELS pixels of one sample. ValueError where it cannot run."""
    if not halo_fits(p):
        raise ValueError(
            f"v17 runs layers of stride 1 with zero padding of at most {V17_COL0} columns a side, "
            f"groups of a multiple of {V17_KC} channels, rows of a multiple of 4 values (at most "
            f"{8 * V17_PIXELS - V17_COL0} with their right padding) and a filter set whose stage "
            f"fits in shared memory"
        )
    _check_pixels(p, "pipelined_tf32")
    g = p.geometry
    tile = halo_tile(p)
    Mg = p.M // p.groups
    m_blocks = ceil_div(Mg, tile.BM)
    grid = (p.N * tile.l_tiles, p.groups * m_blocks, 1)
    check_grid(grid, "the v17 kernel")
    args = _geometry_args(p) + ints(
        m_blocks=m_blocks,
        l_tiles=tile.l_tiles,
        rows_in=tile.rows_in,
        row_pitch=tile.row_pitch,
        channel_pitch=tile.channel_pitch,
        stages=tile.stages,
    )
    threads = HaloMap(tile.BM, V17_PIXELS, Mg, g.H_out, g.W_out, 16, tile.BM, OPERANDS["tf32"], 1, True)
    kernel = f"conv2d_v17_halo_tf32_{tile.BM}x{V17_PIXELS}"
    block = (2 * V17_PIXELS, 1, 1)
    index = "(n, m, oh, ow) of y"
    return Launch(
        kernel, WG_SOURCE, grid, block, tile.shared_bytes, HALO_ARRAYS, args, threads, index, dependent=True
    )


def split_tf32_launch(
    p: ConvProblem,
    *,
    tile: tuple[int, int] | None = None,
    k_splits: int | None = None,
    promote: int | None = None,
) -> Launch:
    """v13: fp32 on Hopper's tensor cores, each operand a pair of TF32 values (3xTF32). It runs
    where v12 runs in TF32 (groups of a multiple of PIPE_BK channels) and only there: elsewhere
    a ValueError (auto then measures the other fp32 kernels). Its measured times: the header of
    v13 in kernels/conv2d_hopper.cu."""
    _check_pixels(p, "pipelined_3xtf32")
    _check_plane(p.geometry, "pipelined_3xtf32")
    if not channels_last_fits(p):
        raise ValueError(
            f"pipelined_3xtf32 (v13) runs layers whose groups have a multiple of {PIPE_BK} channels"
        )
    return warpgroup_launch(p, SPLIT_TF32, tile=tile, k_splits=k_splits, promote=promote)


def channels_last_size(p: ConvProblem) -> tuple[int, int]:
    """(Hp, Wp): the rows and columns of v10's channels-last copy of x, padding included: the
    input cells the windows read, (H_out - 1) * stride + (K - 1) * dilation + 1 along each axis."""
    g = p.geometry
    return (
        (g.H_out - 1) * g.stride_h + (g.KH - 1) * g.dil_h + 1,
        (g.W_out - 1) * g.stride_w + (g.KW - 1) * g.dil_w + 1,
    )


def channels_last_stage(p: ConvProblem, precision: str) -> int:
    """Channels per stage of the channels-last GEMM (a stage is one tap): PIPE_BK in TF32 (v10);
    with 16-bit operands (v11) 2 * PIPE_BK where the group's channels are a multiple of it (stage
    rows of 128 bytes as v10's: the same copies a stage, half the barriers per k), else PIPE_BK."""
    if precision in HALF_CODES and (p.C // p.groups) % (2 * PIPE_BK) == 0:
        return 2 * PIPE_BK
    return PIPE_BK


def channels_last_fits(p: ConvProblem) -> bool:
    """Where v10 / v11 run: each group's channels fill whole PIPE_BK-deep stages (a stage is then one
    tap and PIPE_BK channels, 16-byte aligned), the copy's channel tiles fit grid y, and one
    sample of the copy has fewer than 2^31 values (the kernel's tap offsets are 32-bit)."""
    Cg = p.C // p.groups
    Hp, Wp = channels_last_size(p)
    return (
        Cg > 0
        and Cg % PIPE_BK == 0
        and p.C // CL_TILE <= GRID_YZ_LIMIT
        and Hp * Wp * p.C <= INT32_MAX
        and p.geometry.KH * p.geometry.KW * Cg <= INT32_MAX
    )


@dataclass(frozen=True)
class ChannelsLastCopyMap:
    """v10's copy to channels last: block (x, y) moves CL_TILE channels (y-th tile) x CL_CELLS
    consecutive cells q = (n*Hp + r)*Wp + s of the copy (x-th tile); thread (tx, ty) writes channel
    tx of cells ty, ty + 8, ty + 16, ... of the block."""

    Hp: int
    Wp: int
    rounded: str = "TF32"  # what the copy rounds to (v11: bf16 / fp16)
    pairs: bool = False  # v13: the same thread writes (0, n, r, s, c) and (1, n, r, s, c)

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        n, r, s, c = index[1:] if self.pairs else index
        q = (n * self.Hp + r) * self.Wp + s
        return ThreadRef((q // CL_CELLS, c // CL_TILE, 0), (c % CL_TILE, q % CL_CELLS % CL_BLOCK[1], 0))

    def describe(self) -> str:
        rounded = f"to {self.rounded}"
        if self.pairs:
            rounded = "as a TF32 value and the TF32 value of what it leaves"
        return (
            f"a block moves {CL_TILE} channels x {CL_CELLS} cells of the copy through shared memory: "
            f"read along the cells, written along the channels, rounded {rounded}"
        )


def channels_last_copy_launch(p: ConvProblem, precision: str = "tf32", *, with_x: bool = True) -> Launch:
    """v10's copies to channels last, x and w in one launch (v11's: bf16 / fp16 bits, rounded to
    nearest even; v13's: TF32 pairs): x (N, C, H, W) -> (N, Hp, Wp, C), row r, column s of the
    copy being cell (r - pad_top, s - pad_left) with the padding rule (zeros or mirrored); then w
    (M, C/groups, KH, KW) -> (M, KH, KW, C/groups). `with_x=False`: w alone (v17 reads x itself).
    The thread map (ChannelsLastCopyMap) is x's: its blocks come first."""
    g = p.geometry
    Cg = p.C // p.groups
    N = p.N if with_x else 0
    Hp, Wp = channels_last_size(p)
    x_blocks = ceil_div(N * Hp * Wp, CL_CELLS)
    grid = (x_blocks + ceil_div(p.M * g.KH * g.KW, CL_CELLS), (p.C if with_x else Cg) // CL_TILE, 1)
    check_grid(grid, "the channels-last copy")
    args = ints(N=N, C=p.C, H=g.H, W=g.W, Hp=Hp, Wp=Wp, pad_h=g.pad_top, pad_w=g.pad_left)
    args += ints(reflect=int(p.reflect), M=p.M, Cg=Cg, KH=g.KH, KW=g.KW, x_blocks=x_blocks)
    kernel, source = "conv2d_v10_to_channels_last", SOURCE
    if precision in HALF_CODES:
        kernel = "conv2d_v11_to_channels_last"
        args += ints(prec=HALF_CODES[precision])
    elif precision == SPLIT_TF32:  # v13: two copies, TF32 parts and what they leave, one after the other
        kernel, source = "conv2d_v13_to_channels_last", WG_SOURCE
        args += longs(x_part=N * Hp * Wp * p.C, w_part=p.M * g.KH * g.KW * Cg)
    pairs = precision == SPLIT_TF32
    copy_map = ChannelsLastCopyMap(Hp, Wp, "TF32" if precision == "tf32" else precision, pairs)
    written = ("(part, n, r, s, c)" if pairs else "(n, r, s, c)") + " of the channels-last copy of x"
    return Launch(kernel, source, grid, CL_BLOCK, 0, ("w", "w_cl", "x", "x_cl"), args, copy_map, written)


class ChannelsLastCall:
    """v10's / v11's run: x and w copied to channels last in one launch, rounded to the GEMM's
    operand precision (v10: TF32 floats, v11: bf16 / fp16 bits as uint16), then the GEMM launch
    on the copies. Called as (x, w, bias) like Call; `into` writes a y the caller holds (zeroed
    first where k is split, as Call does)."""

    def __init__(self, p: ConvProblem, launch: Launch) -> None:
        import cupy

        g = p.geometry
        Hp, Wp = channels_last_size(p)
        Cg = p.C // p.groups
        precision = launch.threads.operands.lower()
        self.problem, self.launch = p, launch
        self.x_shape, self.w_shape = (p.N, Hp, Wp, p.C), (p.M, g.KH, g.KW, Cg)
        if precision == SPLIT_TF32:  # v13: both parts, one after the other
            self.x_shape, self.w_shape = (2, *self.x_shape), (2, *self.w_shape)
        self.dtype = np.uint16 if precision in HALF_CODES else np.float32
        self.copy = channels_last_copy_launch(p, precision)
        self.zeroed = dict(launch.args)["k_splits"] > 1
        self._cupy = cupy
        self._copy, self._gemm = packed(self.copy), packed(launch)

    def channels_last(self, x: Any, w: Any) -> tuple[Any, Any]:
        """The copies the GEMM reads: x (N, Hp, Wp, C) and w (M, KH, KW, C/groups), TF32 floats
        (v10) or 16-bit values as uint16 (v11)."""
        x_cl = self._cupy.empty(self.x_shape, dtype=self.dtype)
        w_cl = self._cupy.empty(self.w_shape, dtype=self.dtype)
        self._copy((w, w_cl, x, x_cl))
        return x_cl, w_cl

    def into(self, x: Any, w: Any, b: Any, y: Any) -> Any:
        x_cl, w_cl = self.channels_last(x, w)
        self._gemm((x_cl, w_cl, b, y))
        return y

    def __call__(self, x: Any, w: Any, b: Any) -> Any:
        alloc = self._cupy.zeros if self.zeroed else self._cupy.empty
        return self.into(x, w, b, alloc(self.problem.out_shape, dtype=np.float32))


class HaloCall:
    """v17's run: w copied to channels last in TF32 (v10's copy kernel, on w only), then the
    launch on x itself and that copy, a programmatic dependent launch: its blocks bring in their
    input tiles while the copy runs and wait for it before they read w_cl. Called as (x, w, bias)
    like Call."""

    def __init__(self, p: ConvProblem, launch: Launch) -> None:
        import cupy

        g = p.geometry
        self.problem, self.launch = p, launch
        self.w_shape = (p.M, g.KH, g.KW, p.C // p.groups)
        self.copy = channels_last_copy_launch(p, "tf32", with_x=False)
        self._cupy = cupy
        self._copy_w, self._conv = packed(self.copy), packed(launch)

    def into(self, x: Any, w: Any, b: Any, y: Any) -> Any:
        w_cl = self._cupy.empty(self.w_shape, dtype=np.float32)
        self._copy_w((w, w_cl, None, None))  # w alone: no x blocks
        self._conv((x, w_cl, b, y))
        return y

    def __call__(self, x: Any, w: Any, b: Any) -> Any:
        return self.into(x, w, b, self._cupy.empty(self.problem.out_shape, dtype=np.float32))


def launch_call(p: ConvProblem, launch: Launch) -> Any:
    """The callable (x, w, bias) -> y that runs a planned conv2d launch on the GPU: v10's copies
    and GEMM (v11's too), or the one launch (into a zeroed y where k is split)."""
    if launch.source == WG_SOURCE and not sm90a.available(WG_SOURCE):
        raise ValueError(
            f"{launch.kernel} runs on Hopper's warpgroup MMA (compute capability 9.0: H100, H200) "
            "only; this GPU has none (pipelined_tf32 runs v10 / v8 here)"
        )
    if launch.arrays == CL_ARRAYS:
        return ChannelsLastCall(p, launch)
    if launch.arrays == HALO_ARRAYS:
        return HaloCall(p, launch)
    return Call(p.out_shape, launch, zeroed=dict(launch.args).get("k_splits", 1) > 1)


def pipelined_splits(
    p: ConvProblem,
    blocks: int,
    k_splits: int | None = None,
    *,
    stage_k: int = PIPE_BK,
    split_stages: int = PIPE_SPLIT_STAGES,
) -> int:
    """Blocks along gridDim.z that share the k range of v7-v11 (adding into a zeroed y), in
    stages of stage_k values of k (v11: 64 or 32): where the grid gives fewer than
    PIPE_SPLIT_BELOW blocks per SM, splits of about `split_stages` stages of PIPE_BK each (v12:
    WG_SPLIT_STAGES); `k_splits` asks for a count instead. Never an empty split. Measured on the
    H100 (bench.suite --sweep, 128 x 128 tiles): late 7x7x512, 52 blocks of 144 stages: 0.52 ms
    unsplit, 0.24 in 5 splits, 0.27 in 11; 7x7x1024 (104 blocks of 288): 1.03, 0.54 in 10;
    grids of 2+ blocks per SM lost 3-65% when split (VGG-like, 1x1, 5x5, grouped)."""
    kdim = (p.C // p.groups) * p.geometry.KH * p.geometry.KW
    stages = ceil_div(kdim, stage_k)
    if k_splits is None:
        wanted = ceil_div(kdim, PIPE_BK) // split_stages  # in stages of PIPE_BK, whatever stage_k
        k_splits = wanted if blocks < PIPE_SPLIT_BELOW * PIPE_SMS else 1
    k_splits = max(1, min(k_splits, stages))
    return ceil_div(stages, ceil_div(stages, k_splits))  # per split ceil(stages / k), then no empty one


LAUNCHERS = {
    "direct": direct_launch,
    "tiled_basic": tiled_basic_launch,
    "tiled": tiled_launch,
    "implicit_gemm": implicit_gemm_launch,
    "implicit_gemm_tf32": implicit_gemm_tf32_launch,
    **{a: functools.partial(pipelined_launch, algorithm=a) for a in PIPE_PREFIX},
    "im2col": lambda p: im2col.unfold_launch_of(p),
    "pipelined_3xtf32": split_tf32_launch,
    **{a: functools.partial(pixel_rows_launch, algorithm=a) for a in PIXEL_ROWS_ALGORITHMS},
}


@dataclass(frozen=True)
class ConvPlan:
    """A checked conv2d call and the launch it makes (for im2col: its unfold launch)."""

    problem: ConvProblem
    algorithm: str
    launch: Launch | None  # None for "auto" (resolved per call) and for empty outputs

    # the problem's facts, for callers that hold a plan
    geometry = property(lambda self: self.problem.geometry)
    out_shape = property(lambda self: self.problem.out_shape)
    flops = property(lambda self: self.problem.flops)
    x_unroll_bytes_per_sample = property(lambda self: self.problem.x_unroll_bytes_per_sample)

    @property
    def launches(self) -> tuple[Launch, ...]:
        return () if self.launch is None else (self.launch,)


@memoised("conv2d_plans", 1024)
def plan_conv2d(*args: Any, algorithm: str = "direct", **kwargs: Any) -> ConvPlan:
    """check_conv2d's arguments (x_shape, w_shape, bias_shape, stride, padding, dilation, groups,
    padding_mode), then `algorithm` (9th positional or by name): the checked problem and the
    launch that algorithm makes (the app draws it before running)."""
    if len(args) > 8:
        args, algorithm = args[:8], args[8]
    check_algorithm(algorithm)
    p = check_conv2d(*args, **kwargs)
    empty = min(p.out_shape) == 0 or p.C == 0
    launch = None if algorithm == AUTO or empty else LAUNCHERS[algorithm](p)
    return ConvPlan(p, algorithm, launch)


# ---- run: the NumPy twin and the GPU path -----------------------------------------------------------------
def conv2d_numpy(x: np.ndarray, w: np.ndarray, p: ConvProblem) -> np.ndarray:
    """CPU twin of v1-v4 and v6: the same sums, tap by tap. Pad once; for each tap (ki, kj), the strided
    slice of the padded input it reads for every output at once, times w[:, :, ki, kj] (a matrix
    product over the group's channels). The GPU kernels differ in how threads share this work,
    not in what they add up."""
    g, G = p.geometry, p.groups
    Cg, Mg = p.C // G, p.M // G
    padded = padded_input(x, p).reshape(p.N, G, Cg, *g.padded_hw)
    wg = w.reshape(G, Mg, Cg, g.KH, g.KW)
    if Cg == 1:  # each filter sees one channel: a weighted sum of shifted slices, no product to batch
        out = np.zeros((p.N, G, Mg, g.H_out, g.W_out), dtype=np.float32)
        term = np.empty_like(out)
        for ki, kj, rows, columns in tap_slices(g):
            np.multiply(wg[None, :, :, 0, ki, kj, None, None], padded[..., rows, columns], out=term)
            out += term
        return out.reshape(p.out_shape)
    out = np.zeros((p.N, G, Mg, g.L), dtype=np.float32)
    for ki, kj, rows, columns in tap_slices(g):
        patch = padded[..., rows, columns]
        out += wg[:, :, :, ki, kj] @ patch.reshape(p.N, G, Cg, g.L)
    return out.reshape(p.out_shape)


def to_tf32(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 as the tensor cores read them (cvt.rna: 10 mantissa bits,
    to nearest, ties away from zero); infinities and NaN pass through."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(a), rounded, a).astype(np.float32)


def to_tf32_even(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 as cvt.rn.tf32 does (10 mantissa bits, to nearest, ties to
    even): how v16 and v17 round x (one instruction on Hopper, cvt.rna three). It differs from
    to_tf32 only on values exactly halfway between two TF32 numbers."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    halfway = np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))
    rounded = ((bits + halfway) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(a), rounded, a).astype(np.float32)


def to_bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 as cvt.rn.bf16 does (7 mantissa bits, to nearest, ties to
    even), returned as float32; infinities and NaN pass through."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    halfway = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    rounded = ((bits + halfway) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isfinite(a), rounded, a).astype(np.float32)


def to_fp16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to fp16 as cvt.rn.f16 does (10 mantissa bits, ties to even,
    overflow past 65504 to infinity), returned as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(a, dtype=np.float32).astype(np.float16).astype(np.float32)


OPERAND_ROUNDING = {"tf32": to_tf32, "bf16": to_bf16, "fp16": to_fp16}


def conv2d_tf32_numpy(x: np.ndarray, w: np.ndarray, p: ConvProblem) -> np.ndarray:
    """CPU twin of v5 and v7 / v8: the inputs rounded to TF32, then v1-v4's sums in fp32 (a product
    of two TF32 values is exact in fp32, so only the summation order differs from the GPU)."""
    return conv2d_numpy(to_tf32(x), to_tf32(w), p)


def rounded_operands_twin(precision: str) -> Any:
    """CPU twin of a tensor-core kernel: its operands rounded to `precision`, then fp32 sums
    (products of two bf16 or fp16 values are exact in fp32, as TF32's are)."""
    rounding = OPERAND_ROUNDING[precision]
    return lambda x, w, p: conv2d_numpy(rounding(x), rounding(w), p)


def padded_input(x: Any, p: ConvProblem) -> Any:
    """x with the problem's padding applied (zeros or mirrored cells), on x's backend."""
    g = p.geometry
    if p.reflect:
        return reflect_pad(x, g.pads)
    xp = array_module(x)
    return xp.pad(x, ((0, 0), (0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right)))


def offered_algorithms() -> tuple[str, ...]:
    """The algorithms a menu offers on this machine: all of them, v13 and v14 only where the
    device is a Hopper GPU (checked without compiling; elsewhere they could not run)."""
    if sm90a.targets_device(WG_SOURCE):
        return ALL_ALGORITHMS
    return tuple(a for a in ALL_ALGORITHMS if a not in HOPPER_ALGORITHMS)


def resolve_algorithm(x: Any, w: Any, bias: Any = None, *conv: Any, **conv_kw: Any) -> str:
    """The algorithm that "auto" runs for conv2d(x, w, bias, *conv, **conv_kw) (stride, padding,
    dilation, groups, padding_mode as in conv2d).

    On the GPU: the first call for a shape times every algorithm (CUDA events, median of 10)
    and remembers the fastest (gpuops.autotune); later calls reuse the choice. On Hopper the
    candidates include v13 and, where a group has at most PIXEL_ROWS_FILTERS filters, v14
    (3xTF32, fp32 accuracy). On the CPU:
    direct (the tap-by-tap NumPy loop needs no K*K-times larger X_unroll).
    """
    if array_module(x) is np:
        return "direct"
    bound = inspect.signature(conv2d).bind(x, w, bias, *conv, **conv_kw)  # positional or by name: one key
    bound.apply_defaults()
    settings = {k: v for k, v in bound.arguments.items() if k not in ("x", "weight", "bias", "algorithm")}
    key = ("conv2d", tuple(x.shape), tuple(w.shape), bias is None, repr(settings))
    fp32 = ALGORITHMS
    layer = {k: settings[k] for k in ("stride", "padding", "dilation", "groups", "padding_mode")}
    p = check_conv2d(tuple(x.shape), tuple(w.shape), None if bias is None else tuple(bias.shape), **layer)
    if channels_last_fits(p) and sm90a.available(WG_SOURCE):  # v13, v14 (3xTF32): fp32 accuracy on Hopper
        fp32 += SPLIT_ALGORITHMS
        if p.M // p.groups > PIXEL_ROWS_FILTERS:  # v14 gains only where v13 leaves filter rows empty
            fp32 = tuple(a for a in fp32 if a != "pixel_rows_3xtf32")
    candidates = {  # every fp32 algorithm (the plain tiled kernel wins on depthwise layers)
        a: functools.partial(conv2d, x, w, bias, *conv, **conv_kw, algorithm=a) for a in fp32
    }
    return autotune.fastest(key, candidates) or "direct"  # if all refuse, direct raises the message


def conv2d(
    x: Any,
    weight: Any,
    bias: Any = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
    padding_mode: str = "zeros",
    algorithm: str = "direct",
    *,
    im2col_budget_bytes: int | None = None,
) -> Any:
    """F.conv2d (cross-correlation) on (N,C,H,W) or (C,H,W) input; weight (M, C/groups, kh, kw).

    padding: an int, an (h, w) pair, or F.conv2d's strings: "valid" (none) or "same" (output
    as large as the input; stride 1 only; dilation*(k-1) cells per axis, the odd one on the
    bottom / right, as PyTorch splits them). padding_mode "reflect" behaves as
    nn.Conv2d(padding_mode="reflect"), with "same" too. im2col_budget_bytes caps X_unroll on
    the GPU (default: half of the free device memory).
    """
    key = ready_key("conv2d", (x, weight, bias), (stride, padding, dilation, groups, padding_mode, algorithm))
    ready = ready_call(key) if im2col_budget_bytes is None else None
    if ready is not None:  # the same shapes and arguments passed every check before
        call, batched = ready
        y = call(x if batched else x[None], weight, bias)
        return y if batched else y[0]
    xp, x = as_float32(x, "input")
    _, w = as_float32(weight, "weight", xp)
    b = None if bias is None else as_float32(bias, "bias", xp)[1]
    check_algorithm(algorithm)
    chosen = algorithm
    if algorithm == AUTO:
        chosen = resolve_algorithm(x, w, b, stride, padding, dilation, groups, padding_mode)
    bias_shape = None if b is None else b.shape
    plan = plan_conv2d(x.shape, w.shape, bias_shape, stride, padding, dilation, groups, padding_mode, chosen)
    p = plan.problem
    batched = x.ndim == 4
    x4 = x if batched else x[None]
    if plan.launch is None:  # nothing to compute: an empty output or input
        y = xp.zeros(p.out_shape, dtype=np.float32)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
    elif xp is np:
        precision = PRECISIONS.get(chosen, "fp32")
        twin = im2col.im2col_numpy if chosen == "im2col" else conv2d_numpy
        if precision != "fp32":
            twin = rounded_operands_twin(precision)
        y = twin(x4, w, p)
        if b is not None:
            y += b.reshape(1, -1, 1, 1)
    else:
        call = _gpu_call(plan, im2col_budget_bytes)
        if chosen != "im2col" or im2col_budget_bytes is None:  # auto too: its choice is fixed per shape
            keep_ready(key, (call, batched))
        y = call(x4, w, b)
    return y if batched else y[0]


def _gpu_call(plan: ConvPlan, im2col_budget_bytes: int | None = None) -> Any:
    """The callable (x (N, C, H, W), w, bias) -> y that runs a non-empty plan on the GPU."""
    p = plan.problem
    if plan.algorithm == "im2col":
        fits = im2col_budget_bytes is None and p.N * p.x_unroll_bytes_per_sample <= MIN_BUDGET
        chunk = im2col.batch_chunk(p) if fits else None
        return functools.partial(_im2col_call, p, im2col_budget_bytes, chunk)
    return launch_call(p, plan.launch)


def conv2d_call(x: Any, weight: Any, *conv: Any, algorithm: str = AUTO) -> Any | None:
    """conv2d's GPU call for these arrays' shapes, no bias, and `conv` (stride, padding,
    dilation, groups, padding_mode), planned once (auto measured, as conv2d measures it): the
    callable (x (N, C, H, W), w, None) -> y for arrays of those shapes. For an operation that
    repeats one convolution inside its own ready call (flipped_conv), where conv2d's per-call
    lookup would be host time again. None where there is no GPU call to hold (NumPy arrays, a
    3-D x, an empty problem)."""
    xp, x = as_float32(x, "input")
    _, w = as_float32(weight, "weight", xp)
    if xp is np or x.ndim != 4:
        return None
    check_algorithm(algorithm)
    chosen = resolve_algorithm(x, w, None, *conv) if algorithm == AUTO else algorithm
    plan = plan_conv2d(x.shape, w.shape, None, *conv, algorithm=chosen)
    return None if plan.launch is None else _gpu_call(plan)


def _im2col_call(p: ConvProblem, budget_bytes: int | None, chunk: int | None, x: Any, w: Any, b: Any) -> Any:
    """im2col on the GPU: pad first in reflect mode (then unroll without padding), unroll and GEMM."""
    import cupy

    y = cupy.empty(p.out_shape, dtype=np.float32)
    g = p.geometry
    if p.reflect:
        x, g = reflect_pad(x, g.pads), g.unpadded()
    im2col.im2col_cupy(x, w, p, g, y, budget_bytes, chunk)
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y
