"""What the Direct convolution page computes, kept out of the page script: the settings fitted to the
image, the custom kernel's editor, the convolution within the rerun budget, and, for the pick, the
records the figures draw, its hover rules and the sentences built from the Launch that ran.

`Direct` binds the image and the computed convolution once per run, so the page asks it about the
pick (`direct.detail_of(cell)`) instead of passing the geometry around.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import pyarrow as pa
import streamlit as st

import gpuops
from gpuops import filters
from gpuops.cache import Memo
from gpuops.maps import conv2d as maps
from ui import budget, hover, kernel_editor, padding_view, pick, state
from ui.common import backend_name, session_cached
from ui.images import png_bytes, to_display
from ui.kernel_param import KernelParam
from ui.padding_view import padding_arg, pads_text
from ui.records import Conv
from ui.sidebar import CAP_OPTIONS, SourceImage
from ui.state import Cell, Param
from viz import conv2d as viz
from viz.images import signed_to_display
from viz.style import Style, output_kind

CHARTS_OUT = ("conv_output", "direct_threads")  # a click on these picks an output pixel
CHARTS_IN = ("conv_input", "direct_zoom", "direct_tile")  # and on these an input cell
LAST_PRESET, CONV = "_dc_last_preset", "_dc_conv"  # session_state
SPACES = ["output pixel", "input cell"]
Region = tuple[int, int, int, int]
UPLOAD_NOTICE = (
    "This link was made with an uploaded image, which links cannot carry: upload one in the sidebar "
    "(Image source: Upload). Meanwhile the sample image is shown."
)
SWEEP_CAPTION = (
    "Play, pause, or drag the slider; grey outputs are not computed yet. A GPU computes them all at once, "
    "one thread each (below). Where you pause is the pick."
)
HELP = {
    "k": "Sharpen, Laplacian, Sobel and emboss are defined as 3 x 3.",
    "mode": "zeros: the padding reads 0. reflect: it copies the mirrored input cell.",
    "mix": "Off: each colour channel is filtered on its own (groups = C). On: one filter spans all channels.",
    "algo": "auto: on the GPU, the fastest for this shape (timed once, like cuDNN's benchmark mode); on the "
    "CPU, direct.",
    "ch": "The channel the close-up, the table and the animation show.",
}
ALGORITHMS = gpuops.offered_algorithms()  # fp32 ones, then tensor-core ones (v13 on Hopper only)
PAD_HELP = f"Cells added on every side. same: {padding_view.HELP}"
SPEED_HELP = "How many outputs the sliding window computes per second while it plays."
NO_GPU = (
    "This machine has no GPU: the NumPy twin computed the output. The figure shows the launch "
    "the GPU makes for these settings"
)
RUNTIMES_CAPTION = (
    "Median of several runs (on the GPU after warm-up, CUDA events). On the CPU the NumPy twins differ "
    "only in how the work is arranged."
)


# ---- settings, the kernel, the convolution --------------------------------------------------------------
def fit_geometry(image: SourceImage, asked: tuple[int, int, int, str], limits: dict, fixed: bool) -> tuple:
    """Keep K, padding and dilation inside what the image allows. asked: (k, pad, dil, mode);
    limits: the widgets' maxima (max_k, max_pad, max_dil). Returns ((k, pad, dil), why): the values
    to use and what moved in words ("" when nothing did), in gpuops' own words where it refuses."""
    C, H, W = image.planes.shape
    k, pad, dil, mode = asked
    fitted = maps.fit_settings(H, W, k, pad, dil, mode, k_fixed=fixed, **limits)
    if fitted == (k, pad, dil):
        return fitted, ""
    try:
        gpuops.plan_conv2d((1, C, H, W), (1, C, k, k), None, 1, pad, dil, 1, mode)
        why = ""
    except ValueError as exc:
        why = f"{exc}: "
    moved = [
        (name, old, new)
        for name, old, new in zip(("size", "padding", "dilation"), (k, pad, dil), fitted, strict=True)
    ]
    changes = ", ".join(f"{name} {old} -> {new}" for name, old, new in moved if old != new)
    return fitted, f"{why}{changes} to fit this {W} x {H} image."


