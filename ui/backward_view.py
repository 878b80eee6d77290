"""What the Backward & transposed page computes, kept out of the page script: the small example (x,
w, dY and the gradients the chosen kernels compute), the reflect-pad backward example, the adjoint
identity, the hover rules, the runtime candidates, and the sentences that name the GPU thread
behind each number."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

import gpuops
from gpuops.conv2d import check_conv2d
from gpuops.launch import Launch, ThreadRef
from gpuops.maps import conv_backward as maps
from gpuops.reflect_pad import reflect_pad_backward_launch
from ui import budget, hover
from ui.picking import Grid
from ui.records import Example
from ui.sidebar import SourceImage
from ui.state import Cell
from viz import conv_backward as viz
from viz.style import Style

ALG_NAMES = {
    "scatter": "scatter (v1, atomicAdd)",
    "gather": "gather (v2)",
    "gemm_fold": "GEMM + fold",
    "flipped_conv": "conv2d, flipped filter",
    "direct": "direct (v1, a block a weight)",
    "direct_pairs": "direct (v3, a block a filter-channel pair)",
    "direct_pairs_shared": "direct (v4, v3's rows in shared memory)",
    "direct_columns": "direct (v5, a thread a column, taps in registers)",
    "gemm": "GEMM (unfold + cuBLAS)",
    "batch_gemm": "one GEMM over the batch",
    "forward_conv": "conv2d of x with dY",
    "implicit_gemm_3xtf32": "implicit GEMM, tensor cores (v2)",
}
RUNTIME_FILTERS = 8  # M of the runtime comparison on the user's image

Pads = tuple[int, int, int, int]


def _device(plane: np.ndarray):
    return gpuops.asarray(plane[None, None])


def _thread(ref: ThreadRef) -> str:
    return f"block {tuple(ref.block)}, thread {tuple(ref.thread)}"


def pair(p: tuple[int, int]) -> str:
    """A size pair written once when both are equal."""
    return str(p[0]) if p[0] == p[1] else f"({p[0]}, {p[1]})"


# ---- the example: x, w, dY and what the kernels compute from them ------------------------------------------
def example(
    image: SourceImage, g: gpuops.WindowGeometry, numbers: tuple[str, int], kernels: tuple[str, str]
) -> Example:
    """numbers: ("integers" | "image", seed); kernels: (grad_input algorithm, grad_weight algorithm).
    Small seeded integers, or x cropped from the image with dY = y = conv2d(x, w) (the gradient of
    L = ½ Σ y²); then dX and dW from the chosen kernels, and the launches they make."""
    (nums, seed), (alg, walg) = numbers, kernels
    rng = np.random.default_rng(seed)
    w = rng.choice([-2.0, -1.0, 1.0, 2.0], size=(g.KH, g.KW)).astype(np.float32)
    args = dict(stride=(g.stride_h, g.stride_w), padding=(g.pad_top, g.pad_left), dilation=(g.dil_h, g.dil_w))
    if nums == "image":
        crop = maps.detail_crop(image.planes.mean(axis=0), g.H, g.W)
        x, fmt = np.round(crop.values, 1).astype(np.float32), ".1f"  # one decimal: dY and dX keep one too
        dy = gpuops.to_numpy(gpuops.conv2d(_device(x), _device(w), **args))[0, 0]
        note = (
            f"x: rows {crop.top}-{crop.bottom}, columns {crop.left}-{crop.right} of {image.name} (grey); "
            "dY = y = conv2d(x, w), the gradient of L = ½ Σ y²."
        )
    else:
        x, fmt, note = rng.integers(0, 5, size=(g.H, g.W)).astype(np.float32), ".3g", ""
        dy = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0], size=(g.H_out, g.W_out)).astype(np.float32)
    dx = gpuops.conv2d_grad_input(_device(dy), (1, 1, g.H, g.W), _device(w), **args, algorithm=alg)
    dw = gpuops.conv2d_grad_weight(_device(dy), _device(x), (1, 1, g.KH, g.KW), **args, algorithm=walg)
    shapes = ((1, 1, g.H_out, g.W_out), (1, 1, g.H, g.W), (1, 1, g.KH, g.KW))
    plan = gpuops.plan_conv2d_backward(*shapes, **args, algorithm=alg, weight_algorithm=walg)
    key = (g, nums, seed, image.key if nums == "image" else "")
    return Example(g, x, w, dy, gpuops.to_numpy(dx)[0, 0], gpuops.to_numpy(dw)[0, 0], plan, fmt, note, key)


# ---- dE/dX -------------------------------------------------------------------------------------------------
def links_of(g: gpuops.WindowGeometry, cell: Cell) -> tuple[viz.Links, maps.GradientSources | None]:
    """What a picked dX cell gathers (its sources) or a picked dY cell scatters into."""
    if cell.space == "dx":
        src = maps.gradient_sources(g, cell.row, cell.col)
        return viz.Links(outputs=src.outputs, taps=src.taps, flipped=src.flipped), src
    targets = maps.scatter_targets(g, cell.row, cell.col)
    return viz.Links(taps=targets[:, 2:], inputs=targets[:, :2]), None


def gather_caption(ex: Example, cell: Cell, terms: maps.GradientTerms, alg: str) -> str:
    """The gathered sum, what the kernel computed, and who computes it on the GPU."""
    src = maps.gradient_sources(ex.g, cell.row, cell.col)
    return (
        f"Sum of {len(terms.product)} products = {terms.total:.6g}; the {ALG_NAMES[alg]} kernel computed "
        f"dX[{cell.row}, {cell.col}] = {ex.dx[cell.row, cell.col]:.6g}. " + _who_gathers(ex, cell, src, alg)
    )


def _who_gathers(ex: Example, cell: Cell, src: maps.GradientSources, alg: str) -> str:
    launch = ex.plan.input_launch
    if alg == "gather":
        return (
            f"On the GPU, {_thread(launch.thread_of(0, 0, cell.row, cell.col))} of "
            f"`{launch.kernel}` computes this cell alone, adding the products in a fixed order: no atomics."
        )
    if alg == "scatter":
        threads = [_thread(launch.thread_of(0, 0, int(oh), int(ow))) for oh, ow in src.outputs[:4]]
        more = "" if len(src.outputs) <= 4 else f" and {len(src.outputs) - 4} more"
        return (
            f"On the GPU, `{launch.kernel}` has no thread for this cell: the threads of its "
            f"{len(src.outputs)} sources ({'; '.join(threads)}{more}) each atomicAdd their "
            f"product into it, in any order."
        )
    if alg == "flipped_conv":
        return (
            "On the GPU this sum is a forward convolution: conv2d slides the flipped filter over dY "
            "(with stride > 1, one convolution per phase: the cells a stride apart that meet the same "
            f"taps), and dX[{cell.row}, {cell.col}] is one of its outputs, computed by whichever "
            "forward kernel is fastest for the shape."
        )
    if launch is None:
        return "cuBLAS computes this cell in the GEMM (1x1 kernel, stride 1, no padding: nothing to fold)."
    return (
        f"cuBLAS first computes cols = wᵀ · dY (one column per output, one row per tap); then "
        f"{_thread(launch.thread_of(0, 0, cell.row, cell.col))} of `{launch.kernel}` sums the column entries "
        "that belong to this cell."
    )


def scatter_caption(ex: Example, cell: Cell, n: int, alg: str) -> str:
    """Who adds a picked dY cell into its n dX cells."""
    launch = ex.plan.input_launch
    if alg == "scatter":
        return (
            f"On the GPU, {_thread(launch.thread_of(0, 0, cell.row, cell.col))} of `{launch.kernel}` reads "
            f"dY[{cell.row}, {cell.col}] once and makes these {n} atomicAdds; neighbouring threads add into "
            "the same cells at the same time, so the order (and the last bits) can change from run to run."
        )
    return (
        f"This is the scatter view: with the {ALG_NAMES[alg]} kernel no thread owns "
        f"dY[{cell.row}, {cell.col}]; each of the {n} dX cells it feeds reads it while gathering "
        f"(pick the scatter kernel to see its thread)."
    )


# ---- the transposed convolution ---------------------------------------------------------------------------
def stamps_caption(g: gpuops.WindowGeometry) -> str:
    """How conv_transpose2d stamps dY with the current settings."""
    tg = maps.transposed_of(g)
    return (
        f"Press Play, or step with the slider. conv_transpose2d(dY, w, stride {g.stride_h}, padding "
        f"{g.pad_top}, output_padding {pair(tg.output_padding)}, dilation {g.dil_h}) stamps dY[i, j] · w "
        f"with its top-left tap at (i·{g.stride_h} - {g.pad_top}, j·{g.stride_w} - {g.pad_left}); blue cells "
        f"fall outside the output (padding crops them); the last frame is dX above, cell for cell."
    )


def stamps(ex: Example, look: Style) -> go.Figure:
    """conv_transpose2d of the example's dY, stamp by stamp (the same for every pick)."""
    frames = maps.stamp_frames(maps.transposed_of(ex.g), ex.dy, ex.w)
    return viz.stamp_animation(ex.dy, frames, look, fmt=ex.fmt, plot_width=viz.FULL_WIDTH[look.name])


