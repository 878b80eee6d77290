"""What the im2col + GEMM page computes, kept out of the page script: PMPP's worked example and its
editable numbers, X_unroll and Y, the pick (a column, an output, or an input cell with its
channel), the records the figures draw, hover rules, the expansion curves, the runtime split's
candidates and the sentences built from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops.launch import Launch
from gpuops.maps import im2col as maps
from ui import budget, hover, pick, state
from ui.sidebar import CAP_OPTIONS, SourceImage
from ui.state import Cell, Param
from viz import im2col as viz
from viz.style import output_kind

# PMPP ch. 16's worked example: 3 input maps of 3 x 3, 2 filters of 3 x 2 x 2, and the book's outputs.
BOOK_X = [
    [[1, 2, 0], [1, 1, 3], [0, 2, 2]],
    [[0, 2, 1], [0, 3, 2], [1, 1, 0]],
    [[1, 2, 1], [0, 1, 3], [3, 3, 2]],
]
BOOK_W = [
    [[[1, 1], [2, 2]], [[1, 1], [1, 1]], [[0, 1], [1, 0]]],
    [[[1, 0], [0, 1]], [[2, 1], [2, 1]], [[1, 2], [2, 0]]],
]
BOOK_Y = [[[14, 20], [15, 24]], [[12, 24], [17, 26]]]
BOOK_SHAPE = (3, 3, 3, 2, 2)  # C, H, W, K, M
CHARTS = ("inputs", "xunroll", "ymat", "wmat")  # pickable figures
CELLS, GENERATION = "im2col_cells", "im2col_gen"  # session_state: the numbers, the editors' generation


@dataclass(frozen=True)
class Example:
    """The small example, computed: x (C, H, W), W as a matrix (M x C*K*K), X_unroll, Y (M x L),
    the geometry, whether it is PMPP's, and the unfold Launch im2col makes."""

    x: np.ndarray
    w_mat: np.ndarray
    x_unroll: np.ndarray
    y_mat: np.ndarray
    g: gpuops.WindowGeometry
    is_book: bool
    launch: Launch | None

    @property
    def C(self) -> int:
        return self.x.shape[0]

    @property
    def M(self) -> int:
        return self.w_mat.shape[0]


def shrunk_kernel(asked: int, got: int, where: str) -> str:
    """Why the kernel is smaller than the setting asked for (a K that no longer fits is reduced,
    never silently)."""
    return f"Kernel K {asked} -> {got}: K = {got} is the largest window that fits {where}."


def reset(defaults: dict) -> None:
    """Back to PMPP's example: its settings, fresh editors and the book's numbers."""
    for key, value in defaults.items():
        st.session_state[key] = value
    st.session_state[GENERATION] = st.session_state.get(GENERATION, 0) + 1
    st.session_state.pop(CELLS, None)