def custom_kernel(param: KernelParam, k: int) -> np.ndarray:
    """The custom kernel: typed as text (ui/kernel_editor.py), kept in the URL (param); it starts
    as the preset that was on screen."""
    last = st.session_state.get(LAST_PRESET, "custom")
    start = filters.preset_kernel(last, k) if last != "custom" else None
    return kernel_editor.edit(param, k, start=start)


def _suggested_size(image: SourceImage, weight_shape: tuple, args: tuple, algo: str) -> str:
    """Advice for a step over the budget: the largest working size at which it fits."""
    C, H, W = image.planes.shape
    for cap in sorted((c for c in CAP_OPTIONS if c < max(H, W)), reverse=True):
        h, w = max(1, H * cap // max(H, W)), max(1, W * cap // max(H, W))
        try:
            problem = gpuops.plan_conv2d((1, C, h, w), weight_shape, None, *args).problem
        except ValueError:
            continue
        try:
            budget.check(budget.conv2d_cost(problem, algo), "", "")
        except budget.OverBudgetError:
            continue
        return f"Lower the working size (sidebar) to {cap} px, or use a smaller kernel."
    return "Use a smaller kernel or a larger stride."


def _within_budget(
    image: SourceImage, problem: gpuops.ConvProblem, algo: str, weight_shape: tuple, args: tuple
) -> None:
    """Refuse a convolution over the rerun budget, advising the working size at which it fits."""
    cost = budget.conv2d_cost(problem, algo)
    try:
        budget.check(cost, f"The convolution ({algo})", "")
    except budget.OverBudgetError:
        budget.check(cost, f"The convolution ({algo})", _suggested_size(image, weight_shape, args, algo))


_convs = Memo("direct_convs", 16)  # the last convolutions computed in this process, by their key


def compute(image: SourceImage, kernel: np.ndarray, args: tuple, mix: bool, algo: str) -> Conv:
    """Check, choose the algorithm, budget, run (kept per image and settings for the session, and
    for the process: a class's followers ask for the convolution their instructor's run computed;
    its arrays are read-only). args: (stride, pad, dil, mode)."""
    C, H, W = image.planes.shape
    stride, pad, dil, mode = args
    weight, groups = filters.channel_weights(kernel, C, mix)
    args = (stride, pad, dil, groups, mode)
    key = (image.key, kernel.tobytes(), kernel.shape, *args, algo)
    cached = st.session_state.get(CONV)
    if cached is not None and cached.key == key:
        return cached
    shared = _convs.get((gpuops.backend_info().name, key))  # a class asks for what its instructor did
    if shared is not None:
        st.session_state[CONV] = shared
        return shared
    plan = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, *args, gpuops.AUTO)
    _within_budget(image, plan.problem, "direct", weight.shape, args)  # before auto times anything
    x, w = gpuops.asarray(image.planes[None]), gpuops.asarray(weight)
    ran = algo if algo != gpuops.AUTO else gpuops.resolve_algorithm(x, w, None, *args)
    launch = gpuops.plan_conv2d((1, C, H, W), weight.shape, None, *args, ran).launch
    _within_budget(image, plan.problem, ran, weight.shape, args)
    with budget.gpu_work():
        out = gpuops.to_numpy(gpuops.conv2d(x, w, None, *args, ran))[0]
    shown, how = signed_to_display(out, "abs" if filters.is_edge_filter(kernel) else "clip")
    kernel = kernel.copy()
    kernel.setflags(write=False)
    conv = Conv(kernel, weight, groups, plan.geometry, mode, ran, launch, out, to_display(shown), how, key)
    for array in (conv.weight, conv.out, conv.out_pixels):
        array.setflags(write=False)  # shared by every session of the process that asks for it
    _convs.put((gpuops.backend_info().name, key), conv)
    st.session_state[CONV] = conv
    return conv