def checkerboard_text(g: gpuops.WindowGeometry, counts: np.ndarray) -> str:
    """Even overlap, or the checkerboard a stride that does not divide the taps evenly paints."""
    phases = maps.stamps_per_phase(g.KH, g.stride_h, g.dil_h)
    found = ", ".join(str(int(v)) for v in sorted(set(counts.ravel().tolist()), reverse=True))
    if len(set(phases.tolist())) == 1:
        return (
            f"**Even overlap.** With K = {g.KH}, stride {g.stride_h} and dilation {g.dil_h}, every output "
            f"cell away from the border receives {int(phases[0]) ** 2} stamps ({int(phases[0])} per axis): "
            f"no checkerboard. (Counts here: {found}; fewer at the border.) Try K = 3 with stride 2."
        )
    seq = ", ".join(str(int(v)) for v in phases)
    return (
        f"**Checkerboard.** K = {g.KH} taps with stride {g.stride_h} (dilation {g.dil_h}): the taps do "
        f"not spread evenly over the stride's {g.stride_h} phases, so along each axis output cells away "
        f"from the border receive {seq}, {seq}, … stamps in turn, and in 2-D the counts alternate "
        f"({found} here). A transposed convolution used for upsampling paints this pattern into its "
        f"output unless its weights make up for it."
    )