def _starting_numbers(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """PMPP's numbers at its shape, small seeded integers otherwise (kept per session and shape)."""
    C, H, W, K, M = shape
    cells = st.session_state.get(CELLS)
    if cells is None or cells[0] != shape:
        rng = np.random.default_rng(sum(shape))
        book = shape == BOOK_SHAPE
        x0 = np.array(BOOK_X, np.float32) if book else rng.integers(0, 4, (C, H, W)).astype(np.float32)
        w0 = np.array(BOOK_W, np.float32) if book else rng.integers(0, 3, (M, C, K, K)).astype(np.float32)
        cells = (shape, x0, w0)
        st.session_state[CELLS] = cells
    return cells[1].copy(), cells[2].copy()


def edited_numbers(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """x (C, H, W) and w (M, C, K, K) as typed into the editors (an expander of the page)."""
    C, _, W, K, M = shape
    x, w = _starting_numbers(shape)
    gen = (shape, st.session_state.get(GENERATION, 0))
    with st.expander("Edit the numbers: input maps and filters (PMPP's example at its shape)"):
        st.caption("Type into any cell; every figure follows.")
        for c, column in enumerate(st.columns(C)):
            with column:
                st.markdown(f"channel c = {c}")
                df = st.data_editor(
                    pd.DataFrame(x[c]),
                    key=f"x_edit_{gen}_{c}",
                    column_config={str(j): st.column_config.NumberColumn(format="%g") for j in range(W)},
                )
                x[c] = np.nan_to_num(df.to_numpy(dtype=np.float64, na_value=0.0)).astype(np.float32)
        st.markdown(
            "Filter matrix W (M × C·K·K): row m is filter m, flattened channel by channel, row by row"
        )
        labels = [viz.row_label(t) for t in maps.row_labels(C, gpuops.window_geometry(K, K, K))]
        w_df = st.data_editor(
            pd.DataFrame(w.reshape(M, -1), columns=labels, index=[f"filter {m}" for m in range(M)]),
            key=f"w_edit_{gen}",
        )
        w = (
            np.nan_to_num(w_df.to_numpy(dtype=np.float64, na_value=0.0))
            .astype(np.float32)
            .reshape(M, C, K, K)
        )
    return x, w


def compute(x: np.ndarray, w: np.ndarray, g: gpuops.WindowGeometry) -> Example:
    """X_unroll and Y of the example, with the im2col algorithm (on the GPU when there is one)."""
    (C, H, W), (M, _, K, _) = x.shape, w.shape
    S, P, D = g.stride_h, g.pad_top, g.dil_h
    plan = gpuops.plan_conv2d((1, C, H, W), (M, C, K, K), None, S, P, D, algorithm="im2col")
    x_unroll = gpuops.to_numpy(gpuops.unfold(gpuops.asarray(x), K, D, P, S))  # (C*K*K, L)
    y = gpuops.conv2d(
        gpuops.asarray(x[None]), gpuops.asarray(w), stride=S, padding=P, dilation=D, algorithm="im2col"
    )
    y_mat = gpuops.to_numpy(y).reshape(M, g.L)
    is_book = (C, H, W, K, M) == BOOK_SHAPE
    return Example(x, w.reshape(M, -1), x_unroll, y_mat, g, is_book, plan.launch)


def book_note(ex: Example) -> tuple[bool, str] | None:
    """At PMPP's shape (stride 1, no padding or dilation): whether Y is the book's, and saying so."""
    g = ex.g
    if not ex.is_book or (g.stride_h, g.pad_top, g.dil_h) != (1, 0, 1):
        return None
    if np.array_equal(ex.y_mat.reshape(np.shape(BOOK_Y)), np.array(BOOK_Y)):
        return True, "This is PMPP's example: Y is the book's [[14, 20], [15, 24]] and [[12, 24], [17, 26]]."
    return (
        False,
        "PMPP's shape with your numbers: the book's outputs were [[14, 20], [15, "
        "24]] and [[12, 24], [17, 26]].",
    )


# ---- the pick: a column l, an output Y[m, l], or an input cell (i, j) of channel c -------------------
@dataclass(frozen=True)
class Picker:
    """The page's pick settings (pick: the Cell; channel: an input cell's channel) in a geometry
    of C channels and M filters."""

    pick: Param
    channel: Param
    g: gpuops.WindowGeometry
    C: int
    M: int

    def column(self, p: Cell) -> int:
        """The picked column, or for an input cell the first column that copies it."""
        if p.space != "in":
            return p.col
        reading = maps.columns_reading(self.C, self.g, state.get(self.channel), p.row, p.col)
        return int(reading[0]) if reading.size else 0

    def fitted(self) -> Cell:
        """The pick kept inside the current geometry (settings changed under it); stored."""
        p, g = state.get(self.pick), self.g
        if p.space == "in":
            state.clamp(self.channel, 0, self.C - 1)
            p = Cell("in", min(p.row, g.H - 1), min(p.col, g.W - 1))
        else:
            p = Cell(p.space, min(p.row, self.M - 1) if p.space == "out" else 0, min(p.col, g.L - 1))
        state.put(self.pick, p)
        return p

    def apply(self, click: pick.Click | None) -> None:
        """A click picks an input cell (and its channel), a column of X_unroll, a cell of Y, or
        (on W) that filter at the picked column; padding is said to be a zero."""
        g, C, M = self.g, self.C, self.M
        if click is None:
            return
        if click.chart == "inputs":
            if 0 <= click.row < g.H and 0 <= click.col < g.W:
                state.put(self.pick, Cell("in", click.row, click.col))
                state.put(self.channel, min(viz.channel_of_panel(click.panel), C - 1))
            else:
                st.toast(
                    f"({click.row}, {click.col}) is padding: a zero, not an input cell.",
                    icon=":material/info:",
                )
        elif click.chart == "xunroll" and 0 <= click.col < g.L:
            state.put(self.pick, Cell("col", 0, click.col))
        elif click.chart == "ymat" and 0 <= click.row < M and 0 <= click.col < g.L:
            state.put(self.pick, Cell("out", click.row, click.col))
        elif click.chart == "wmat" and 0 <= click.row < M:
            state.put(self.pick, Cell("out", click.row, self.column(state.get(self.pick))))

    def on_kind(self) -> None:
        """The keyboard's kind changed: the same column as a column or output, or its first real tap."""
        p, kind = state.get(self.pick), st.session_state["w_im2col_kind"]
        col = self.column(p)
        if kind == "in":
            channel, rows, cols, inside = maps.column_taps(self.C, self.g, col)
            at = int(np.argmax(inside)) if inside.any() else None
            state.put(self.channel, int(channel[at]) if at is not None else 0)
            state.put(
                self.pick, Cell("in", int(rows[at]), int(cols[at])) if at is not None else Cell("in", 0, 0)
            )
        else:
            state.put(self.pick, Cell(kind, 0, col))

    def on_number(self) -> None:
        """A number of the keyboard path changed: the pick follows."""
        p, ss = state.get(self.pick), st.session_state
        if p.space == "in":
            state.put(self.channel, int(ss["w_im2col_pc"]))
            state.put(self.pick, Cell("in", int(ss["w_im2col_pi"]), int(ss["w_im2col_pj"])))
        else:
            m = int(ss.get("w_im2col_pm", 0)) if p.space == "out" else 0
            state.put(self.pick, Cell(p.space, m, int(ss["w_im2col_pl"])))

    def number(self, container, label: str, key: str, value: int, hi: int) -> None:
        """One number input of the keyboard path, showing the pick's value."""
        st.session_state[key] = value
        container.number_input(
            label, min_value=0, max_value=max(0, hi), step=1, key=key, on_change=self.on_number
        )

    def inputs(self, p: Cell, cols: list) -> None:
        """The keyboard path's numbers: channel, row, column of an input cell, or filter and column."""
        g = self.g
        if p.space == "in":
            self.number(cols[1], "channel c", "w_im2col_pc", state.get(self.channel), self.C - 1)
            self.number(cols[2], "row i", "w_im2col_pi", p.row, g.H - 1)
            self.number(cols[3], "col j", "w_im2col_pj", p.col, g.W - 1)
            return
        if p.space == "out":
            self.number(cols[1], "filter m", "w_im2col_pm", p.row, self.M - 1)
        self.number(cols[2], "column l", "w_im2col_pl", p.col, g.L - 1)
        cols[3].markdown(f"= output pixel **{maps.position_of(g, p.col)}**")


# ---- what the figures draw --------------------------------------------------------------------------
def unroll_of(C: int, g: gpuops.WindowGeometry) -> viz.Unroll:
    """What X_unroll's entries, rows and columns hold, for its figures."""
    return viz.Unroll(
        maps.unfold_source_map(C, g),
        maps.source_cells(C, g),
        tuple(maps.row_labels(C, g)),
        maps.positions(g),
        C * g.H * g.W,
        g.KH * g.KW,
    )


def hover_rules(g: gpuops.WindowGeometry, C: int, M: int) -> hover.Rules:
    """Outlines in the browser (no rerun): hovering an input cell outlines its copies in X_unroll;
    a column of X_unroll or of Y the cells it reads and its output (and, from Y, its filter)."""
    inputs, xunroll, ymat, wmat = CHARTS
    return hover.unroll(
        g,
        C,
        M,
        inputs=inputs,
        panels=[viz.input_panel(c) for c in range(C)],
        xunroll=(xunroll, "x"),
        ymat=(ymat, "x"),
        wmat=(wmat, "x"),
    )


def first_row_marks(ex: Example, p: Cell, channel: int) -> tuple[viz.InputMarks, viz.OutputMarks]:
    """The pick on the input maps and on Y: an input cell and the columns it feeds, or a column's
    taps and the column (or output) picked."""
    g, C = ex.g, ex.C
    copies = maps.copy_counts(C, g)
    if p.space == "in":
        columns = tuple(int(v) for v in maps.columns_reading(C, g, channel, p.row, p.col))
        out_marks = viz.OutputMarks(columns=columns, kind=output_kind(ex.w_mat, ex.y_mat))
        return viz.InputMarks(copies, (), (channel, p.row, p.col)), out_marks
    taps = tuple(zip(*maps.column_taps(C, g, p.col), strict=True))
    column, cell = (p.col, None) if p.space == "col" else (None, (p.row, p.col))
    return viz.InputMarks(copies, taps), viz.OutputMarks(column, cell, kind=output_kind(ex.w_mat, ex.y_mat))


def gemm_marks(ex: Example, p: Cell, channel: int) -> tuple[list, int | None, int | None]:
    """On X_unroll and W: the copies of a picked input cell, or the picked column and filter."""
    if p.space == "in":
        return [tuple(e) for e in maps.copies_of(ex.C, ex.g, channel, p.row, p.col)], None, None
    return [], p.col, p.row if p.space == "out" else None


def steps_of(ex: Example) -> viz.Steps:
    """What the column-by-column animation steps through."""
    taps = tuple(maps.column_taps(ex.C, ex.g, col) for col in range(ex.g.L))
    kind = output_kind(ex.w_mat, ex.y_mat)
    return viz.Steps(ex.x, maps.padded_ids(ex.C, ex.g), ex.x_unroll, ex.y_mat, taps, kind)


# ---- the pick in words --------------------------------------------------------------------------------
def input_cell_text(ex: Example, p: Cell, channel: int) -> tuple[str, str]:
    """(what a picked input cell is copied into and feeds, the first copies)."""
    g, C = ex.g, ex.C
    copies = maps.copies_of(C, g, channel, p.row, p.col)
    feeds = len(maps.columns_reading(C, g, channel, p.row, p.col))
    text = (
        f"**Input cell (c, i, j) = ({channel}, {p.row}, {p.col}) is copied {len(copies)} times** into "
        f"X_unroll (outlined there), feeding {feeds} output pixels (red in Y). Over all cells, X_unroll is "
        f"{g.expansion_ratio:.2f} times the input (the expansion ratio)."
    )
    entries = [f"({r}, {col})" for r, col in copies[:8]]
    listed = (
        f"Copies (row r, column l): {', '.join(entries)}{' …' if len(copies) > 8 else ''}"
        if len(copies)
        else ""
    )
    return text, listed


def column_texts(ex: Example, p: Cell) -> list[str]:
    """A picked column: what it holds, then each picked filter's sum written out with values."""
    col, labels = p.col, maps.row_labels(ex.C, ex.g)
    oh, ow = maps.position_of(ex.g, col)
    texts = [
        f"**Column l = {col}** is output pixel ({oh}, {ow}): it holds the {ex.x_unroll.shape[0]} input "
        "values outlined, one per weight (c, ki, kj)."
    ]
    for m in [p.row] if p.space == "out" else range(ex.M):
        lines = viz.product_terms(ex.w_mat[m], ex.x_unroll[:, col], labels)
        total = float(ex.w_mat[m] @ ex.x_unroll[:, col])
        texts.append(f"Y[{m}, {col}] = W row {m} · column {col} = **{total:g}**  \n" + "  \n".join(lines))
    return texts


def threads_text(ex: Example, col: int) -> str:
    """The GPU threads of the unfold Launch that write the first entries of column `col`."""
    refs = [ex.launch.thread_of(0, r, col) for r in range(ex.x_unroll.shape[0])]
    shown = "; ".join(
        f"r = {r}: block {t.block[0]}, thread ({t.thread[0]}, {t.thread[1]})"
        for r, t in list(enumerate(refs))[:3]
    )
    more = " …" if len(refs) > 3 else ""
    return f"On the GPU, {ex.launch.describe()}. Column {col} of X_unroll: {shown}{more}"


def gemm_text(ex: Example) -> str:
    """The GEMM's shapes in words."""
    g, R, M = ex.g, ex.x_unroll.shape[0], ex.M
    return (
        f"X_unroll has **C·K·K = {ex.C}·{g.KH}·{g.KW} = {R} rows** (one per filter weight) and "
        f"**H_out·W_out = {g.H_out}·{g.W_out} = {g.L} columns** (one per output pixel): "
        f"W ({M} × {R}) × X_unroll ({R} × {g.L}) = Y ({M} × {g.L})."
    )


# ---- your image: the expansion ratio and the runtime split -------------------------------------------
def image_plan(image: SourceImage, k: int) -> gpuops.ConvPlan:
    """im2col of the image with 16 k x k filters, padding k // 2 (the output as large as the input)."""
    Ci, H, W = image.planes.shape
    return gpuops.plan_conv2d((1, Ci, H, W), (16, Ci, k, k), None, 1, k // 2, algorithm="im2col")


def ratio_latex(image: SourceImage, k: int, gi: gpuops.WindowGeometry) -> str:
    """The expansion ratio's formula with the image's numbers."""
    Ci, H, W = image.planes.shape
    return (
        rf"\text{{ratio}} = \frac{{C K^2 H_{{out}} W_{{out}}}}{{C H W}} = "
        rf"\frac{{{Ci}\cdot{k}^2\cdot{gi.H_out}\cdot{gi.W_out}}}{{{Ci}\cdot{H}\cdot{W}}} = "
        rf"{gi.expansion_ratio:.3f}"
    )


def expansion_curves(k: int) -> tuple[list[int], tuple[list[float], list[float]]]:
    """Image sides, and the expansion ratio at each without padding and with padding K // 2."""
    sizes = [s for s in (8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096) if s >= k]
    no_pad = [gpuops.window_geometry(s, s, k, 1, 0).expansion_ratio for s in sizes]
    same = [gpuops.window_geometry(s, s, k, 1, k // 2).expansion_ratio for s in sizes]
    return sizes, (no_pad, same)


def largest_side(Ci: int, k: int, side: int) -> int | None:
    """The largest working size (the sidebar's choices) whose runtime comparison fits the budget."""
    for s in sorted((o for o in CAP_OPTIONS if o < side and o >= k), reverse=True):
        plan = gpuops.plan_conv2d((1, Ci, s, s), (16, Ci, k, k), None, 1, k // 2, algorithm="im2col")
        try:
            budget.check(budget.conv2d_cost(plan.problem, "im2col"), "", "")
        except budget.OverBudgetError:
            continue
        return s
    return None


def check_split(image: SourceImage, k: int, plan: gpuops.ConvPlan) -> None:
    """Refuse the runtime split over the budget, advising the working size at which it fits."""
    Ci, H, W = image.planes.shape
    side = largest_side(Ci, k, max(H, W))
    advice = (
        f"Lower the working size in the sidebar to {side} px, or use a smaller K."
        if side
        else "Use a smaller K or a smaller working size."
    )
    mib = plan.x_unroll_bytes_per_sample / 2**20
    budget.check(
        budget.conv2d_cost(plan.problem, "im2col"),
        f"im2col on {W} × {H} with K = {k} (X_unroll {mib:,.0f} MiB)",
        advice,
    )


def split_candidates(image: SourceImage, k: int) -> dict[str, Callable[[], object]]:
    """im2col's two steps, im2col whole and the direct kernel, on the image with 16 filters."""
    x = gpuops.asarray(image.planes)
    w = gpuops.asarray(
        np.random.default_rng(0).standard_normal((16, image.planes.shape[0], k, k)).astype(np.float32)
    )
    w_mat = w.reshape(16, -1)
    unrolled = {}

    def unroll():
        unrolled["cols"] = gpuops.unfold(x, k, 1, k // 2, 1)
        return unrolled["cols"]

    return {
        "unroll kernel (unfold)": unroll,
        "GEMM (cuBLAS / NumPy matmul)": lambda: gpuops.gemm(
            w_mat, unrolled["cols"] if "cols" in unrolled else unroll()
        ),
        "im2col total": lambda: gpuops.conv2d(x, w, padding=k // 2, algorithm="im2col"),
        "direct conv": lambda: gpuops.conv2d(x, w, padding=k // 2, algorithm="direct"),
    }
