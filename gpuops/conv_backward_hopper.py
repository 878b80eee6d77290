"""grad_weight v2 (kernels/conv_backward_hopper.cu): dW as one implicit GEMM on Hopper's tensor
cores, fp32 values as TF32 pairs (v13's 3xTF32), check -> plan -> run.

Why: the `gemm` algorithm writes cols (KH*KW times x) and runs cuBLAS on CUDA cores; on a 5x5
layer that is 0.42-0.49 ms where PyTorch takes 0.16-0.18 (H100). v2 reads x through KW shifted
copies (grad_weight_v2_shifted_copy), whose rows are the GEMM's operand rows, and dY through its
TF32 pairs (grad_weight_v2_split_pairs). The kernel's header says what it changes and why its
rows line up; this module plans its three launches, says where they run (`refusal`), runs them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops import sm90a
from gpuops.cache import Memo, memoised
from gpuops.cublas import samples_per_chunk
from gpuops.index_math import INT32_MAX, ceil_div
from gpuops.launch import Launch, ThreadRef, check_grid, ints, longs, packed, row_launch

SOURCE = "conv_backward_hopper.cu"
ALGORITHM = "implicit_gemm_3xtf32"
GEMM_KERNEL, COPY_KERNEL = "grad_weight_v2_3xtf32", "grad_weight_v2_shifted_copy"
SPLIT_KERNEL = "grad_weight_v2_split_pairs"
BM, BN = 64, 128  # filters x columns (c, ki, kj) a block: the #defines GW_BM, GW_BN of the .cu file
STAGES = 4  # GW_STAGES
THREADS = 128  # GW_THREADS: one warpgroup
ROW_BYTES = 128  # a stage row: 32 fp32 pixels (WG_ROW_BYTES)
PIXELS = ROW_BYTES // 4  # pixels a stage
PROMOTE = 2  # stages between moves of the sums into fp32 registers (v13's X3_PROMOTE)
SMS = 132  # the H100's multiprocessors
WAVES = 1  # split K into as many blocks as fill the SMs this many times (one block an SM at a time)
MIN_SPLIT_STAGES = 16  # ... but no split shorter than this: its pipeline fill and write-back
COPY_THREADS = 256  # grad_weight_v2_split_pairs's block


def shifted_rows(q: Any) -> int:
    """Hr: the rows of a shifted copy, every row some tap ki of some output row oh reads
    (oh + ki * dilation at stride 1)."""
    g = q.geometry
    return g.H_out + (g.KH - 1) * g.dil_h


def copy_bytes_per_sample(q: Any) -> int:
    """Bytes of one sample's KW shifted copies (two parts each) and of its dY's pairs."""
    g = q.geometry
    return 8 * (g.KW * q.C * shifted_rows(q) * g.W_out + q.M * q.H_dy * q.W_dy)


def refusal(q: Any) -> str | None:
    """Why v2 cannot run this problem (None: it can). Its stages are 32 consecutive pixels of one
    sample read with 16-byte copies, so: stride 1 along the rows (an output row's tap ki is then a
    whole copy row), 32 | H_out*W_out and 4 | W_out; dy is conv2d's output (not a transposed
    convolution's input); 32-bit counts of the batch's pixels and of dW's columns."""
    g = q.geometry
    L = q.H_dy * q.W_dy
    if (q.H_dy, q.W_dy) != (g.H_out, g.W_out):
        return "it computes conv2d's grad_weight (dy the size of the forward output)"
    if g.stride_h != 1:
        return "it needs stride 1 along the rows"
    if L % PIXELS:
        return f"it needs H_out x W_out a multiple of {PIXELS} (a stage is {PIXELS} pixels of one sample)"
    if g.W_out % 4:
        return "it needs W_out a multiple of 4 (16-byte aligned rows in the shifted copies)"
    if q.N * L > INT32_MAX or (q.C // q.groups) * g.KH * g.KW > INT32_MAX:
        return "its pixel and column counts are 32-bit"
    return None


def check_fits(q: Any) -> None:
    """ValueError where v2's layout cannot hold this problem (refusal)."""
    reason = refusal(q)
    if reason is not None:
        raise ValueError(f"weight_algorithm {ALGORITHM!r} (grad_weight v2) does not fit: {reason}")


def check(q: Any) -> None:
    """ValueError where v2 cannot run: its layout (check_fits), or a device without sm_90a."""
    check_fits(q)
    if not sm90a.available(SOURCE):
        raise ValueError(
            f"weight_algorithm {ALGORITHM!r} runs on Hopper's warpgroup MMA (compute capability 9.0: "
            "H100, H200) only"
        )


def splits(q: Any, blocks: int, k_splits: int | None = None, waves: int = WAVES) -> int:
    """Blocks along z sharing the N*L/32 stages: at most `waves` x SMS blocks in all (a wave that
    holds one block more than the SMs costs a whole wave), no split under MIN_SPLIT_STAGES
    stages, never an empty one (`k_splits` asks for a count instead)."""
    stages = q.N * q.H_dy * q.W_dy // PIXELS
    if k_splits is None:
        k_splits = min(waves * SMS // blocks, stages // MIN_SPLIT_STAGES)
    k_splits = max(1, min(k_splits, stages))
    return ceil_div(stages, ceil_div(stages, k_splits))


@dataclass(frozen=True)
class WeightTileMap:
    """grad_weight v2: block (x, y) computes BN columns j = (c*KH + ki)*KW + kj x BM filters of
    group y // m_blocks; warp w holds filters 16w .. 16w + 15 of the block, lane 4q + r the
    columns 8b + 2r, 8b + 2r + 1 of filters 16w + q and 16w + q + 8 (wgmma's layout). With split
    K the blocks along z add into dW; the map names split 0's thread."""

    filters_per_group: int
    KH: int
    KW: int
    k_splits: int = 1

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        m, c, ki, kj = index
        group, within = divmod(m, self.filters_per_group)
        j = (c * self.KH + ki) * self.KW + kj
        r, col = within % BM, j % BN
        lane = (r % 8) * 4 + (col % 8) // 2
        m_blocks = ceil_div(self.filters_per_group, BM)
        return ThreadRef((j // BN, group * m_blocks + within // BM, 0), ((r // 16) * 32 + lane, 0, 0))

    def describe(self) -> str:
        split = f"; the batch's pixels are split over {self.k_splits} blocks along z, which add into dW"
        return (
            f"tensor cores: a block computes {BM} filters x {BN} weights (c, ki, kj), a warpgroup "
            f"issuing three TF32 wgmma a k-step over 32 pixels of the batch (fp32 accuracy)"
            + (split if self.k_splits > 1 else "")
        )


@dataclass(frozen=True)
class PairsOf:
    """A copy that writes both TF32 parts of a value from one thread: the map of part 0 (`of`)
    names the writer of (part, *index) too."""

    of: Any

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        return self.of.thread_of(launch, index[1:])

    def describe(self) -> str:
        return self.of.describe() + "; each thread writes both TF32 parts of its cells"


@memoised("grad_weight_v2_copies", 256)
def copy_launch(q: Any) -> Launch:
    """The KW shifted copies of x (N, C, H, W) -> (2, KW, N, C, Hr, W_out) as TF32 pairs: a row
    kernel over the copy rows, 4 cells a thread (gpuops.launch.row_launch: its grid, block, map)."""
    g = q.geometry
    Hr = shifted_rows(q)
    shape = (g.KW, q.N, q.C, Hr, g.W_out)
    args = ints(N=q.N, C=q.C, H=g.H, W=g.W, Hr=Hr, W_out=g.W_out, stride_w=g.stride_w)
    args += ints(pad_top=g.pad_top, pad_left=g.pad_left, dil_w=g.dil_w) + longs(part=int(np.prod(shape)))
    rows = row_launch(COPY_KERNEL, SOURCE, ("x", "xs"), shape, g.W_out, args, cells=4)
    return dataclasses.replace(rows, threads=PairsOf(rows.threads), index="(part, kj, n, c, r, ow) of xs")


@dataclass(frozen=True)
class PairsMap:
    """grad_weight_v2_split_pairs: a grid-stride loop, COPY_THREADS a block, 4 values a thread:
    quad i = value // 4 of dY (both its parts) is thread i % COPY_THREADS of block
    i // COPY_THREADS % grid, pass i // (grid x COPY_THREADS)."""

    dy_shape: tuple[int, int, int, int]

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        i = int(np.ravel_multi_index(index[1:], self.dy_shape)) // 4  # 4 consecutive values a thread
        step, rest = divmod(i, launch.grid[0] * COPY_THREADS)
        return ThreadRef((rest // COPY_THREADS, 0, 0), (rest % COPY_THREADS, 0, 0), (step,))

    def describe(self) -> str:
        return "a grid-stride loop: each thread splits values a whole grid apart into TF32 pairs"


@memoised("grad_weight_v2_splits", 256)
def split_launch(q: Any) -> Launch:
    """dY -> its TF32 pairs (2, N, M, H_out, W_out), which the GEMM reads (a grid of at most 64
    blocks an SM, each thread looping over quads)."""
    count = q.N * q.M * q.H_dy * q.W_dy
    grid = (max(1, min(ceil_div(count, 4 * COPY_THREADS), 64 * SMS)), 1, 1)
    block = (COPY_THREADS, 1, 1)
    threads = PairsMap(q.dy_shape)
    return Launch(
        SPLIT_KERNEL,
        SOURCE,
        grid,
        block,
        0,
        ("dy", "dys"),
        longs(count=count),
        threads,
        "(part, n, m, oh, ow)",
    )


@memoised("grad_weight_v2_gemms", 256)
def gemm_launch(q: Any, k_splits: int | None = None, waves: int = WAVES) -> Launch:
    """grad_weight v2's GEMM: grid (column tiles, groups x filter tiles, splits); shared memory:
    STAGES stages of (BM + BN) rows x 2 parts x 128 bytes, and 1 KB to start them on a 1 KB boundary."""
    g = q.geometry
    Mg, cols = q.M // q.groups, (q.C // q.groups) * g.KH * g.KW
    m_blocks = ceil_div(Mg, BM)
    grid = (max(1, ceil_div(cols, BN)), q.groups * m_blocks, 1)
    split = splits(q, grid[0] * grid[1], k_splits, waves)
    grid = (grid[0], grid[1], split)
    check_grid(grid, "grad_weight v2")
    args = ints(N=q.N, C=q.C, M=q.M, KH=g.KH, KW=g.KW, H_out=g.H_out, W_out=g.W_out, dil_h=g.dil_h)
    args += ints(groups=q.groups, Hr=shifted_rows(q), m_blocks=m_blocks, k_splits=split, promote=PROMOTE)
    args += longs(dy_part=q.N * q.M * q.H_dy * q.W_dy, xs_part=g.KW * q.N * q.C * shifted_rows(q) * g.W_out)
    shared = STAGES * 2 * (BM + BN) * ROW_BYTES + 1024
    threads = WeightTileMap(Mg, g.KH, g.KW, split)
    arrays = ("dys", "xs", "dw")
    return Launch(
        GEMM_KERNEL, SOURCE, grid, (THREADS, 1, 1), shared, arrays, args, threads, "(m, c, ki, kj) of dw"
    )


def chunk(q: Any, budget_bytes: int | None = None) -> int:
    """Samples a step, so that the shifted copies stay within the memory budget (cublas's rule)."""
    instead = "use weight_algorithm='gemm' or 'direct'"
    return samples_per_chunk(
        q.N, copy_bytes_per_sample(q), "grad_weight v2 (its shifted copies)", instead, budget_bytes
    )


# ---- the NumPy twin: the same copies and the same rows -------------------------------------------------
def shifted_copies_numpy(x: np.ndarray, q: Any) -> np.ndarray:
    """grad_weight_v2_shifted_copy on the CPU: xs[kj, n, c, r, ow] = x[n, c, r - P_top,
    ow*S_w + kj*D_w - P_left], zero outside x."""
    g = q.geometry
    xs = np.zeros((g.KW, q.N, q.C, shifted_rows(q), g.W_out), dtype=np.float32)
    for kj in range(g.KW):
        iw = np.arange(g.W_out) * g.stride_w + kj * g.dil_w - g.pad_left
        inside = (iw >= 0) & (iw < g.W)
        for r in range(shifted_rows(q)):
            if 0 <= r - g.pad_top < g.H:
                xs[kj, :, :, r][:, :, inside] = x[:, :, r - g.pad_top][:, :, iw[inside]]
    return xs


def weight_grad_numpy(dy: np.ndarray, x: np.ndarray, q: Any) -> np.ndarray:
    """v2 on the CPU, read the kernel's way: row (c, ki, kj) of X over sample n is the run of L
    cells of copy kj starting ki*D_h rows in; dW_g = dY_g [Mg, N*L] @ X_g^T, in float64 sums."""
    check_fits(q)
    g, G = q.geometry, q.groups
    Cg, Mg, L = q.C // G, q.M // G, g.H_out * g.W_out
    flat = shifted_copies_numpy(x, q).reshape(g.KW, q.N, q.C, -1)
    X = np.empty((q.C, g.KH, g.KW, q.N, L), dtype=np.float64)
    for ki in range(g.KH):
        start = ki * g.dil_h * g.W_out
        for kj in range(g.KW):
            X[:, ki, kj] = flat[kj, :, :, start : start + L].transpose(1, 0, 2)
    dY = dy.reshape(q.N, q.M, L).transpose(1, 0, 2).reshape(q.M, q.N * L)
    dw = np.empty(q.w_shape, dtype=np.float32)
    for group in range(G):
        rows = X[group * Cg : (group + 1) * Cg].reshape(Cg * g.KH * g.KW, q.N * L)
        dw[group * Mg : (group + 1) * Mg] = (dY[group * Mg : (group + 1) * Mg] @ rows.T).reshape(
            dw[:Mg].shape
        )
    return dw


# ---- run ------------------------------------------------------------------------------------------------
class WeightGradCall:
    """v2's run for one problem, planned once: the batch cut into chunks whose copies fit the
    memory budget (decided on the first call, as the im2col path does), and per chunk size its
    three packed launches. Called as (dy, x) -> dW."""

    def __init__(self, q: Any, budget_bytes: int | None = None, k_splits: int | None = None) -> None:
        check(q)
        self.q, self.step = q, chunk(q, budget_bytes)
        self.plans = {}
        for nb in {self.step, q.N % self.step or self.step}:
            part_q = q if nb == q.N else dataclasses.replace(q, N=nb)
            g, gemm = part_q.geometry, gemm_launch(part_q, k_splits)
            shapes = ((2, g.KW, nb, q.C, shifted_rows(q), g.W_out), (2, *part_q.dy_shape))
            launches = tuple(packed(launch) for launch in (copy_launch(part_q), split_launch(part_q), gemm))
            self.plans[nb] = (shapes, launches, gemm.arg("k_splits") > 1)

    def __call__(self, dy: Any, x: Any) -> Any:
        import cupy

        dw = None
        for n0 in range(0, self.q.N, self.step):
            nb = min(self.step, self.q.N - n0)
            (xs_shape, dys_shape), (copy, split, gemm), zeroed = self.plans[nb]
            xs, dys = cupy.empty(xs_shape, dtype=np.float32), cupy.empty(dys_shape, dtype=np.float32)
            copy((x[n0 : n0 + nb], xs))
            split((dy[n0 : n0 + nb], dys))
            part = (cupy.zeros if zeroed else cupy.empty)(self.q.w_shape, dtype=np.float32)
            gemm((dys, xs, part))
            dw = part if dw is None else dw + part
        return dw


_calls = Memo("grad_weight_v2_calls", 256)


def weight_grad(dy: Any, x: Any, q: Any, budget_bytes: int | None = None, k_splits: int | None = None) -> Any:
    """dW (M, C/groups, KH, KW) on the GPU: per chunk of samples the shifted copies of x and dY's
    pairs, then the GEMM (into a zeroed dW where k is split); the chunks' dW are added. The
    default plan is kept per device and problem; a budget or a split count asked for plans anew."""
    import cupy

    if budget_bytes is not None or k_splits is not None:
        return WeightGradCall(q, budget_bytes, k_splits)(dy, x)
    key = (cupy.cuda.runtime.getDevice(), q)
    return _calls.get_or_make(key, lambda: WeightGradCall(q))(dy, x)