def output_padding_text(g: gpuops.WindowGeometry) -> str:
    """Why output_padding exists, with the current numbers."""
    op_h, op_w = maps.transposed_of(g).output_padding
    if op_h == 0 and op_w == 0:
        return (
            f"**output_padding = 0 here.** The last window reaches the last padded row and column, so "
            f"conv_transpose2d from {g.W_out} x {g.H_out} gives back exactly {g.W} x {g.H}."
        )
    parts = [(op_h, "row", "bottom"), (op_w, "column", "right")]
    left_out = " and ".join(f"{n} {what}{'s' * (n != 1)}" for n, what, _ in parts if n)
    added = " and ".join(f"{n} {what}{'s' * (n != 1)} at the {side}" for n, what, side in parts if n)
    return (
        f"**output_padding = {pair((op_h, op_w))} matters here.** The last window stops short of the padded "
        f"input by {left_out} (the floor in the output-size formula), so inputs of several sizes give the "
        f"same {g.W_out} x {g.H_out} output. From {g.W_out} x {g.H_out}, conv_transpose2d would give "
        f"{g.W - op_w} x {g.H - op_h}; output_padding adds {added} to give back {g.W} x {g.H} "
        f"(it must be smaller than the stride or the dilation)."
    )


def adjoint(g: gpuops.WindowGeometry, seed: int) -> tuple[float, float, str]:
    """<conv(x), y> and <x, conv_transpose(y)> for random x, y, w of the current geometry, and why."""
    rng = np.random.default_rng(1000 + seed)
    C, M = 2, 3
    x = rng.standard_normal((1, C, g.H, g.W)).astype(np.float32)
    y = rng.standard_normal((1, M, g.H_out, g.W_out)).astype(np.float32)
    w = rng.standard_normal((M, C, g.KH, g.KW)).astype(np.float32)
    arrays = (gpuops.asarray(x), gpuops.asarray(y), gpuops.asarray(w))
    lhs, rhs = gpuops.adjoint_identity(*arrays, stride=g.stride_h, padding=g.pad_top, dilation=g.dil_h)
    text = (
        f"Random x of shape (C, H, W) = ({C}, {g.H}, {g.W}), y ({M}, {g.H_out}, {g.W_out}) and w ({M}, "
        f"{C}, {g.KH}, {g.KW}), the current kernel, stride, padding and dilation. Both sides add the same "
        f"products x[c, ih, iw] · w[m, c, ki, kj] · y[m, oh, ow], one for every tap of every window, "
        f"grouped once by "
        f"output and once by input. So conv_transpose2d is the transpose (the adjoint) of the convolution's "
        f"matrix, and by the chain rule dE/dX = Wᵀ · dE/dY: **the transposed convolution of dY IS the "
        f"backward pass of the convolution with respect to its input.**"
    )
    return lhs, rhs, text