def formula(image: SourceImage, args: tuple[int, int, int], kernel_shape: tuple, g) -> tuple[str, list[str]]:
    """The output size: one line with its values, and the full formulas (LaTeX). args: (stride, pad, dil)."""
    _, H, W = image.planes.shape
    (stride, pad, dil), (kh, kw) = args, kernel_shape
    h_out, w_out = (str(g.H_out), str(g.W_out)) if g else (r"\text{invalid}", r"\text{invalid}")
    sides = ((pad, pad), (pad, pad)) if g is None else ((g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right))
    (ph, pw), (lh, lw) = (pads_text(*p) for p in sides), (pads_text(*p, latex=True) for p in sides)
    general = "2P" if sides[0][0] == sides[0][1] else r"P_{top} + P_{bottom}"  # "same" may be asymmetric
    if g is None:
        label = "**Output size: invalid** (the formula with these values)"
    else:
        label = (
            f"**Output: {g.W_out} x {g.H_out}** · H_out = ⌊({H} + {ph} − {dil}·({kh}−1) − 1) / {stride}⌋ "
            f"+ 1 = {g.H_out} · W_out = ⌊({W} + {pw} − {dil}·({kw}−1) − 1) / {stride}⌋ + 1 = {g.W_out}"
        )
    lines = [
        rf"H_{{out}} = \left\lfloor \frac{{H + {general} - D(K-1) - 1}}{{S}} \right\rfloor + 1 = "
        rf"\left\lfloor \frac{{{H} + {lh} - {dil}\cdot({kh}-1) - 1}}{{{stride}}} \right\rfloor + 1 = "
        + h_out,
        rf"W_{{out}} = \left\lfloor \frac{{{W} + {lw} - "
        rf"{dil}\cdot({kw}-1) - 1}}{{{stride}}} \right\rfloor"
        rf" + 1 = " + w_out,
    ]
    return label, lines


def sweep_caption(steps: int, speed: int) -> str:
    """What the sliding window shows, where Play starts, and how fast it goes."""
    return (
        f"{steps} steps, one per output; Play starts at the pick and runs {speed} step"
        f"{'s' if speed != 1 else ''} per second. {SWEEP_CAPTION}"
    )


def _set_pick_from_inputs(param: Param) -> None:
    space = "out" if st.session_state["w_direct_pick_space"].startswith("output") else "in"
    state.put(
        param,
        Cell(space, int(st.session_state["w_direct_pick_row"]), int(st.session_state["w_direct_pick_col"])),
    )


def _filter_list(found: tuple[int, ...] | range) -> str:
    found = list(found)
    if len(found) == 1:
        return f"filter {found[0]}"
    return f"{len(found)} filters ({found[0]}..{found[-1]})"


def _reads_text(rf: maps.ReceptiveField) -> np.ndarray:
    """What each tap reads: an input cell, a mirrored copy, or a zero."""
    text = np.empty(rf.rows.shape, dtype=object)
    for i, j in np.ndindex(rf.rows.shape):
        r, c, sr, sc = rf.rows[i, j], rf.cols[i, j], rf.source_rows[i, j], rf.source_cols[i, j]
        if rf.inside[i, j]:
            text[i, j] = f"input ({r}, {c})"
        else:
            text[i, j] = (
                f"padding ({r}, {c}) = copy of ({sr}, {sc})" if sr >= 0 else f"padding ({r}, {c}) = 0"
            )
    return text


def downloads(out_pixels: np.ndarray, figures: dict[str, go.Figure]) -> None:
    """Download buttons: the filtered image as PNG, every figure of the page as HTML (opens offline);
    each file is built only when its button is clicked."""
    st.download_button(
        "The filtered image (PNG)",
        lambda: png_bytes(out_pixels),
        file_name="filtered.png",
        mime="image/png",
        on_click="ignore",
        key="dl_dc_png",
    )
    for name, fig in figures.items():
        st.download_button(
            f"Figure {name}.html (opens offline)",
            lambda fig=fig: fig.to_html(include_plotlyjs=True, full_html=True),
            file_name=f"{name}.html",
            mime="text/html",
            key=f"dl_{name}",
            on_click="ignore",
        )


