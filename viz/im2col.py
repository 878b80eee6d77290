"""Figures of the im2col + GEMM page: the input maps, X_unroll, the filter matrix W, Y = W x X_unroll,
the column-by-column animation, the expansion ratio and the runtime split.

Pure functions: arrays (from gpuops.maps.im2col) and a Style in, go.Figure out; no Streamlit, no
kernels. Every input cell has one colour (viz.cells.identity_grid) wherever it is copied, with its
value written on top; values (W, Y) use the style's value scale (sequential from 0 when no value
is negative). Matrix axes carry their true indices: row r of X_unroll is (c, ki, kj), column l is
output pixel (oh, ow).
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from viz.animation import Controls, controls
from viz.cells import GridLook, identity_grid, value_grid
from viz.memo import figure_memo
from viz.style import (
    HALO,
    HIGHLIGHT,
    NORMAL,
    PEN,
    READER,
    SECOND,
    SIGNED,
    Pen,
    Style,
    finish,
    label_size,
    outline,
)

FULL_WIDTH = 820  # px of plot area a full-width figure gets at 1366 x 768 with the sidebar open
LEFT_WIDTH = 470  # the input maps' column (left of Y) at that size
RIGHT_WIDTH = 330  # Y's column
MAX_CELL = 64  # px: wider cells waste the screen; the plot area shrinks instead
MAX_FRAMES = 400
MODEBAR = 44  # px right margin: the vertical mode bar sits there, never over a plot or a title


@dataclass(frozen=True)
class Unroll:
    """What X_unroll holds, entry by entry (gpuops.maps.im2col): src_ids (R, L) the id of the input
    cell each entry copies (-1: a padding zero) and sources, its (channel, row, col); labels, the
    (c, ki, kj) of each row; positions, the output pixel (oh, ow) of each column; n_cells input
    cells in all (one colour each); taps_per_channel = K*K rows per channel."""

    src_ids: np.ndarray
    sources: tuple[np.ndarray, np.ndarray, np.ndarray]
    labels: tuple[tuple[int, int, int], ...]
    positions: np.ndarray
    n_cells: int
    taps_per_channel: int


@dataclass(frozen=True)
class Steps:
    """The example the column animation steps through: the input x (C, H, W), its padded ids
    (ids, row0, col0), X_unroll, Y, and taps[l] = (channel, row, col, inside) of column l."""

    x: np.ndarray
    padded: tuple[np.ndarray, int, int]
    x_unroll: np.ndarray
    y_mat: np.ndarray
    taps: tuple[tuple[np.ndarray, ...], ...]
    y_kind: str = SIGNED  # Y's colours: viz.style.output_kind of W and Y


@dataclass(frozen=True)
class InputMarks:
    """On the input maps: copies (C, H, W) how often each cell is copied into X_unroll (hover);
    taps (c, row, col, inside) outlined (padding taps dotted); the picked cell (c, i, j)."""

    copies: np.ndarray | None = None
    taps: tuple[tuple[int, int, int, bool], ...] = ()
    picked: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class OutputMarks:
    """On Y: a picked column l (outlined), a picked cell (m, l), and the columns a picked input
    cell feeds (red, consecutive ones as one box)."""

    column: int | None = None
    cell: tuple[int, int] | None = None
    columns: tuple[int, ...] = ()
    kind: str = SIGNED  # Y's colours: viz.style.output_kind of W and Y (signed when a weight is < 0)


NO_INPUT_MARKS, NO_OUTPUT_MARKS = InputMarks(), OutputMarks()


# ---- small helpers --------------------------------------------------------------------------------------
def input_panel(c: int) -> str:
    """The subplot ("x", "x2", ...) that shows input channel c in `input_maps_figure`."""
    return "x" if c == 0 else f"x{c + 1}"


def channel_of_panel(panel: str) -> int:
    """The input channel a subplot of `input_maps_figure` shows (inverse of `input_panel`)."""
    return 0 if panel in ("x", "") else int(panel[1:]) - 1


def _yref(panel: str) -> str:
    return "y" + panel[1:]


def row_label(rc: tuple[int, int, int]) -> str:
    return f"({rc[0]},{rc[1]},{rc[2]})"


def _text(values: np.ndarray, fmt: str = "g") -> np.ndarray:
    return np.vectorize(lambda v: format(float(v), fmt))(np.asarray(values, dtype=np.float64))


def label_props(
    labels: np.ndarray, width_px: float, cell_h_px: float, style: Style, dark: bool = True
) -> dict:
    """Trace properties that write the labels in the cells when they fit (>= the style's label
    size, in width and in height; the labels' columns share width_px) and hide them otherwise;
    the text stays for the hover."""
    cells_across = labels.shape[-1]
    chars = max((len(s) for s in labels.ravel()), default=1)
    size = label_size(cells_across, width_px, style, chars=chars)
    if size is not None and cell_h_px < size + 3:
        size = int(cell_h_px - 3) if cell_h_px - 3 >= style.label else None
    if size is None:
        return dict(text=labels, texttemplate="")
    font = dict(size=size, color="#111111") if dark else dict(size=size)  # light identity colours: dark text
    return dict(text=labels, texttemplate="%{text}", textfont=font)


def text_px(text: str, size: float) -> float:
    """Rough width in px of a label in the app's sans-serif font: digits ~0.56 em, punctuation ~0.3 em."""
    return sum(0.3 if ch in "(),. " else 0.56 for ch in text) * size


def _thin(labels: Sequence[str], px_per_cell: float, px_per_label: float) -> tuple[list[int], list[str], int]:
    """Tick positions and texts, every `step`-th label so that they never overlap."""
    step = max(1, math.ceil(px_per_label / max(px_per_cell, 1e-6)))
    idx = list(range(0, len(labels), step))
    return idx, [labels[i] for i in idx], step


def _every(step: int, what: str) -> str:
    """The axis title's note when tick labels are thinned (on a line of its own)."""
    return (
        ""
        if step == 1
        else f"<br>every {step}{'nd' if step == 2 else 'rd' if step == 3 else 'th'} {what} labelled"
    )


def runs(values: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive integers grouped as (first, count): [3, 4, 5, 9] -> [(3, 3), (9, 1)]."""
    out: list[tuple[int, int]] = []
    for v in sorted(int(v) for v in values):
        if out and v == out[-1][0] + out[-1][1]:
            out[-1] = (out[-1][0], out[-1][1] + 1)
        else:
            out.append((v, 1))
    return out


def inputs_beside(C: int, padded_width: int) -> bool:
    """Whether the input maps read well in the first row's left column (else: full width)."""
    return C * padded_width <= 15


def _box(r: float, c: float, h: float, w: float) -> tuple[list[float | None], list[float | None]]:
    """A closed rectangle path around h x w cells from (r, c), for scatter-drawn outlines."""
    x0, x1, y0, y1 = c - 0.5, c - 0.5 + w, r - 0.5, r - 0.5 + h
    return [x0, x1, x1, x0, x0, None], [y0, y0, y1, y1, y0, None]


def _boxes(cells: Sequence[tuple[float, float]], h: float = 1, w: float = 1) -> tuple[list, list]:
    xs: list = []
    ys: list = []
    for r, c in cells:
        x, y = _box(r, c, h, w)
        xs += x
        ys += y
    return xs or [None], ys or [None]


def _dict(trace: go.BaseTraceType, **changes) -> dict:
    """A trace as a plain dict with changes: figures are assembled from dicts and validated once
    (incremental updates of a go.Figure cost ~10x more)."""
    d = trace.to_plotly_json()
    d.update(changes)
    return d


def _axis_ids(n: int) -> tuple[str, str, str, str]:
    """(layout x key, layout y key, x ref, y ref) of the n-th axis pair (n = 1, 2, ...)."""
    k = "" if n == 1 else str(n)
    return f"xaxis{k}", f"yaxis{k}", f"x{k}", f"y{k}"


def _subtitle(text: str, x: float, y: float, style: Style) -> dict:
    return dict(
        text=text,
        x=x,
        y=y,
        xref="paper",
        yref="paper",
        xanchor="center",
        yanchor="bottom",
        showarrow=False,
        font=dict(size=style.font),
    )


def _merge(base: dict, over: dict) -> dict:
    """base updated by over, nested dicts merged (over wins)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@functools.lru_cache(maxsize=256)
def _look(title: str, x_title: str, y_title: str, style: Style) -> dict:
    """viz.style.finish's figure-level settings, as a dict (finish on an empty figure)."""
    return finish(go.Figure(), title, (x_title, y_title), 10, style).layout.to_plotly_json()


def _assemble(figure: dict, titles: tuple[str, str, str], style: Style, after: dict) -> go.Figure:
    """One figure from dicts (figure: its data, layout and frames) with the shared look of
    viz.style.finish (its title, fonts, margins and mode bar; on every axis its tick and title fonts
    and the axis title: titles = figure, x and y titles), then this figure's sizes, margins and
    per-axis settings (after). Built once and not re-validated property by property: the traces
    come from viz.cells, and the tests validate every figure of the page in full."""
    data, layout, frames = figure["data"], figure["layout"], figure.get("frames")
    title, x_title, y_title = titles
    look = copy.deepcopy(_look(title, x_title, y_title, style))
    for key in [k for k in layout if k.startswith(("xaxis", "yaxis"))] or ["xaxis", "yaxis"]:
        text = x_title if key.startswith("x") else y_title
        layout[key] = _merge(
            dict(title=dict(text=text, font=dict(size=style.font)), tickfont=dict(size=style.tick)),
            layout.get(key, {}),
        )
    for note in layout.get("annotations", []):
        note.setdefault("font", {})["size"] = style.font
    return go.Figure(data=data, layout=_merge(_merge(look, layout), after), frames=frames, _validate=False)


def _shapes(
    cells: Sequence[tuple[int, int]], style: Style, pen: Pen = PEN, size: tuple[int, int] = (1, 1)
) -> list[dict]:
    out: list[dict] = []
    for r, c in cells:
        out += outline((r, c), style, pen, size=size)
    return out


def _top(style: Style, subtitles: bool = False) -> int:
    """Top margin: the figure title (at the top of the figure), and subplot titles under it."""
    return int(style.title * 1.3 + 16 + (style.font * 1.3 + 12 if subtitles else 0))


def _bottom(style: Style, tick_lines: int = 1, tick_px: float = 0, title_lines: int = 1) -> int:
    """Bottom margin: x tick labels (lines of text, or tick_px for rotated ones) and the axis title."""
    return int(12 + (tick_px or tick_lines * style.tick * 1.3) + 8 + title_lines * style.font * 1.3 + 8)


def _plot_width(cells: int, width_px: int) -> tuple[float, float]:
    """(domain fraction, px per cell): cells no wider than MAX_CELL, the plot area shrinks instead."""
    px = min(MAX_CELL, width_px / max(1, cells))
    return min(1.0, px * cells / width_px), px


def _cell_text(ids: np.ndarray, channel: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.where(
        ids >= 0,
        np.char.add(
            np.char.add(
                np.char.add(
                    np.char.add(np.char.add("input (c=", channel.astype(str)), ", i="), rows.astype(str)
                ),
                ", j=",
            ),
            cols.astype(str),
        ),
        "padding: a zero",
    )


def values_of(ids: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The value every cell id stands for (x flattened in id order; -1 = padding = 0)."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    return np.where(ids >= 0, flat[np.maximum(ids, 0)], 0.0)


def column_ticks(positions: np.ndarray, px_per_col: float, style: Style) -> tuple[dict, int]:
    """x-axis ticks of a matrix whose column l is output pixel (oh, ow): 'l' over '(oh,ow)' where
    there is room, else l alone, thinned so that labels never overlap."""
    two = [f"{l}<br>({oh},{ow})" for l, (oh, ow) in enumerate(positions)]
    widest = max((text_px(f"({oh},{ow})", style.tick) for oh, ow in positions), default=30)
    if px_per_col >= widest + 8:
        return dict(tickmode="array", tickvals=list(range(len(two))), ticktext=two), 1
    plain = [str(l) for l in range(len(positions))]
    idx, text, step = _thin(plain, px_per_col, text_px(plain[-1] if plain else "0", style.tick) + 10)
    return dict(tickmode="array", tickvals=idx, ticktext=text), step


# ---- the input maps ----------------------------------------------------------------------------------------
@figure_memo
def input_maps_figure(
    x: np.ndarray,
    padded: tuple[np.ndarray, int, int],
    style: Style = NORMAL,
    marks: InputMarks = NO_INPUT_MARKS,
    *,
    width_px: int = LEFT_WIDTH,
) -> go.Figure:
    """The C input maps x side by side, zero padding drawn around them (white, '0'), one colour per
    input cell; axes in true input coordinates (padding negative or >= the side).

    padded: (ids, row0, col0) from gpuops.maps.im2col.padded_ids, ids (C, Hp, Wp) the padded cell
    ids (-1 = padding) from input coordinates (row0, col0)."""
    (ids, row0, col0), n_cells = padded, x.size
    copies, taps, picked = marks.copies, marks.taps, marks.picked
    C, Hp, Wp = ids.shape
    H, W = x.shape[1:]
    gap = min(0.2, 36 * style.height_scale / width_px) if C > 1 else 0.0  # room between the panels
    width = (1 - gap * (C - 1)) / C
    panel_px = width_px * style.height_scale * width  # wider screens in presentation
    cell_px = min(MAX_CELL * style.height_scale, panel_px / Wp)
    rows = np.broadcast_to(np.arange(row0, row0 + Hp)[:, None], (Hp, Wp))
    cols = np.broadcast_to(np.arange(col0, col0 + Wp)[None, :], (Hp, Wp))
    x_step = math.ceil((text_px("−2", style.tick) + 6) / cell_px)
    y_step = math.ceil((style.tick + 2) / cell_px)
    data, layout, notes = [], {}, []
    for c in range(C):
        xk, yk, xr, yr = _axis_ids(c + 1)
        vals = values_of(ids[c], x)
        text = _cell_text(ids[c], np.full_like(ids[c], c), rows, cols)
        if copies is not None:
            count = values_of(ids[c], copies).astype(int).astype(str)
            text = np.where(
                ids[c] >= 0,
                np.char.add(np.char.add(np.char.add(text, "<br>copied "), count), " times into X_unroll"),
                text,
            )
        trace = identity_grid(
            ids[c], vals, style, origin=(row0, col0), look=GridLook(n_cells=n_cells, width_px=int(panel_px))
        )
        data.append(
            _dict(
                trace,
                xaxis=xr,
                yaxis=yr,
                customdata=text,
                hovertemplate="%{customdata}<br>value %{text}<extra></extra>",
                **label_props(_text(vals), panel_px, cell_px, style),
            )
        )
        x0 = c * (width + gap)
        layout[xk] = dict(
            domain=[x0, x0 + width],
            anchor=yr,
            dtick=x_step,
            showgrid=False,
            zeroline=False,
            constrain="domain",
        )
        layout[yk] = dict(
            domain=[0, 1],
            anchor=xr,
            autorange="reversed",
            dtick=y_step,
            showticklabels=c == 0,  # the rows are the same in every channel: numbered once, on the left
            showgrid=False,
            zeroline=False,
            constrain="domain",
            constraintoward="top",
            scaleanchor=xr,
        )
        notes.append(_subtitle(f"c = {c}", x0 + width / 2, 1.0, style))
    shapes: list[dict] = []
    if row0 < 0 or col0 < 0:  # the real input, inside its padding
        for c in range(C):
            shapes += outline((0, 0), style, Pen(SECOND, "dash", panel=input_panel(c)), size=(H, W))
    for c, r, q, inside in taps:
        shapes += _shapes([(r, q)], style, Pen(dash="solid" if inside else "dot", panel=input_panel(int(c))))
    if picked is not None:
        c, i, j = picked
        shapes += _shapes([(i, j)], style, Pen(panel=input_panel(c)))
    layout.update(shapes=shapes, annotations=notes)
    top, bottom = _top(style, subtitles=True), _bottom(style)
    return _assemble(
        dict(data=data, layout=layout),
        ("Input maps", "col j", ""),
        style,
        dict(
            height=int(top + Hp * cell_px + bottom),
            margin=dict(l=50, r=MODEBAR, t=top, b=bottom),
            yaxis=dict(title=dict(text="row i")),
        ),
    )


# ---- X_unroll, W, Y ----------------------------------------------------------------------------------------
def _matrix_height(rows: int, style: Style, max_plot: int) -> tuple[float, int]:
    """(px per row, plot height): rows tall enough for their tick label, within max_plot."""
    row_px = float(style.tick + 8)
    if rows * row_px > max_plot:
        row_px = max_plot / rows
    return row_px, int(rows * row_px)


def _separators(n: int, every: int, along: str, span: float) -> list[dict]:
    """Thin dark lines between channel blocks (every `every` rows or columns)."""
    out = []
    for k in range(every, n, every):
        pos = k - 0.5
        if along == "rows":
            out.append(
                dict(type="line", x0=-0.5, x1=span - 0.5, y0=pos, y1=pos, line=dict(color=HALO, width=2))
            )
        else:
            out.append(
                dict(type="line", y0=-0.5, y1=span - 0.5, x0=pos, x1=pos, line=dict(color=HALO, width=2))
            )
    return out


PLAIN = dict(showgrid=False, zeroline=False)


@figure_memo
def x_unroll_figure(
    x_unroll: np.ndarray,
    unroll: Unroll,
    style: Style = NORMAL,
    *,
    column: int | None = None,
    entries: Sequence[tuple[int, int]] = (),
) -> go.Figure:
    """X_unroll (C*K*K x L): every entry in the colour of the input cell it copies (white = padding
    zero), its value on top. Rows labelled (c, ki, kj), columns l over (oh, ow).
    column: outlined whole; entries: (r, l) outlined one by one (the copies of a picked cell)."""
    src_ids, (channel, src_rows, src_cols), labels = unroll.src_ids, unroll.sources, unroll.labels
    positions, n_cells, taps_per_channel, width_px = (
        unroll.positions,
        unroll.n_cells,
        unroll.taps_per_channel,
        FULL_WIDTH,
    )
    R, L = x_unroll.shape
    frac, col_px = _plot_width(L, width_px)
    row_px, plot_h = _matrix_height(R, style, 1000 if style.presentation else 880)
    trace = identity_grid(
        src_ids, x_unroll, style, look=GridLook(n_cells=n_cells, width_px=int(frac * width_px))
    )
    text = _cell_text(src_ids, channel, src_rows, src_cols)
    rl = np.array([row_label(t) for t in labels])
    custom = np.char.add(
        np.char.add(
            np.char.add(np.char.add("row r = ", np.arange(R).astype(str)[:, None]), " = (c,ki,kj) "),
            rl[:, None],
        ),
        np.char.add("<br>", text),
    )
    data = [
        _dict(
            trace,
            customdata=custom,
            hovertemplate="column l = %{x}<br>%{customdata}<br>value %{text}<extra></extra>",
            **label_props(_text(x_unroll), frac * width_px, row_px, style),
        )
    ]
    y_vals, y_text, step_y = _thin(list(rl), row_px, style.tick + 2)
    xt, step_x = column_ticks(positions, col_px, style)
    shapes = _separators(R, taps_per_channel, "rows", L)
    if column is not None:
        shapes += _shapes([(0, column)], style, size=(R, 1))
    shapes += _shapes(entries, style)
    title = f"X_unroll ({R} × {L})" + (f": {len(entries)} copies outlined" if entries else "")
    top = _top(style)
    bottom = _bottom(
        style, 2 if step_x == 1 and "<br>" in xt["ticktext"][0] else 1, title_lines=1 + (step_x > 1)
    )
    layout = dict(
        shapes=shapes,
        yaxis=dict(
            **PLAIN, autorange="reversed", tickmode="array", tickvals=y_vals, ticktext=y_text, automargin=True
        ),
        xaxis=dict(**PLAIN, **xt, domain=[0, frac], automargin=True),
    )
    return _assemble(
        dict(data=data, layout=layout),
        (
            title,
            "column l = output pixel (oh, ow)" + _every(step_x, "column"),
            "row r = (c, ki, kj)" + _every(step_y, "row"),
        ),
        style,
        dict(height=top + plot_h + bottom, margin=dict(t=top, b=bottom, l=60, r=MODEBAR)),
    )


def _filter_rows(
    mat: np.ndarray, hover: tuple[str, np.ndarray, str, str], style: Style, width_px: int, row_base: float
) -> tuple[list[dict], float, float, float]:
    """The trace of a matrix with one row per filter (W, Y): its values as labels; hover: the word
    for a value, each column's text, the hover template and the kind of data (its colours).
    Returns (data, plot fraction, column px, row px)."""
    name, column_text, hover, kind = hover
    M, n = mat.shape
    frac, col_px = _plot_width(n, width_px)
    row_px = float(max(style.tick + 14, min(MAX_CELL, row_base * style.height_scale)))
    trace = value_grid(mat, style, look=GridLook(name, "g", int(frac * width_px), kind=kind))
    labels = label_props(_text(mat), frac * width_px, row_px, style, dark=False)
    return (
        [_dict(trace, customdata=np.broadcast_to(column_text, (M, n)), hovertemplate=hover, **labels)],
        frac,
        col_px,
        row_px,
    )


def _filter_rows_figure(
    parts: tuple[list[dict], list[dict], dict],
    titles: tuple[str, str],
    style: Style,
    size: tuple[float, float, int],
) -> go.Figure:
    """A figure of one row per filter (rows down, one tick each): parts = its data, shapes and
    x axis; size = the fraction of the width it takes, the plot's height and the bottom margin."""
    (data, shapes, xaxis), (title, x_title), (frac, plot_h, bottom) = parts, titles, size
    top = _top(style)
    layout = dict(
        shapes=shapes,
        yaxis=dict(**PLAIN, autorange="reversed", dtick=1),
        xaxis=dict(**PLAIN, **xaxis, domain=[0, frac], automargin=True),
    )
    after = dict(height=top + int(plot_h) + bottom, margin=dict(t=top, b=bottom, l=60, r=MODEBAR))
    return _assemble(dict(data=data, layout=layout), (title, x_title, "filter m"), style, after)


@figure_memo
def filter_figure(
    w_mat: np.ndarray, unroll: Unroll, style: Style = NORMAL, *, row: int | None = None
) -> go.Figure:
    """The filter matrix W (M x C*K*K): row m is filter m, column r is weight (c, ki, kj) and
    multiplies row r of X_unroll. row: outlined (the picked filter)."""
    labels, taps_per_channel, width_px = unroll.labels, unroll.taps_per_channel, FULL_WIDTH
    M, R = w_mat.shape
    rl = np.array([row_label(t) for t in labels])
    hover = "filter m = %{y}, column r = %{x} = (c,ki,kj) %{customdata}<br>weight %{z:.4g}<extra></extra>"
    data, frac, col_px, row_px = _filter_rows(w_mat, ("weight", rl, hover, SIGNED), style, width_px, 40)
    wide = text_px(rl[-1], style.tick) + 8
    vertical = col_px < wide
    idx, text, step = _thin(list(rl), col_px, style.tick + 4 if vertical else wide)
    shapes = _separators(R, taps_per_channel, "cols", M)
    if row is not None:
        shapes += _shapes([(row, 0)], style, size=(1, R))
    bottom = _bottom(style, tick_px=wide if vertical else 0, title_lines=1 + (step > 1))
    xaxis = dict(tickmode="array", tickvals=idx, ticktext=text, tickangle=-90 if vertical else 0)
    title = f"Filter matrix W ({M} × {R})"
    x_title = "column r = (c, ki, kj)" + _every(step, "column")
    return _filter_rows_figure((data, shapes, xaxis), (title, x_title), style, (frac, M * row_px, bottom))


@figure_memo
def output_figure(
    y_mat: np.ndarray, positions: np.ndarray, style: Style = NORMAL, marks: OutputMarks = NO_OUTPUT_MARKS
) -> go.Figure:
    """Y = W x X_unroll (M x L): row m reshaped to H_out x W_out is output map m; positions (L, 2):
    the output pixel (oh, ow) of each column."""
    column, cell, columns, width_px = marks.column, marks.cell, marks.columns, RIGHT_WIDTH
    M, L = y_mat.shape
    pos = np.array([f"({oh},{ow})" for oh, ow in positions])
    hover = (
        "filter m = %{y}, column l = %{x}<br>output pixel (oh, ow) = "
        "%{customdata}<br>Y = %{z:.4g}<extra></extra>"
    )
    data, frac, col_px, row_px = _filter_rows(y_mat, ("Y", pos, hover, marks.kind), style, width_px, 44)
    xt, step = column_ticks(positions, col_px, style)
    shapes: list[dict] = []
    for first, count in runs(columns):
        shapes += outline((0, first), style, Pen(READER), size=(M, count))
    if column is not None:
        shapes += _shapes([(0, column)], style, size=(M, 1))
    if cell is not None:
        shapes += _shapes([cell], style)
    bottom = _bottom(style, 2 if step == 1 and "<br>" in xt["ticktext"][0] else 1, title_lines=1 + (step > 1))
    title = f"Y = W × X_unroll ({M} × {L})"
    x_title = "column l = output pixel (oh, ow)" + _every(step, "column")
    return _filter_rows_figure((data, shapes, xt), (title, x_title), style, (frac, M * row_px, bottom))


# ---- the product, written out ------------------------------------------------------------------------------
def product_terms(w_row: np.ndarray, x_col: np.ndarray, labels: Sequence[tuple[int, int, int]]) -> list[str]:
    """One line per input channel: 'c = 0: 1·1 + 1·2 + 2·1 + 2·1 = 7' (weights times copied values)."""
    lines = []
    for c in sorted({t[0] for t in labels}):
        rows = [r for r, t in enumerate(labels) if t[0] == c]
        terms = " + ".join(f"{w_row[r]:g}·{x_col[r]:g}" for r in rows)
        lines.append(f"c = {c}: {terms} = {float(np.dot(w_row[rows], x_col[rows])):g}")
    return lines


# ---- the column-by-column animation ------------------------------------------------------------------------


def _frame_title(l: int, oh: int, ow: int) -> str:
    return f"Column l = {l} of X_unroll → output pixel ({oh}, {ow})"


@figure_memo
def column_animation(steps: Steps, unroll: Unroll, style: Style = NORMAL) -> go.Figure:
    """Step through the columns of X_unroll (Plotly frames: play / pause / slider, in the browser).

    Top: the input maps with the cells column l copies outlined (padding cells are white); middle:
    X_unroll with column l outlined; bottom: Y with column l outlined."""
    x, (ids, row0, col0), x_unroll, y_mat, taps = (
        steps.x,
        steps.padded,
        steps.x_unroll,
        steps.y_mat,
        steps.taps,
    )
    src_ids, positions, labels, n_cells = unroll.src_ids, unroll.positions, unroll.labels, unroll.n_cells
    width_px, frame_prefix = FULL_WIDTH, "column l = "
    C, Hp, Wp = ids.shape
    R, L = x_unroll.shape
    M = y_mat.shape[0]
    gap_px = 48 + style.tick * 1.3 + style.font * 1.3  # the row above's tick labels, then a subplot title
    hgap = 0.06 if C > 1 else 0.0
    width = (1 - hgap * (C - 1)) / C
    panel_px = min(180 * style.height_scale, width_px * width)
    cell_px = min(MAX_CELL, panel_px / max(Hp, Wp))
    in_h = Hp * cell_px
    x_row_px, x_h = _matrix_height(R, style, 420 if style.presentation else 340)
    y_row_px = float(style.tick + 14)
    y_h = M * y_row_px
    plot_h = in_h + x_h + y_h + 2 * gap_px
    frac, col_px = _plot_width(L, width_px)
    y_dom = [0, y_h / plot_h]
    x_dom = [(y_h + gap_px) / plot_h, (y_h + gap_px + x_h) / plot_h]
    in_dom = [1 - in_h / plot_h, 1]
    data, layout, notes = [], {}, []
    for c in range(C):
        xk, yk, xr, yr = _axis_ids(c + 1)
        vals = values_of(ids[c], x)
        data.append(
            _dict(
                identity_grid(ids[c], vals, style, origin=(row0, col0), look=GridLook(n_cells=n_cells)),
                xaxis=xr,
                yaxis=yr,
                hovertemplate="row %{y}, col %{x}<br>value %{text}<extra></extra>",
                **label_props(_text(vals), panel_px, cell_px, style),
            )
        )
        x0 = c * (width + hgap)
        layout[xk] = dict(**PLAIN, domain=[x0, x0 + width], anchor=yr, dtick=1, constrain="domain")
        layout[yk] = dict(
            **PLAIN,
            domain=in_dom,
            anchor=xr,
            dtick=1,
            showticklabels=c == 0,
            autorange="reversed",
            constrain="domain",
            constraintoward="top",
            scaleanchor=xr,
        )
        notes.append(_subtitle(f"channel c = {c}", x0 + width / 2, 1.0, style))
    xk, yk, xr, yr = _axis_ids(C + 1)
    data.append(
        _dict(
            identity_grid(src_ids, x_unroll, style, look=GridLook(n_cells=n_cells)),
            xaxis=xr,
            yaxis=yr,
            hovertemplate="row r = %{y}, column l = %{x}<br>value %{text}<extra></extra>",
            **label_props(_text(x_unroll), frac * width_px, x_row_px, style),
        )
    )
    ty, tt, _ = _thin([row_label(t) for t in labels], x_row_px, style.tick + 2)
    xt, _ = column_ticks(positions, col_px, style)
    xt_plain = dict(tickmode="array", tickvals=xt["tickvals"], ticktext=[str(v) for v in xt["tickvals"]])
    layout[xk] = dict(**PLAIN, **xt_plain, domain=[0, frac], anchor=yr)
    layout[yk] = dict(
        **PLAIN, domain=x_dom, anchor=xr, autorange="reversed", tickmode="array", tickvals=ty, ticktext=tt
    )
    notes.append(_subtitle(f"X_unroll ({R} × {L})", frac / 2, x_dom[1], style))
    xk, yk, xr, yr = _axis_ids(C + 2)
    data.append(
        _dict(
            value_grid(y_mat, style, look=GridLook("Y", "g", kind=steps.y_kind)),
            xaxis=xr,
            yaxis=yr,
            **label_props(_text(y_mat), frac * width_px, y_row_px, style, dark=False),
        )
    )
    layout[xk] = dict(**PLAIN, **xt_plain, domain=[0, frac], anchor=yr)
    layout[yk] = dict(**PLAIN, domain=y_dom, anchor=xr, autorange="reversed", dtick=1)
    notes.append(_subtitle(f"Y = W × X_unroll ({M} × {L})", frac / 2, y_dom[1], style))
    refs = [_axis_ids(c + 1)[2:] for c in range(C)] + [_axis_ids(C + 1)[2:], _axis_ids(C + 2)[2:]]

    def outlines(l: int) -> list[dict]:
        """The frame's outline traces: per input channel a halo and a line, then X_unroll's and
        Y's column (halo and line)."""
        channel, rows, cols, _inside = taps[l]
        paths = []
        for c in range(C):
            keep = channel == c
            paths.append(_boxes(list(zip(rows[keep], cols[keep], strict=True))))
        paths += [_box(0, l, R, 1), _box(0, l, M, 1)]
        return [dict(type="scatter", x=xs, y=ys) for xs, ys in paths for _ in (0, 1)]

    start = len(data)
    for k, d in enumerate(outlines(0)):
        colour, width_line = (HALO, style.line + 3) if k % 2 == 0 else (HIGHLIGHT, style.line)
        xr, yr = refs[k // 2]
        data.append(
            dict(
                d,
                mode="lines",
                hoverinfo="skip",
                showlegend=False,
                xaxis=xr,
                yaxis=yr,
                line=dict(color=colour, width=width_line),
            )
        )
    traces = list(range(start, len(data)))
    names = [str(l) for l in range(min(L, MAX_FRAMES))]
    frames = [
        dict(
            data=outlines(l),
            traces=traces,
            name=names[l],
            layout=dict(title_text=_frame_title(l, *positions[l])),
        )
        for l in range(len(names))
    ]
    controls_px = 3 * style.font + 70  # the slider's value line, its rail and ticks, the buttons
    top_px, bottom_px = _top(style, subtitles=True), 30 + style.tick + style.font + controls_px
    layout.update(
        annotations=notes,
        **controls(
            names,
            style,
            Controls(
                prefix=frame_prefix,
                ms=800,
                y=-(30 + style.tick + style.font) / plot_h,
                buttons_pad=style.font + 24,
                slider_pad=style.font + 14,
            ),
        ),
    )
    return _assemble(
        dict(data=data, layout=layout, frames=frames),
        (_frame_title(0, *positions[0]), "", ""),
        style,
        {
            f"xaxis{C + 2}": dict(title=dict(text="column l")),
            f"yaxis{C + 2}": dict(title=dict(text="m")),
            "height": int(top_px + plot_h + bottom_px),
            "margin": dict(t=top_px, b=bottom_px, l=60, r=MODEBAR),
        },
    )


# ---- how big X_unroll gets ---------------------------------------------------------------------------------
@figure_memo
def expansion_figure(
    sizes: Sequence[int],
    ratios: tuple[Sequence[float], Sequence[float]],
    k: int,
    current: tuple[int, float],
    style: Style = NORMAL,
) -> go.Figure:
    """The expansion ratio against the image side (log axis, every size labelled): without padding
    it climbs toward K x K; with padding K // 2 (output as large as the input) it is K x K.
    ratios: (without padding, with padding K // 2), one per size; current: (side, ratio) here."""
    no_pad, same = ratios
    fig = go.Figure()
    fig.add_hline(
        y=k * k,
        line=dict(color="#888888", dash="dot", width=2),
        annotation_text=f"K × K = {k * k}",
        annotation_position="top left",
    )
    for ratios, pad, dash, colour in [(no_pad, 0, "solid", "#1f77b4"), (same, k // 2, "dash", "#2ca02c")]:
        fig.add_trace(
            go.Scatter(
                x=list(sizes),
                y=list(ratios),
                mode="lines+markers",
                name=f"padding {pad}",
                line=dict(width=3, dash=dash, color=colour),
                hovertemplate=f"side %{{x}} px: ratio %{{y:.3f}}<extra>padding {pad}</extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[current[0]],
            y=[current[1]],
            mode="markers",
            name="your image",
            marker=dict(size=18, color=HIGHLIGHT, symbol="star", line=dict(color=HALO, width=1)),
            hovertemplate="your image: side %{x} px, ratio %{y:.3f}<extra></extra>",
        )
    )
    finish(
        fig,
        "Expansion ratio vs image size",
        ("image side H = W (pixels, log scale)", "X_unroll / input"),
        420,
        style,
    )
    fig.update_xaxes(type="log", tickmode="array", tickvals=list(sizes), ticktext=[str(s) for s in sizes])
    fig.update_yaxes(rangemode="tozero", range=[0, k * k * 1.15])
    fig.update_layout(
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", font=dict(size=style.font)),
        margin=dict(t=_top(style) + int(style.font * 1.6), b=_bottom(style)),
    )
    return fig


def runtime_figure(
    labels: Sequence[str], ms: Sequence[float], title: str, backend: str, style: Style = NORMAL
) -> go.Figure:
    """Median runtimes of im2col's steps and of the direct kernel on the same image (linear axis)."""
    fig = go.Figure(
        go.Bar(
            x=list(ms),
            y=list(labels),
            orientation="h",
            text=[f"{v:.3f} ms" for v in ms],
            textposition="auto",
            textfont=dict(size=style.font),
            marker_color="#1f77b4",
            hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
        )
    )
    finish(fig, title, (f"milliseconds (median, {backend})", ""), 150 + 60 * len(ms), style)
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(rangemode="tozero")
    return fig