# ---- dE/dW -----------------------------------------------------------------------------------------------
def weight_pairs(ex: Example, cell: Cell) -> tuple[np.ndarray, maps.WeightTerms | None]:
    """The (output, input or tap) pairs a picked weight sums, or a picked input cell feeds."""
    if cell.space == "w":
        terms = maps.weight_terms(ex.dy, ex.x, ex.g, cell.row, cell.col)
        return terms.pairs, terms
    src = maps.gradient_sources(ex.g, cell.row, cell.col)
    return np.hstack([src.outputs, src.taps]).reshape(-1, 4), None


PAIR_CAPTIONS = {  # who sums the picked weight in grad_weight v3, v4 and v5
    "direct_pairs": (
        "warp {warp} of block {block} of `{kernel}` sums these products (its 32 lanes walk the rows, "
        "shuffles add their shares); the block's other warps sum the other taps over the same rows"
    ),
    "direct_pairs_shared": (
        "block {block} of `{kernel}` copies chunks of dY's rows and the x rows they read into shared "
        "memory; the team of threads from thread {thread} on sums these products there and thread "
        "{thread} stores the sum"
    ),
    "direct_columns": (
        "every thread of block {block} of `{kernel}` walks a column of output rows adding this tap's "
        "products in a register; the block then adds its threads' sums and thread {thread} stores this one"
    ),
}


def weight_caption(ex: Example, cell: Cell, terms: maps.WeightTerms, walg: str) -> str:
    """What one weight's gradient sums, and who sums it on the GPU."""
    g, launch = ex.g, ex.plan.weight_launch
    if walg == "direct":
        how = (
            f"On the GPU, block {launch.thread_of(0, 0, cell.row, cell.col).block[0]} of "
            f"`{launch.kernel}` sums these products for this one weight (its threads split them, a "
            f"shared-memory tree adds the shares)"
        )
    elif walg in PAIR_CAPTIONS:  # v3-v5: a block per (filter, channel) pair and slice of the rows
        ref = launch.thread_of(0, 0, 0, cell.row, cell.col)
        slices = launch.grid[1]
        how = "On the GPU, " + PAIR_CAPTIONS[walg].format(
            block=ref.block[0], kernel=launch.kernel, warp=ref.thread[1], thread=ref.thread[0]
        )
        how += f", and {slices} slices of the rows are added after the kernel" if slices > 1 else ""
    elif walg == "forward_conv":
        how = (
            "On the GPU this is literally that convolution: conv2d slides dY over x (the batch in the "
            "role of the channels), and this weight is one of its outputs, computed by whichever forward "
            "kernel is fastest for the shape"
        )
    else:
        how = (
            "With GEMM, unfold copies the input cells of every window into columns, and cuBLAS multiplies "
            "dY (one row) by them: this weight is one entry of that product"
        )
    return (
        f"The input cells tap ({cell.row}, {cell.col}) read form a grid {g.stride_h} apart: dY slides over x "
        f"like a convolution with stride {g.dil_h} (the dilation) and dilation {g.stride_h} (the stride). "
        f"Sum = {terms.total:.6g}; the kernel computed {ex.dw[cell.row, cell.col]:.6g}. {how}."
    )


# ---- reflect-pad backward ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class PadExample:
    """A seeded dY on a small padded grid, dX = reflect_pad_backward(dY) from the chosen kernel, and
    what the pick maps to: a picked input cell's terms, or the input cell a padded cell sends to."""

    grads: viz.PadGrads
    cells: np.ndarray
    terms: maps.ReflectTerms | None
    launch: Launch


def pad_example(shape: tuple[int, int], pads: Pads, cell: Cell, alg: str, seed: int) -> PadExample:
    """The reflect-pad backward example of a grid of `shape` padded by `pads` (left, right, top, bottom)."""
    h, w = shape
    rng = np.random.default_rng(2004 + seed)
    dy = rng.choice([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0], size=maps.padded_shape(h, w, pads)).astype(np.float32)
    dx = gpuops.to_numpy(gpuops.reflect_pad_backward(gpuops.asarray(dy), pads, algorithm=alg))
    grads = viz.PadGrads(dy, maps.reflect_backward_count(h, w, pads), dx, pads)
    launch = reflect_pad_backward_launch(1, h, w, pads, alg)
    if cell.space == "in":
        terms = maps.reflect_terms(dy, pads, cell.row, cell.col)
        return PadExample(grads, terms.cells, terms, launch)
    return PadExample(grads, np.array([maps.reflect_receiver(h, w, pads, cell.row, cell.col)]), None, launch)


