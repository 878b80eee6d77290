"""grad_weight v2 (kernels/conv_backward_hopper.cu): dW as one implicit GEMM on Hopper's tensor
cores, fp32 values as TF32 pairs (v13's 3xTF32), check -> plan -> run.

Why: the `gemm` algorithm writes cols (KH*KW times x) and runs cuBLAS on CUDA cores; on a 5x5
layer that is 0.42-0.49 ms where PyTorch takes 0.16-0.18 (H100). v2 reads x through KW x S_h
shifted copies (grad_weight_v2_shifted_copy), whose rows are the GEMM's operand rows, and dY
through its TF32 pairs (grad_weight_v2_split_pairs), both in rows of Wp (W_out rounded up to 4).
The kernel's header says what it changes and why its rows line up; this module plans its three
launches, says where they run (`refusal`), runs them.
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
    """Hr: the rows of a shifted copy (one row phase ph of x's rows), every row some tap ki of
    some output row oh reads: row oh + ki*D_h // S_h of phase ki*D_h % S_h."""
    g = q.geometry
    return g.H_out + (g.KH - 1) * g.dil_h // g.stride_h


def padded_width(q: Any) -> int:
    """Wp: the cells of a copy row and of a dY pairs row, W_out rounded up to 4 (16-byte rows)."""
    return ceil_div(q.geometry.W_out, 4) * 4


def copy_shape(q: Any, samples: int | None = None) -> tuple[int, ...]:
    """xs: (2 parts, KW, S_h phases, N, C, Hr, Wp)."""
    g = q.geometry
    N = q.N if samples is None else samples
    return (2, g.KW, g.stride_h, N, q.C, shifted_rows(q), padded_width(q))


def pairs_shape(q: Any, samples: int | None = None) -> tuple[int, ...]:
    """dys: (2 parts, N, M, H_out, Wp)."""
    N = q.N if samples is None else samples
    return (2, N, q.M, q.geometry.H_out, padded_width(q))


def stages_per_sample(q: Any) -> int:
    """A sample's stages of PIXELS cells: its H_out*Wp cells, the last stage zero-filled past them."""
    return ceil_div(q.geometry.H_out * padded_width(q), PIXELS)


def copy_bytes_per_sample(q: Any) -> int:
    """Bytes of one sample's shifted copies and of its dY's pairs (two parts each)."""
    return 4 * (int(np.prod(copy_shape(q, 1))) + int(np.prod(pairs_shape(q, 1))))


def refusal(q: Any) -> str | None:
    """Why v2 cannot run this problem (None: it can): dy must be conv2d's output (not a transposed
    convolution's input), and its counts are 32-bit: the batch's stages x 32 cells, the copy rows
    and dW's columns."""
    g = q.geometry
    if (q.H_dy, q.W_dy) != (g.H_out, g.W_out):
        return "it computes conv2d's grad_weight (dy the size of the forward output)"
    copy_rows = g.KW * g.stride_h * q.N * q.C * shifted_rows(q)
    if max(q.N * stages_per_sample(q) * PIXELS, copy_rows, (q.C // q.groups) * g.KH * g.KW) > INT32_MAX:
        return "its cell, row and column counts are 32-bit"
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
    stages = q.N * stages_per_sample(q)
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
    """The shifted copies of x (N, C, H, W) -> (2, KW, S_h, N, C, Hr, Wp) as TF32 pairs: a row
    kernel over the copy rows, 4 cells a thread (gpuops.launch.row_launch: its grid, block, map)."""
    g = q.geometry
    shape = copy_shape(q)[1:]
    args = ints(N=q.N, C=q.C, H=g.H, W=g.W, Hr=shifted_rows(q), stride_h=g.stride_h, W_out=g.W_out)
    args += ints(Wp=padded_width(q), stride_w=g.stride_w, pad_top=g.pad_top, pad_left=g.pad_left)
    args += ints(dil_w=g.dil_w) + longs(part=int(np.prod(shape)))
    rows = row_launch(COPY_KERNEL, SOURCE, ("x", "xs"), shape, padded_width(q), args, cells=4)
    return dataclasses.replace(rows, threads=PairsOf(rows.threads), index="(part, kj, ph, n, c, r, ow) of xs")


@dataclass(frozen=True)
class PairsMap:
    """grad_weight_v2_split_pairs: a grid-stride loop, COPY_THREADS a block, 4 cells a thread:
    quad i = cell // 4 of the padded rows (N, M, H_out, Wp), both its parts, is thread
    i % COPY_THREADS of block i // COPY_THREADS % grid, pass i // (grid x COPY_THREADS)."""

    shape: tuple[int, int, int, int]

    def thread_of(self, launch: Launch, index: tuple[int, ...]) -> ThreadRef:
        i = int(np.ravel_multi_index(index[1:], self.shape)) // 4  # 4 consecutive cells a thread
        step, rest = divmod(i, launch.grid[0] * COPY_THREADS)
        return ThreadRef((rest // COPY_THREADS, 0, 0), (rest % COPY_THREADS, 0, 0), (step,))

    def describe(self) -> str:
        return "a grid-stride loop: each thread splits values a whole grid apart into TF32 pairs"


@memoised("grad_weight_v2_splits", 256)
def split_launch(q: Any) -> Launch:
    """dY -> its TF32 pairs (2, N, M, H_out, Wp), which the GEMM reads (a grid of at most 64
    blocks an SM, each thread looping over quads)."""
    shape = pairs_shape(q)[1:]
    count = int(np.prod(shape))
    grid = (max(1, min(ceil_div(count, 4 * COPY_THREADS), 64 * SMS)), 1, 1)
    block = (COPY_THREADS, 1, 1)
    args = longs(count=count) + ints(W_out=q.geometry.W_out, Wp=padded_width(q))
    threads = PairsMap(shape)
    return Launch(SPLIT_KERNEL, SOURCE, grid, block, 0, ("dy", "dys"), args, threads, "(part, n, m, oh, ow)")


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
    args = ints(N=q.N, C=q.C, M=q.M, KH=g.KH, KW=g.KW, H_out=g.H_out, Wp=padded_width(q))
    args += ints(stride_h=g.stride_h, dil_h=g.dil_h, groups=q.groups, Hr=shifted_rows(q), m_blocks=m_blocks)
    args += ints(k_splits=split, promote=PROMOTE)
    args += longs(dy_part=int(np.prod(pairs_shape(q)[1:])), xs_part=int(np.prod(copy_shape(q)[1:])))
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
    """grad_weight_v2_shifted_copy on the CPU (one part): xs[kj, ph, n, c, r, ow] =
    x[n, c, r*S_h + ph - P_top, ow*S_w + kj*D_w - P_left], zero outside x and past W_out."""
    g = q.geometry
    xs = np.zeros(copy_shape(q)[1:], dtype=np.float32)
    for kj in range(g.KW):
        iw = np.arange(g.W_out) * g.stride_w + kj * g.dil_w - g.pad_left
        inside = (iw >= 0) & (iw < g.W)
        for ph in range(g.stride_h):
            for r in range(shifted_rows(q)):
                ih = r * g.stride_h + ph - g.pad_top
                if 0 <= ih < g.H:
                    xs[kj, ph, :, :, r, : g.W_out][:, :, inside] = x[:, :, ih][:, :, iw[inside]]
    return xs


def dy_rows_numpy(dy: np.ndarray, q: Any) -> np.ndarray:
    """dY in the pairs' rows of Wp cells (one part): zeros past W_out."""
    rows = np.zeros(pairs_shape(q)[1:], dtype=np.float32)
    rows[..., : q.geometry.W_out] = dy
    return rows


def weight_grad_numpy(dy: np.ndarray, x: np.ndarray, q: Any) -> np.ndarray:
    """v2 on the CPU, read the kernel's way: row (c, ki, kj) of X over sample n is the run of
    Lr = H_out*Wp cells of copy (kj, ki*D_h % S_h) starting ki*D_h // S_h rows in, dY's row the
    Lr cells of its padded rows; dW_g = dY_g [Mg, N*Lr] @ X_g^T, in float64 sums. (The kernel's
    zero-filled stage tails add nothing and are left out.)"""
    check_fits(q)
    g, G = q.geometry, q.groups
    Cg, Mg, Wp = q.C // G, q.M // G, padded_width(q)
    L = g.H_out * Wp
    flat = shifted_copies_numpy(x, q).reshape(g.KW, g.stride_h, q.N, q.C, -1)
    X = np.empty((q.C, g.KH, g.KW, q.N, L), dtype=np.float64)
    for ki in range(g.KH):
        phase, start = ki * g.dil_h % g.stride_h, ki * g.dil_h // g.stride_h * Wp
        for kj in range(g.KW):
            X[:, ki, kj] = flat[kj, phase, :, :, start : start + L].transpose(1, 0, 2)
    dY = dy_rows_numpy(dy, q).reshape(q.N, q.M, L).transpose(1, 0, 2).reshape(q.M, q.N * L)
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
            gemm = gemm_launch(part_q, k_splits)
            shapes = (copy_shape(q, nb), pairs_shape(q, nb))
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