# ---- the pick and what the figures draw -----------------------------------------------------------------
@dataclass(frozen=True)
class Direct:
    """A convolution of the page's image, computed, and the questions the page asks about a pick."""

    image: SourceImage
    conv: Conv

    @property
    def g(self) -> gpuops.WindowGeometry:
        return self.conv.g

    def channel_of(self, ch: int) -> int:
        """The filter whose output a channel shows: the one filter when channels mix."""
        return 0 if self.conv.groups == 1 else ch

    def fit(self, cell: Cell | None) -> Cell:
        """The stored pick inside the geometry; none yet: an output where the image has detail."""
        if cell is None:
            planes, key = self.image.planes, self.image.key
            plane = session_cached(("direct_detail", key), lambda: maps.detail_pixel(planes.mean(axis=0)))
            return Cell("out", *maps.output_near(self.g, *plane))
        return Cell(cell.space, *maps.clamp_cell(cell.space, cell.row, cell.col, self.g))

    def detail_of(self, cell: Cell) -> tuple[int, int]:
        """The output the details follow: the pick, or for an input cell the output centred nearest to it."""
        if cell.space == "out":
            return cell.row, cell.col
        return maps.output_for_input(self.g, cell.row, cell.col, self.conv.mode)

    def clicked(self, click: pick.Click, cell: Cell) -> Cell | None:
        """The cell a click picks (None: not a cell of ours). A padding cell of the zoomed figure picks
        the input cell it copies (reflect), or nothing (zeros). A step of the sliding window (paused
        or dragged there) picks the output its label names."""
        g = self.g
        if click.chart == "direct_window" and click.panel == "step":
            shown = viz.window_step_output(click.label)
            return Cell("out", *maps.clamp_cell("out", *shown, g)) if shown else None
        if click.chart in CHARTS_OUT:
            return Cell("out", *maps.clamp_cell("out", click.row, click.col, g))
        if click.chart in CHARTS_IN:
            one = (click.row, click.row + 1, click.col, click.col + 1)
            win = maps.padded_window(self.image.planes[0], g, self.conv.mode, *one)
            if win.source_rows[0, 0] < 0:
                return None
            return Cell("in", int(win.source_rows[0, 0]), int(win.source_cols[0, 0]))
        return None

    def zoom(self, detail: tuple[int, int]) -> Region:
        """The close-up's region around the detail output's receptive field."""
        rf = maps.receptive_field(self.g, *detail, self.conv.mode)
        return maps.around(rf.rows, rf.cols, self.g, 1 if self.g.KH * self.g.dil_h > 9 else 2)

    def hover(self, cell: Cell) -> hover.Rules:
        """Hovering a weight outlines the cell it multiplies for the detail output; hovering a
        close-up cell its weight (and a mirrored padding cell the cell it copies)."""
        return hover.kernel_and_window(
            self.g,
            self.conv.mode,
            self.detail_of(cell),
            kernel=("direct_kernel", "x"),
            around=("direct_zoom", "x"),
            image=("conv_input", "x"),
        )

    def window_rules(self) -> hover.Rules:
        """Hovering an output (the output image, the thread figure) outlines its window on the
        input image and the shared-memory tile; an input cell its readers on the output figures."""
        outputs, inputs = [(c, "x") for c in CHARTS_OUT], [(c, "x") for c in CHARTS_IN if c != "direct_zoom"]
        return hover.windows(self.g, self.conv.mode, outputs=outputs, inputs=inputs)

    def pick_inputs(self, params: tuple[Param, Param], cell: Cell) -> None:
        """The keyboard path: the pick as number inputs in sync with clicks, and the channel shown."""
        pick_param, channel = params
        C, H, W = self.image.planes.shape
        rows, cols = (self.g.H_out, self.g.W_out) if cell.space == "out" else (H, W)
        st.session_state["w_direct_pick_space"] = SPACES[0] if cell.space == "out" else SPACES[1]
        st.session_state["w_direct_pick_row"] = cell.row
        st.session_state["w_direct_pick_col"] = cell.col
        a, b, c, d = st.columns([1.2, 1, 1, 1.3], vertical_alignment="bottom")
        typed = dict(on_change=_set_pick_from_inputs, args=(pick_param,))
        a.selectbox(
            "Pick", SPACES, key="w_direct_pick_space", help="Or click a pixel of either image.", **typed
        )
        b.number_input("Row", 0, rows - 1, key="w_direct_pick_row", **typed)
        c.number_input("Column", 0, cols - 1, key="w_direct_pick_col", **typed)
        if C > 1 and self.conv.groups > 1:
            state.widget(channel, container=d, hi=C - 1)
        else:
            state.put(channel, 0)

    def images(self, cell: Cell, zoom: Region, look: Style) -> list[tuple[go.Figure, str]]:
        """The input and the output image with the pick, and their captions."""
        g, conv, detail = self.g, self.conv, self.detail_of(cell)
        C, H, W = self.image.planes.shape
        in_pixels = session_cached(
            ("direct_in_display", self.image.key), lambda: to_display(self.image.planes)
        )
        pads = (g.pad_top, g.pad_bottom, g.pad_left, g.pad_right)
        if cell.space == "out":
            rf = maps.receptive_field(g, *detail, conv.mode)
            in_marks, out_marks = viz.ImageMarks(pads, taps=rf, zoom=zoom), viz.ImageMarks(picked=detail)
            in_what = f"orange: the {g.KH} x {g.KW} taps output ({cell.row}, {cell.col}) reads"
            out_what = f"orange: output ({cell.row}, {cell.col})"
        else:
            readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
            in_marks = viz.ImageMarks(pads, picked=(cell.row, cell.col), zoom=zoom)
            out_marks = viz.ImageMarks(readers=readers[:, :2], detail=detail)
            in_what = f"orange: the picked input cell ({cell.row}, {cell.col})"
            out_what = (
                f"red: the {len(np.unique(readers[:, :2], axis=0))} outputs that read input ({cell.row}, "
                f"{cell.col}); dotted: output {detail}, explained below"
            )
        pad_note = "mirrored cells" if conv.mode == "reflect" else "zeros"
        out_title = self.output_title()  # two lines: the input's title takes two too, images aligned
        joint = "<br>" if "<br>" in out_title else ", "
        title = f"Input: {W} x {H}{joint}{C} channel{'s' if C > 1 else ''}"
        return [
            (
                viz.input_figure(in_pixels, look, title, in_marks),
                f"Click a pixel. {in_what}; blue band: padding ({pad_note}); dotted cyan: the close-up.",
            ),
            (
                viz.output_figure(conv.out_pixels, look, out_title, out_marks),
                f"Click a pixel. {out_what}. Shown as {conv.shown_as}.",
            ),
        ]

    def output_title(self) -> str:
        """The output image's title; with colour channels filtered one by one, it says so on the
        figure (a Sobel edge of a red square on white comes out cyan: its green and blue change)."""
        g, (C, _, _) = self.g, self.image.planes.shape
        per_channel = "<br>each colour channel filtered on its own" if C > 1 and self.conv.groups > 1 else ""
        return f"Output: {g.W_out} x {g.H_out}{per_channel}"

    def summary(self, cell: Cell, ch: int) -> str:
        """The pick in words: an output's value and its products, or which outputs read an input cell."""
        g, conv = self.g, self.conv
        if cell.space == "out":
            m = self.channel_of(ch)
            return (
                f"**Picked: output pixel ({cell.row}, {cell.col})** of channel {m}: value "
                f"{float(conv.out[m, cell.row, cell.col]):.4f}, the sum of "
                f"{conv.weight.shape[1] * g.KH * g.KW} products (below)."
            )
        readers = maps.readers_of(g, cell.row, cell.col, conv.mode)
        outputs = len(np.unique(readers[:, :2], axis=0))
        reads = f"read by **{outputs} output pixel{'s' if outputs != 1 else ''}** ({len(readers)} taps)"
        if outputs == 0:
            reads = "read by **no output**: the stride steps over it"
        return (
            f"**Picked: input cell ({cell.row}, {cell.col})**, {reads}, outlined red on the output: what the "
            f"backward pass will sum for its gradient. Below: output {self.detail_of(cell)}, which reads it."
        )

    def closeup_caption(self, cell: Cell) -> str:
        """What the close-up outlines, and what its padding holds: arrows to the cells mirrored
        taps copy only where the figure draws them (up to viz.MAX_ARROWS taps)."""
        rf = maps.receptive_field(self.g, *self.detail_of(cell), self.conv.mode)
        n_mirrored = int(np.sum(~rf.inside & (rf.source_rows >= 0)))
        if 0 < n_mirrored <= viz.MAX_ARROWS:
            how = "arrows from each mirrored tap; or hover a padding cell: the cell it copies is outlined"
        else:
            how = "hover a padding cell: the cell it copies is outlined"
        mirrored = f"copies of mirrored cells ({how})"
        pad_note = mirrored if self.conv.mode == "reflect" else "zeros"
        picked = "; red: the picked input cell" if cell.space == "in" else ""
        return (
            f"The dotted cyan box on the input image. Orange: the taps (dashed in the padding){picked}; "
            f"blue: padding, {pad_note}. Click a cell to pick it."
        )

    def closeup(self, cell: Cell, zoom: Region, ch: int) -> tuple[viz.Closeup, np.ndarray]:
        """The close-up record of the detail output's receptive field, and what each tap reads."""
        rf = maps.receptive_field(self.g, *self.detail_of(cell), self.conv.mode)
        win = maps.padded_window(self.image.planes[ch], self.g, self.conv.mode, *zoom)
        picked = (cell.row, cell.col) if cell.space == "in" else None
        return viz.Closeup(win, rf, self.conv.kernel, picked), _reads_text(rf)

    def products(self, detail: tuple[int, int], ch: int) -> tuple[str, pa.Table, float, list[str]]:
        """The sum written out (LaTeX), its products as a table, their total, and what was read."""
        g, conv, planes = self.g, self.conv, self.image.planes
        (oh, ow), mixed = detail, conv.groups == 1
        rf = maps.receptive_field(g, oh, ow, conv.mode)
        terms = maps.tap_products(
            planes if mixed else planes[ch : ch + 1], conv.weight[0 if mixed else ch], rf
        )
        reads = _reads_text(rf).ravel()
        table = pa.table(
            {  # Arrow, what st.dataframe sends: a pandas frame cost 1.3 ms more per rerun
                "channel": terms.channel if mixed else np.full(terms.channel.shape, ch),
                "tap (ki, kj)": [f"({i}, {j})" for i, j in zip(terms.ki, terms.kj, strict=True)],
                "reads": np.tile(reads, len(terms.channel) // max(1, len(reads))),
                "value": terms.value,
                "weight": terms.weight,
                "product": terms.product,
            }
        )
        s, p, d = g.stride_h, g.pad_top, g.dil_h
        latex = (
            rf"y[{oh},{ow}] = \sum_{{c,k_i,k_j}} x\big[c,\ {oh}\cdot{s} - {p} + "
            rf"{d}\,k_i,\ {ow}\cdot{g.stride_w} "
            rf"- {g.pad_left} + {g.dil_w}\,k_j\big]\; w[c,k_i,k_j] = {terms.total:.4f}"
        )
        _, H, W = planes.shape
        got = float(conv.out[0 if mixed else ch, oh, ow])
        notes = [
            f"**The {len(table)} products that sum to output ({oh}, {ow})** (channel "
            f"{'all, mixed' if mixed else ch})",
            f"The kernel wrote {got:.5f} at this pixel.",
            f"Input rows read: {sorted(set(rf.rows[:, 0].tolist()))}; columns: "
            f"{sorted(set(rf.cols[0].tolist()))} "
            f"(outside 0..{H - 1} / 0..{W - 1}: padding).",
        ]
        return latex, table, terms.total, notes

    def sweep(self, detail: tuple[int, int], ch: int, look: Style, speed: int = 3) -> tuple[go.Figure, int]:
        """The sliding window over a crop around the detail output (within the budget), playing
        `speed` steps per second from it, and its number of steps."""
        g, conv, m = self.g, self.conv, self.channel_of(ch)
        crop = maps.animation_crop(g, *detail)
        oh, ow = crop.outputs
        budget.check(
            budget.bytes_cost(60 * len(oh) * (6 * g.KH * g.KW + 30)),
            "The animation",
            "Use a smaller kernel or a dilation of 1.",
        )
        region = (crop.in_r0, crop.in_r1, crop.in_c0, crop.in_c1)
        sweep = viz.Sweep(
            maps.padded_window(self.image.planes[ch], g, conv.mode, *region),
            np.arange(crop.out_r0, crop.out_r1),
            np.arange(crop.out_c0, crop.out_c1),
            conv.out[m, crop.out_r0 : crop.out_r1, crop.out_c0 : crop.out_c1],
            *maps.receptive_fields(g, oh, ow),
            conv.out[m][oh, ow],
            crop.index_of(*detail),
            conv.weight.shape[1] * g.KH * g.KW,
            output_kind(conv.kernel, conv.out[m]),
        )
        title = (
            f"Output rows {crop.out_r0}..{crop.out_r1 - 1}, columns {crop.out_c0}..{crop.out_c1 - 1}, "
            f"channel {ch}"
        )
        return viz.sliding_window_figure(sweep, look, title, ms=1000 // max(1, speed)), len(oh)

    def threads(self, detail: tuple[int, int], ch: int) -> tuple[maps.ThreadWork, str, str]:
        """Which block and thread computed the detail output: their work, a title and in words."""
        conv, launch = self.conv, self.conv.launch
        work = maps.computed_by(
            launch, self.g, *detail, self.channel_of(ch), channel=ch, C=self.image.planes.shape[0]
        )
        title = f"{launch.kernel}<br>blockIdx {work.block}, threadIdx {work.thread}"  # two lines: fits
        per_thread = len(work.thread_pixels)
        if conv.ran == "im2col":
            return (
                work,
                title,
                (
                    f"im2col first unfolds the input into X_unroll, then one cuBLAS GEMM computes y "
                    f"(no thread of ours writes y). The unfold thread that copies {work.note} is "
                    f"outlined orange: it copies {per_thread} of them in this row; its block (cyan) "
                    f"copies {len(work.block_pixels)}."
                ),
            )
        what = (
            f"This thread computes {per_thread} output pixel{'s' if per_thread != 1 else ''} (orange) for "
            f"{_filter_list(work.thread_filters)}; its block computes the {len(work.block_pixels)} pixels "
            f"outlined cyan for {_filter_list(work.block_filters)}."
        )
        if conv.groups > 1 and len(work.block_filters) == 1:
            what += (
                f" Here each channel is filtered on its own (groups = {conv.groups}, one filter per group), "
                f"so the kernel's filter slots for a group hold that one filter."
            )
        return work, title, what

    def shared_tile(self, detail: tuple[int, int], ch: int, work: maps.ThreadWork, look: Style) -> tuple:
        """The tiled kernels' shared-memory tile (tile + halo) and what this thread reads of it:
        (figure, caption)."""
        g, conv, launch = self.g, self.conv, self.conv.launch
        r0, r1, c0, c1 = maps.shared_tile(launch, g, *detail)
        region = maps.around(np.array([r0, r1 - 1]), np.array([c0, c1 - 1]), g, 2)
        win = maps.padded_window(self.image.planes[ch], g, conv.mode, *region)
        taps = [maps.receptive_field(g, int(r), int(c), conv.mode) for r, c in work.thread_pixels]
        cells = np.concatenate([np.stack([t.rows.ravel(), t.cols.ravel()], axis=1) for t in taps])
        title = f"Shared-memory tile: {c1 - c0} x {r1 - r0} input cells (tile + halo)"
        stage = dict(launch.args).get("cb_max", 1)  # v3 stages several channels per barrier; v2 and v6 one
        caption = (
            f"Cyan: the input tile the block copies to shared memory ({stage} channel(s) at a time, "
            f"{launch.shared_bytes:,} bytes) before any thread multiplies; orange: the cells this thread's "
            f"{len(work.thread_pixels)} pixel(s) read from it. Click a cell to pick it."
        )
        return viz.shared_tile_figure(win, (r0, r1, c0, c1), cells, look, title), caption

    def candidates(self, algorithms: tuple[str, ...]) -> dict[str, Callable[[], object]]:
        """Every algorithm on this image and these settings, each within the budget when it runs."""
        conv, g = self.conv, self.g
        C, H, W = self.image.planes.shape
        x, w = gpuops.asarray(self.image.planes[None]), gpuops.asarray(conv.weight)
        args = (g.stride_h, padding_arg(g), g.dil_h, conv.groups, conv.mode)  # "same" may be asymmetric
        problem = gpuops.plan_conv2d((1, C, H, W), conv.weight.shape, None, *args).problem

        def run(a: str) -> Callable[[], object]:
            def timed() -> object:
                budget.check(
                    budget.conv2d_cost(problem, a), a, "Lower the working size or use a smaller kernel."
                )
                return gpuops.conv2d(x, w, None, *args, a)

            return timed

        return {a: run(a) for a in algorithms}

    def runtime_title(self) -> str:
        C, H, W = self.image.planes.shape
        return f"conv2d on {W} x {H} x {C}, {self.g.KH} x {self.g.KW} kernel, {backend_name()}"