def pad_caption(pe: PadExample, cell: Cell, alg: str) -> str:
    """The sum a picked input cell gathers, or where a picked padded cell's gradient goes, and who does it."""
    launch, dy, dx = pe.launch, pe.grads.dy, pe.grads.dx
    if cell.space == "in":
        if alg == "gather":
            who = (
                f"On the GPU, {_thread(launch.thread_of(0, cell.row, cell.col))} of `{launch.kernel}` reads "
                f"these {len(pe.cells)} cells and writes the sum: deterministic."
            )
        else:
            who = (
                f"On the GPU (`{launch.kernel}`, as PyTorch's kernel), the threads of these {len(pe.cells)} "
                "padded cells each atomicAdd their gradient into this cell, in any order."
            )
        return f"Sum = {pe.terms.total:.6g}; the kernel computed {dx[cell.row, cell.col]:.6g}. {who}"
    y, x = pe.cells[0]
    if alg == "scatter":
        thread = _thread(launch.thread_of(0, cell.row, cell.col))
        who = f"{thread} of `{launch.kernel}` atomically adds it there"
    else:
        who = f"the thread of input cell ({y}, {x}) reads it while gathering"
    return (
        f"Padded cell ({cell.row}, {cell.col}) copied input cell ({y}, {x}) in the forward pass, so its "
        f"gradient {dy[cell.row, cell.col]:.3g} is added to dX[{y}, {x}]: {who}."
    )


# ---- runtimes on the user's image --------------------------------------------------------------------------
def runtime_groups(
    image: SourceImage, g: gpuops.WindowGeometry, pads: Pads
) -> dict[str, dict[str, Callable[[], object]]]:
    """Every grad_input, grad_weight and reflect_pad_backward kernel on the image (M = 8 filters of
    the example's kernel), within the rerun budget; nothing runs until Compare is pressed."""
    C, Hi, Wi = image.planes.shape
    M = RUNTIME_FILTERS
    kw = dict(stride=g.stride_h, padding=g.pad_top, dilation=g.dil_h)
    ig = gpuops.window_geometry(Hi, Wi, g.KH, **kw)
    problem = check_conv2d((1, C, Hi, Wi), (M, C, g.KH, g.KW), None, **kw)
    budget.check(
        budget.conv2d_cost(problem, "im2col"),
        f"Timing the backward pass on this {Wi} x {Hi} image",
        "Use a smaller kernel K or a smaller working size in the sidebar.",
    )
    xp = gpuops.default_xp()
    x = gpuops.asarray(image.planes[None])
    dy = xp.full((1, M, ig.H_out, ig.W_out), 0.5, dtype=np.float32)
    w = xp.full((M, C, g.KH, g.KW), 0.25, dtype=np.float32)
    dyp = xp.full((C, *maps.padded_shape(Hi, Wi, pads)), 0.5, dtype=np.float32)
    return {
        "grad_input": {
            ALG_NAMES[a]: (lambda a=a: gpuops.conv2d_grad_input(dy, x.shape, w, **kw, algorithm=a))
            for a in gpuops.GRAD_INPUT_ALGORITHMS
        },
        "grad_weight": {
            ALG_NAMES[a]: (lambda a=a: gpuops.conv2d_grad_weight(dy, x, w.shape, **kw, algorithm=a))
            for a in gpuops.offered_weight_algorithms()  # v2 on Hopper: refused where it does not fit
        },
        "reflect_pad_backward": {
            ALG_NAMES[a]: (lambda a=a: gpuops.reflect_pad_backward(dyp, pads, algorithm=a))
            for a in gpuops.REFLECT_BACKWARD_ALGORITHMS
        },
    }


def runtimes_caption(image: SourceImage, g: gpuops.WindowGeometry) -> str:
    C, Hi, Wi = image.planes.shape
    return (
        f"N = 1, C = {C}, {Hi} x {Wi} px, M = {RUNTIME_FILTERS} filters of {g.KH} x {g.KW}, stride "
        f"{g.stride_h}, padding {g.pad_top}, dilation {g.dil_h}; reflect_pad_backward with the pads "
        f"above. Timed only when you ask."
    )


def by_operation(groups: dict[str, dict], timings: dict) -> dict[str, dict[str, float]]:
    """The median ms of each timed candidate, grouped by operation (as "op · name" was timed)."""
    return {
        op: {n: timings[f"{op} · {n}"].median_ms for n in fns if f"{op} · {n}" in timings}
        for op, fns in groups.items()
    }


# ---- hover rules ---------------------------------------------------------------------------------------
def hover_rules(
    g: gpuops.WindowGeometry | None, grid: tuple[int, int], pads: Pads, charts: tuple[str, ...]
) -> hover.Rules:
    """What hovering a cell of each figure on the page outlines, answered in the browser.
    charts: the names of dX|dY, the animation, the count map, dW and the reflect-pad figure."""
    dx_chart, anim_chart, count_chart, dw_chart, rp_chart = charts
    (h, w), parts = grid, []
    if g is not None:
        parts += [
            hover.backward(
                g, dy=(dx_chart, "x"), w=(dx_chart, "x2"), flipped=(dx_chart, "x3"), dx=(dx_chart, "x4")
            ),
            hover.gradient_reach(g, on=(count_chart, "x"), outputs=[(anim_chart, "x"), (dx_chart, "x")]),
            hover.weight_gradient(g, x=(dw_chart, "x"), dy=(dw_chart, "x2"), dw=(dw_chart, "x3")),
        ]
    if all(p < side for p, side in zip(pads, (w, w, h, h), strict=True)):  # else the widgets fit them first
        parts.append(
            hover.reflect_pad(h, w, pads, padded=(rp_chart, "x"), inputs=[(rp_chart, "x2"), (rp_chart, "x3")])
        )
    return hover.combine(*parts)


# ---- captions --------------------------------------------------------------------------------------------
INTRO = (
    "The backward pass sends each output gradient dY back along the taps that read the input: "
    "each input cell **gathers** the gradients of the outputs that read it, through the flipped "
    "kernel. **Click a cell** of dX or dY."
)
NOTHING_TO_FOLD = (
    "GEMM + fold with a 1x1 kernel, stride 1 and no padding: cuBLAS writes dX itself, nothing to fold."
)
COUNT_CAPTION = (
    "How many stamps land on each output cell: the number of gradients each dX cell gathers. "
    "Click a cell to pick it above."
)
DX_CAPTION = (
    "w flipped[a, b] = w[K-1-a, K-1-b] (rotated by 180°). Hover a cell of dX or dY: what it maps to lights "
    "up; click to pick it. Letters (where the cells have room) pair the two factors of each product."
)
DW_CAPTION = (
    "Hover or click a weight of dW (the cells it sums light up) or an input cell of x "
    "(the weights it feeds). Letters (where the cells have room) pair the two factors of each product."
)
RP_CAPTION = (
    "Cyan box: the input inside the padded grid. Border cells were copied into the padding "
    "(mirrored, edge not repeated), so their gradient is a sum: the count map. Hover or click a cell."
)
BENCHMARK_NOTE = (
    "PyTorch's backward kernels (`aten.convolution_backward`, `reflection_pad2d_backward`) are not timed "
    "here: the benchmark command (`python3 -m bench.suite`) times them next to ours in the same run on "
    "the GPU. See the measured results on the Benchmarks page."
)


def click_grids(
    g: gpuops.WindowGeometry | None,
    pad_shapes: dict[str, tuple[int, int]],
    params: tuple,
    charts: tuple[str, ...],
) -> dict[tuple[str, str], Grid]:
    """Where a click lands: (chart, panel) -> the grid there. params: the dX|dY pick, the dW pick
    and the reflect-pad pick; pad_shapes: the reflect-pad grid's input and padded shapes."""
    dx_chart, anim_chart, count_chart, dw_chart, rp_chart = charts
    pick_dx, pick_dw, pick_pad = params
    grids = {
        (rp_chart, "x"): Grid(pick_pad, "pad", pad_shapes["pad"]),
        (rp_chart, "x2"): Grid(pick_pad, "in", pad_shapes["in"]),
        (rp_chart, "x3"): Grid(pick_pad, "in", pad_shapes["in"]),
    }
    if g is None:
        return grids
    dx, dy, kernel = (g.H, g.W), (g.H_out, g.W_out), (g.KH, g.KW)
    return grids | {
        (dx_chart, "x"): Grid(pick_dx, "dy", dy),
        (dx_chart, "x4"): Grid(pick_dx, "dx", dx),
        (anim_chart, "x"): Grid(pick_dx, "dy", dy),
        (anim_chart, "x3"): Grid(pick_dx, "dx", dx),
        (count_chart, "x"): Grid(pick_dx, "dx", dx),
        (dw_chart, "x"): Grid(pick_dw, "x", dx),
        (dw_chart, "x3"): Grid(pick_dw, "w", kernel),
    }
