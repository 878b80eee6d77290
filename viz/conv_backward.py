"""Figures of the Backward & transposed page: dY, w, w flipped and dX side by side (who gathers what,
who scatters where), the transposed convolution stamp by stamp, the overlap count, dE/dW, the
reflect-pad backward count map, runtimes, and the sums written out with their numbers.

Pure functions: arrays and a Style in, go.Figure (or LaTeX text) out; no Streamlit, no kernels,
no index formulas (the cells come from gpuops.maps.conv_backward).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from viz.animation import Controls, controls
from viz.memo import figure_memo
from viz.style import (
    COUNT,
    HALO,
    HIGHLIGHT,
    IMAGE,
    NORMAL,
    PADDING_COLOUR,
    READER,
    SECOND,
    SIGNED,
    Pen,
    Style,
    label_size,
    outline,
    scale_for,
    title_layout,
)

if TYPE_CHECKING:  # the maps' records, read by attribute (viz imports no compute code)
    from gpuops.maps.conv_backward import (
        GradientSources,
        GradientTerms,
        ReflectTerms,
        ScatterTerms,
        StampFrames,
        WeightTerms,
    )

# plotting width (px) a full-width figure gets, per mode: a 1366 x 768 laptop with the sidebar open
# (normal); in presentation mode between that and a 1920 x 1080 projector (its text is larger). The
# cells, labels and height are sized from it (a wider screen leaves the cells as they are, a narrower
# one shrinks them)
FULL_WIDTH = {"normal": 800, "presentation": 1000}
TAGS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
NO_STAMP = "no stamp yet"  # the animation's first frame
MAX_FRAMES = 48  # larger inputs stamp several cells per frame (frames travel with every rerun)
ORIGINAL_LINE = SECOND  # the input region inside a padded grid (cyan, as on the other pages)


# ---- a row of labelled grids -----------------------------------------------------------------------
@dataclass(frozen=True)
class Panel:
    """One grid of a figure: values with their true coordinates, how to label and colour them."""

    values: np.ndarray  # (h, w)
    title: str
    name: str  # what the hover calls a value, e.g. "dY"
    x_title: str
    y_title: str
    row0: int = 0
    col0: int = 0
    fmt: str = ".3g"
    scale: dict | None = None  # a colour scale shared with another panel (else the kind's, for values)
    kind: str = SIGNED  # the kind of data (viz.style.scale_for): gradients and weights are signed
    wash: np.ndarray | None = None  # bool (h, w): cells drawn washed (padding, cropped)
    wash_text: str = "padding"


@dataclass(frozen=True)
class Marks:
    """Outlined cells and corner tags, per panel (0-based panel index)."""

    picked: tuple[int, int, int] | None = None  # (panel, row, col), orange
    mapped: Sequence[tuple[int, int, int]] = ()  # what the pick maps to
    mapped_colour: str = HIGHLIGHT
    tags: Sequence[tuple[int, int, int, str]] = ()  # (panel, row, col, text) in the cell's corner
    boxes: Sequence[tuple[int, int, int, int, int]] = field(
        default_factory=tuple
    )  # (panel, r, c, h, w) black


NO_MARKS = Marks()


@dataclass(frozen=True)
class Framing:
    """How a row of panels is framed: the least plot width (px; None: the style's full width),
    the title's lines, traces drawn over the grids (extra_data: animated outlines) with the px
    they need below the axes (extra_bottom), and an animation's frames and layout entries."""

    plot_width: int | None = None
    title_lines: int = 1
    extra_data: Sequence[dict] = ()
    extra_bottom: int = 0
    frames: Sequence[dict] = ()
    layout: dict | None = None


PLAIN = Framing()


def _no_cells() -> np.ndarray:
    return np.zeros((0, 2), dtype=np.int64)


@dataclass(frozen=True)
class Links:
    """What a picked cell of dX or dY maps to, (k, 2) cells each: the output gradients (dY) and
    the taps of w and of w flipped that a dX cell gathers; the dX cells a dY cell scatters into."""

    outputs: np.ndarray = field(default_factory=_no_cells)
    taps: np.ndarray = field(default_factory=_no_cells)
    flipped: np.ndarray = field(default_factory=_no_cells)
    inputs: np.ndarray = field(default_factory=_no_cells)


class Example(Protocol):
    """The small example the page draws (ui.records.Example): x, w (and w flipped), dY, and what
    the kernels computed from them, with the format its numbers are written in."""

    x: np.ndarray
    w: np.ndarray
    dy: np.ndarray
    dx: np.ndarray
    dw: np.ndarray
    fmt: str

    @property
    def w_flipped(self) -> np.ndarray: ...


@dataclass(frozen=True)
class PadGrads:
    """Reflect-pad backward on a small grid: dY of the padded grid, how many padded cells send
    their gradient to each input cell, dX = reflect_pad_backward(dY), and the pads (left,
    right, top, bottom)."""

    dy: np.ndarray
    counts: np.ndarray
    dx: np.ndarray
    pads: tuple[int, int, int, int]


def _chars(values: np.ndarray, fmt: str) -> int:
    if values.size == 0:
        return 1
    return max(len(format(float(v), fmt)) for v in (values.min(), values.max()))


def _labels(values: np.ndarray, fmt: str) -> np.ndarray:
    """Cell labels ("" for NaN); adding 0.0 turns -0.0 (3 x 0 with a negative weight) into 0."""
    return np.vectorize(lambda v: "" if not np.isfinite(v) else format(v, fmt))(
        values.astype(np.float64) + 0.0
    )


def _tick_step(cell_px: float, style: Style) -> int:
    """Every cell gets a tick label when two-digit numbers fit, else every 2nd or 5th."""
    for step in (1, 2, 5):
        if cell_px * step >= 1.6 * style.tick:
            return step
    return 10


def margins(style: Style, title_lines: int = 1, subplot_titles: bool = True, bottom_extra: int = 0) -> dict:
    """Margins that fit the text of this style, no more: the lesson must fit a laptop screen."""
    top = int(1.45 * style.title * title_lines + (1.7 * style.font if subplot_titles else 0) + 12)
    return dict(
        l=int(2 * style.tick + style.font + 16),
        r=48,
        t=top,
        b=int(style.tick + 1.5 * style.font + 22 + bottom_extra),
    )


def cell_px(widths: Sequence[int], style: Style, plot_width: int) -> float:
    """Side of a cell (px) when grids of these widths (cells) share plot_width, with room for
    each panel's row ticks and title between them; never larger than a readable cap."""
    gap = _gap_px(style)
    return min(2.9 * style.font, (plot_width - gap * (len(widths) - 1)) / max(1, sum(widths)))


def _gap_px(style: Style) -> int:
    return int(2.2 * style.tick + 1.6 * style.font + 10)


def layout_base(title: str, style: Style, height: int, margin: dict) -> dict:
    """The layout every figure of this page shares, as viz.style.finish writes it (title, text
    sizes, vertical mode bar that never covers the title), built as a plain dict: one figure
    is then made and checked once, not updated piece by piece (many times faster)."""
    return dict(
        title=title_layout(title, style, y=0.99),
        font=dict(size=style.font),
        height=int(height),
        margin=margin,
        modebar=dict(orientation="v"),
        hoverlabel=dict(font=dict(size=style.font)),
        showlegend=False,
    )


@functools.lru_cache(maxsize=16)
def _colours(name: str) -> tuple:
    return tuple(tuple(stop) for stop in plotly.colors.get_colorscale(name))


def _heatmap(values: np.ndarray, row0: int, col0: int, axis: int, **kw: object) -> dict:
    """A heatmap trace as a dict. Named colour scales are resolved here, as plotly's validation
    would (Plotly.js reads "RdBu" as its own grey-centred scale and knows no "_r")."""
    if isinstance(kw.get("colorscale"), str):
        kw["colorscale"] = [list(stop) for stop in _colours(kw["colorscale"])]
    h, w = values.shape
    return dict(
        type="heatmap",
        z=values,
        x=np.arange(col0, col0 + w),
        y=np.arange(row0, row0 + h),
        xaxis=_ref("x", axis),
        yaxis=_ref("y", axis),
        showscale=False,
        **kw,
    )


def panels_figure(
    panels: Sequence[Panel],
    title: str,
    style: Style = NORMAL,
    marks: Marks = NO_MARKS,
    framing: Framing = PLAIN,
) -> go.Figure:
    """Grids side by side (one subplot each, square cells, top-aligned), every value written in
    its cell when it fits, picked and mapped cells outlined (halo + bright line), corner tags
    that pair cells across panels, and washed cells (padding)."""
    plot_width = framing.plot_width or FULL_WIDTH[style.name]
    widths = [p.values.shape[1] for p in panels]
    cell = cell_px(widths, style, plot_width)
    gap = _gap_px(style)
    total = cell * sum(widths) + gap * (len(panels) - 1)
    margin = margins(style, framing.title_lines, bottom_extra=framing.extra_bottom)
    rows = max(p.values.shape[0] for p in panels)
    lay = layout_base(title, style, rows * cell + margin["t"] + margin["b"] + 4, margin)
    data: list[dict] = []
    annotations: list[dict] = []
    step = _tick_step(cell, style)
    tags_at: dict[int, dict[tuple[int, int], str]] = {}
    for panel, r, c, text in marks.tags:
        tags_at.setdefault(panel, {})[(r, c)] = text
    panels = [
        dataclasses.replace(p, fmt=".3g") if np.all(np.mod(p.values, 1) == 0) else p  # whole numbers
        for p in panels
    ]
    sizes = [label_size(1, int(cell), style, chars=_chars(p.values, p.fmt)) for p in panels]
    # tags pair cells ACROSS panels: drawn in every tagged panel, or in none
    tagged = all(
        _tagged(p, tags_at[k], sizes[k], cell, style) is not None
        for k, p in enumerate(panels)
        if k in tags_at
    )
    x0 = 0.0
    for k, p in enumerate(panels):
        h, w = p.values.shape
        scale = p.scale or scale_for(p.kind, p.values)
        text, size = _tagged(
            p, tags_at.get(k, {}) if tagged else {}, sizes[k], cell, style
        )  # never None untagged
        labels = (
            dict(text=text, texttemplate="%{text}", textfont=dict(size=size or style.label))
            if text is not None
            else {}
        )
        data.append(
            _heatmap(
                p.values,
                p.row0,
                p.col0,
                k,
                xgap=1,
                ygap=1,
                **labels,
                **scale,
                hovertemplate=f"{p.name}[%{{y}}, %{{x}}] = %{{z:.4g}}<extra></extra>",
            )
        )
        if p.wash is not None and p.wash.any():
            data.append(
                _heatmap(
                    np.where(p.wash, 1.0, np.nan),
                    p.row0,
                    p.col0,
                    k,
                    hoverongaps=False,
                    colorscale=[[0, PADDING_COLOUR], [1, PADDING_COLOUR]],
                    hovertemplate=f"{p.name}[%{{y}}, %{{x}}]: {p.wash_text}<extra></extra>",
                )
            )
        x1 = x0 + cell * w / total
        xticks = dict(tickvals=list(range(p.col0, p.col0 + w, step)))
        yticks = dict(tickvals=list(range(p.row0, p.row0 + h, step)))
        axis_font = dict(
            tickfont=dict(size=style.tick),
            showgrid=False,
            zeroline=False,
            constrain="domain",
            tickmode="array",
        )
        lay[f"xaxis{k + 1 if k else ''}"] = dict(
            domain=[x0, min(1.0, x1)],
            anchor=_ref("y", k),
            range=[p.col0 - 0.5, p.col0 + w - 0.5],
            title=dict(text=p.x_title, font=dict(size=style.font)),
            **axis_font,
            **xticks,
        )
        lay[f"yaxis{k + 1 if k else ''}"] = dict(  # domain: the same cell size in every panel, tops aligned
            domain=[1.0 - h / rows, 1.0],
            anchor=_ref("x", k),
            range=[p.row0 + h - 0.5, p.row0 - 0.5],
            scaleanchor=_ref("x", k),
            constraintoward="top",
            title=dict(text=p.y_title, font=dict(size=style.font)),
            **axis_font,
            **yticks,
        )
        if p.title:
            annotations.append(
                dict(
                    text=p.title,
                    x=(x0 + x1) / 2,
                    y=1.0,
                    xref="paper",
                    yref="paper",
                    xanchor="center",
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=style.font),
                )
            )
        x0 = x1 + gap / total
    shapes: list[dict] = []
    for panel, r, c, bh, bw in marks.boxes:
        shapes += outline((r, c), style, Pen(ORIGINAL_LINE, panel=_ref("x", panel)), size=(bh, bw))[1:]
    for panel, r, c in marks.mapped:
        if (panel, r, c) != marks.picked:
            shapes += outline((r, c), style, Pen(marks.mapped_colour, panel=_ref("x", panel)))
    if marks.picked is not None:
        panel, r, c = marks.picked
        shapes += outline((r, c), style, Pen(HIGHLIGHT, panel=_ref("x", panel)))
    lay.update(shapes=shapes, annotations=annotations, **(framing.layout or {}))
    figure = dict(data=[*data, *framing.extra_data], layout=lay, frames=list(framing.frames))
    return go.Figure(figure, _validate=False)


def _tagged(
    p: Panel, tags: Mapping[tuple[int, int], str], size: int | None, cell: float, style: Style
) -> tuple[np.ndarray | None, int | None] | None:
    """(labels, their font size) of a panel: the values (when they fit) and, in tagged cells, the
    tag in bold at the style's label size right after the value (the values' font shrinks to make
    room, never under the style's label size), or alone when the values are hidden. None: the
    tags do not fit."""
    text = _labels(p.values, p.fmt) if size else None
    if not tags:
        return text, size
    tag_px = style.label
    if text is None:
        if cell < 1.4 * tag_px:
            return None
        text = np.full(p.values.shape, "", dtype=object)
        joint = ""
    else:
        chars = max(len(text[r - p.row0, c - p.col0]) for r, c in tags)  # the widest tagged value
        room = int((cell - 0.9 * tag_px - 3) / (0.62 * chars))
        if room < style.label:
            return None
        size = min(size, room)
        joint = "\u2009"  # a thin space
    text = text.astype(object)
    for (r, c), tag in tags.items():
        if tag:
            text[r - p.row0, c - p.col0] += f"{joint}<b style='font-size:{tag_px}px'>{tag}</b>"
    return text, size


def _ref(axis: str, panel: int) -> str:
    return axis if panel == 0 else f"{axis}{panel + 1}"


def shared_scale(*arrays: np.ndarray) -> dict:
    """One diverging colour scale, centred at 0, for several arrays of signed data."""
    return scale_for(SIGNED, np.concatenate([np.ravel(a) for a in arrays]))


def input_kind(x: np.ndarray) -> str:
    """An input crop of the image is an IMAGE (fixed [0, 1]); the small integer examples are
    non-negative amounts (COUNT's scale, from 0)."""
    return IMAGE if x.size and float(x.min()) >= 0 and float(x.max()) <= 1 else COUNT


def tags_for(n: int) -> list[str]:
    """Letters pairing the cells of one term across panels; none when there are too many."""
    return list(TAGS[:n]) if n <= len(TAGS) else [""] * n


# ---- dE/dX: who gathers what, who scatters where -----------------------------------------------------
@figure_memo
def grad_input_figure(ex: Example, style: Style, *, picked: tuple[str, int, int], links: Links) -> go.Figure:
    """dY | w | w flipped | dX, one panel each. picked = ("dx" | "dy", row, col).

    Gather (a dX cell picked): its sources `links.outputs` in dY, the taps they meet in w and in
    w flipped (`links.taps`, `links.flipped`), outlined orange, each term tagged A, B, ... in dY
    and in both kernels. Scatter (a dY cell picked): the cells `links.inputs` of dX it adds into
    and the taps of w, outlined red, tagged in w and dX.
    """
    space, r, c = picked
    dy, w, w_flipped, dx, fmt = ex.dy, ex.w, ex.w_flipped, ex.dx, ex.fmt
    outputs, taps, flipped, inputs = links.outputs, links.taps, links.flipped, links.inputs
    scale_w = shared_scale(w)
    panels = [
        Panel(dy, f"dY {dy.shape[1]} x {dy.shape[0]}", "dY", "ow", "oh", fmt=fmt),
        # the kernels name their rows in the title: a row title would crowd the narrow gap before them
        Panel(w, "w[ki, kj]", "w", "kj", "", fmt=fmt, scale=scale_w),
        Panel(w_flipped, "w flipped[a, b]", "w flipped", "b", "", fmt=fmt, scale=scale_w),
        Panel(dx, f"dX = grad_input {dx.shape[1]} x {dx.shape[0]}", "dX", "iw", "ih", fmt=fmt),
    ]
    tags = tags_for(len(taps))
    if space == "dx":
        mapped = [(0, *o) for o in outputs] + [(1, *t) for t in taps] + [(2, *f) for f in flipped]
        tagged = [
            (p, *cell, tag)
            for cells, p in ((outputs, 0), (taps, 1), (flipped, 2))
            for cell, tag in zip(cells, tags, strict=True)
        ]
        marks = Marks(
            (3, r, c),
            [(p, int(a), int(b)) for p, a, b in mapped],
            HIGHLIGHT,
            [(p, int(a), int(b), t) for p, a, b, t in tagged],
        )
        title = (
            f"dX[{r}, {c}] gathers {len(outputs)} output gradient{'s' * (len(outputs) != 1)} "
            "through the flipped kernel"
        )
    else:
        mapped = [(3, *i) for i in inputs] + [(1, *t) for t in taps]
        tagged = [
            (p, *cell, tag)
            for cells, p in ((inputs, 3), (taps, 1))
            for cell, tag in zip(cells, tags, strict=True)
        ]
        marks = Marks(
            (0, r, c),
            [(p, int(a), int(b)) for p, a, b in mapped],
            READER,
            [(p, int(a), int(b), t) for p, a, b, t in tagged],
        )
        title = f"dY[{r}, {c}] scatters into {len(inputs)} input cell{'s' * (len(inputs) != 1)} (atomicAdd)"
    return panels_figure(panels, title, style, marks)


# ---- the sums, written out with their numbers --------------------------------------------------------
def _num(v: float) -> str:
    """A value for a formula: whole numbers without decimals, negatives in brackets."""
    text = f"{v:.0f}" if float(v).is_integer() else f"{v:.3g}"
    return f"({text})" if v < 0 else text


def _lines(terms: Sequence[str], per_line: int, joiner: str = " + ") -> list[str]:
    return [joiner.join(terms[i : i + per_line]) for i in range(0, len(terms), per_line)]


def _aligned(lhs: str, blocks: Sequence[Sequence[str]]) -> str:
    """lhs &= block 1 line 1 \\ &+ line 2 ... \\ &= block 2 ..."""
    rows = []
    for b, lines in enumerate(blocks):
        for i, line in enumerate(lines):
            lead = (lhs if b == 0 and i == 0 else "") + (" &= " if i == 0 else " &\\quad + ")
            rows.append(lead + line)
    return r"\begin{aligned}" + r" \\ ".join(rows) + r"\end{aligned}"


def gather_latex(
    cell: tuple[int, int], src: GradientSources, terms: GradientTerms, computed: float, per_line: int = 4
) -> str:
    """dX[r, c] = sum of dY[oh, ow] * w_flipped[a, b], the same with numbers, and the total: src
    holds the output gradients and flipped taps, terms their values (grad, weight)."""
    (r, c), outputs, flipped, grad, weight = cell, src.outputs, src.flipped, terms.grad, terms.weight
    if len(outputs) == 0:
        return rf"dX[{r}, {c}] = 0 \quad \text{{(no window read this cell: it gets no gradient)}}"
    tags = tags_for(len(outputs))
    names = [
        rf"\underset{{{t}}}{{dY[{o[0]},{o[1]}]\,\hat w[{f[0]},{f[1]}]}}"
        if t
        else rf"dY[{o[0]},{o[1]}]\,\hat w[{f[0]},{f[1]}]"
        for o, f, t in zip(outputs, flipped, tags, strict=True)
    ]
    values = [rf"{_num(g)} \cdot {_num(v)}" for g, v in zip(grad, weight, strict=True)]
    return _aligned(f"dX[{r}, {c}]", [_lines(names, per_line), _lines(values, per_line), [_num(computed)]])


def scatter_latex(cell: tuple[int, int], terms: ScatterTerms, per_line: int = 3) -> str:
    """dY[r, c] adds dY * w[ki, kj] onto dX[ih, iw], one addition per tap (each an atomicAdd)."""
    (r, c), grad, weight = cell, terms.grad, terms.weight
    inputs, taps = terms.targets[:, :2], terms.targets[:, 2:]
    if len(inputs) == 0:
        return rf"dY[{r}, {c}] \text{{ read padding only: it adds nothing to dX}}"
    tags = tags_for(len(inputs))
    adds = [
        rf"{t}\!:\ dX[{i[0]},{i[1]}] \mathrel{{+}}= {_num(grad)} \cdot w[{k[0]},{k[1]}] = {_num(grad * v)}"
        for i, k, v, t in zip(inputs, taps, weight, tags, strict=True)
    ]
    rows = _lines(adds, per_line, r", \quad ")
    return r"\begin{aligned}" + r" \\ ".join(f"&{row}" for row in rows) + r"\end{aligned}"


def weight_latex(
    tap: tuple[int, int], terms: WeightTerms, computed: float, *, per_line: int = 4, most: int = 16
) -> str:
    """dW[ki, kj] = sum of dY[oh, ow] * x[ih, iw] (the first `most` terms written out)."""
    (ki, kj), pairs, grad, value = tap, terms.pairs, terms.grad, terms.value
    if len(pairs) == 0:
        return rf"dW[{ki}, {kj}] = 0 \quad \text{{(this tap only ever read padding)}}"
    n = len(pairs)
    shown = min(n, most)
    tags = tags_for(n)
    names = [rf"dY[{p[0]},{p[1]}]\,x[{p[2]},{p[3]}]" for p in pairs[:shown]]
    names = [rf"\underset{{{t}}}{{{s}}}" if t else s for s, t in zip(names, tags, strict=False)]
    values = [rf"{_num(g)} \cdot {_num(v)}" for g, v in zip(grad[:shown], value[:shown], strict=True)]
    if shown < n:
        names.append(rf"\dots \text{{ ({n - shown} more terms)}}")
        values.append(r"\dots")
    return _aligned(f"dW[{ki}, {kj}]", [_lines(names, per_line), _lines(values, per_line), [_num(computed)]])


def reflect_latex(cell: tuple[int, int], terms: ReflectTerms, computed: float) -> str:
    """dx[y, x] = the sum of the gradients of every padded cell that copied it."""
    (y, x), cells, grad = cell, terms.cells, terms.grad
    names = [rf"dY_{{pad}}[{a},{b}]" for a, b in cells]
    values = [_num(g) for g in grad]
    return _aligned(f"dX[{y}, {x}]", [_lines(names, 5), _lines(values, 9), [_num(computed)]])


# ---- the transposed convolution, stamp by stamp ---------------------------------------------------------
def _square_path(rows: np.ndarray, cols: np.ndarray) -> tuple[list, list]:
    """Closed squares around cells, as one line trace (None separates the squares)."""
    r, c = np.ravel(rows).astype(np.float64)[:, None], np.ravel(cols).astype(np.float64)[:, None]
    xs = np.hstack([c - 0.5, c + 0.5, c + 0.5, c - 0.5, c - 0.5, np.full_like(c, np.nan)]).ravel()
    ys = np.hstack([r - 0.5, r - 0.5, r + 0.5, r + 0.5, r - 0.5, np.full_like(r, np.nan)]).ravel()
    return [None if v != v else v for v in xs.tolist()], [None if v != v else v for v in ys.tolist()]


@figure_memo
def stamp_animation(
    x: np.ndarray,
    stamped: StampFrames,
    style: Style = NORMAL,
    *,
    fmt: str = ".3g",
    plot_width: int | None = None,
) -> go.Figure:
    """The transposed convolution as stamps: input cell (i, j) in turn (outlined on the left)
    lays down x[i, j] * w (middle) at its stamp position on the output (outlined on the right),
    which accumulates. The canvas includes the cells the stamps reach beyond the output (washed:
    padding crops them off); the output itself is boxed. Frames run in the browser.

    stamped: the canvas (n + 1 sums: before any stamp and after each), each stamp (n, KH, KW)
    and its cells (rows, cols: (n, KH*KW), output coordinates), from gpuops.maps.conv_backward.
    """
    sums, stamps, rows, cols = stamped.sums, stamped.stamps, stamped.rows, stamped.cols
    canvas, output_shape, x_name = stamped.canvas, stamped.output_shape, "dY"
    top, bottom, left, right = canvas
    H_out, W_out = output_shape
    n = stamps.shape[0]
    H_in, W_in = x.shape
    KW = stamps.shape[2]
    plot_width = plot_width or FULL_WIDTH[style.name]
    scale = shared_scale(stamps, sums.min(axis=0), sums.max(axis=0))
    rr, cc = np.mgrid[top : bottom + 1, left : right + 1]
    cropped = (rr < 0) | (rr >= H_out) | (cc < 0) | (cc >= W_out)
    blank = np.zeros_like(stamps[0])
    panels = [
        Panel(x, f"input {x_name} {W_in} x {H_in}", x_name, "col j", "row i", fmt=fmt),
        Panel(blank, f"stamp {x_name}[i, j] · w[ki, kj]", "stamp", "kj", "", fmt=fmt, scale=scale),
        Panel(
            sums[0],
            f"output {W_out} x {H_out}",
            "output",
            "column",
            "row",
            row0=top,
            col0=left,
            fmt=fmt,
            scale=scale,
            wash=cropped,
            wash_text="cropped by padding",
        ),
    ]
    cell = cell_px([W_in, KW, right - left + 1], style, plot_width)
    size = label_size(1, int(cell), style, chars=_chars(sums, fmt))
    stamp_size = label_size(1, int(cell), style, chars=_chars(stamps, fmt))
    halo = dict(color=HALO, width=style.line + 3)
    line = dict(color=HIGHLIGHT, width=style.line)
    outlines = [
        dict(
            type="scatter", x=[], y=[], mode="lines", line=ln, hoverinfo="skip", xaxis=ax, yaxis="y" + ax[1:]
        )
        for ax, ln in (("x", halo), ("x", line), ("x3", halo), ("x3", line))
    ]
    first_outline = 3 + (1 if cropped.any() else 0)  # heatmaps: input 0, stamp 1, canvas 2, its wash
    traces = [1, 2, first_outline, first_outline + 1, first_outline + 2, first_outline + 3]

    def frame(
        name: str, stamp: np.ndarray, total: np.ndarray, at: tuple[list, list], spots: tuple[list, list]
    ) -> dict:
        # plain lists: Plotly.animate does not decode the typed arrays (bdata) numpy arrays become
        return dict(
            name=name,
            traces=traces,
            data=[
                dict(
                    type="heatmap",
                    z=stamp.tolist(),
                    text=_labels(stamp, fmt).tolist() if stamp_size else None,
                ),
                dict(type="heatmap", z=total.tolist(), text=_labels(total, fmt).tolist() if size else None),
                dict(type="scatter", x=at[0], y=at[1]),
                dict(type="scatter", x=at[0], y=at[1]),
                dict(type="scatter", x=spots[0], y=spots[1]),
                dict(type="scatter", x=spots[0], y=spots[1]),
            ],
        )

    step = -(-n // MAX_FRAMES)  # input cells per frame: one, unless the grid is large
    ends = list(range(step - 1, n, step)) + ([n - 1] if (n - 1) % step != step - 1 else [])
    labels, frames, start = [NO_STAMP], [frame(NO_STAMP, blank, sums[0], ([], []), ([], []))], 0
    for end in ends:
        cells = np.arange(start, end + 1)
        i, j = np.divmod(cells, W_in)
        first = f"{x_name}[{i[0]}, {j[0]}]"
        labels.append(f"{first} stamped" if len(cells) == 1 else f"{first} … [{i[-1]}, {j[-1]}] stamped")
        frames.append(
            frame(
                labels[-1],
                stamps[end],
                sums[end + 1],
                _square_path(i, j),
                _square_path(rows[start : end + 1], cols[start : end + 1]),
            )
        )
        start = end + 1
    extra = int(3.4 * style.font + 34)  # the play buttons and the step slider under the grids
    below_axis = margins(style)["b"]
    title = "conv_transpose2d: every input cell stamps the kernel, stride apart"
    if step > 1:
        title += f" ({step} cells per frame)"
    framing = Framing(
        plot_width,
        extra_data=outlines,
        extra_bottom=extra,
        frames=frames,
        layout=controls(labels, style, Controls(step_labels=False)),
    )
    fig = panels_figure(panels, title, style, Marks(boxes=[(2, 0, 0, H_out, W_out)]), framing)
    plot_h = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    y = -(below_axis + 2) / max(1, plot_h)  # just under the axis titles
    fig.layout.updatemenus[0].y = y
    fig.layout.sliders[0].y = y
    return fig


@figure_memo
def overlap_figure(
    counts: np.ndarray, style: Style = NORMAL, *, picked: tuple[int, int] | None = None, plot_width: int = 360
) -> go.Figure:
    """How many stamps land on each output cell (sequential from 0: counts are never negative);
    the picked cell outlined."""
    H, W = counts.shape
    panel = Panel(
        counts.astype(np.float64),
        f"output {W} x {H}",
        "stamps on",
        "output column",
        "output row",
        fmt=".0f",
        kind=COUNT,
    )
    marks = Marks(picked=(0, *picked) if picked else None)
    fig = panels_figure([panel], "Stamps per output cell", style, marks, Framing(plot_width))
    fig.data[0].hovertemplate = "output row %{y}, col %{x}<br>%{z:.0f} stamps land here<extra></extra>"
    return fig


# ---- dE/dW -----------------------------------------------------------------------------------------
@figure_memo
def grad_weight_figure(
    ex: Example, style: Style, *, picked: tuple[str, int, int], pairs: np.ndarray
) -> go.Figure:
    """x | dY | dW. picked ("w", ki, kj): the input cells and output gradients weight (ki, kj)
    multiplied, pairs (k, 4) rows (oh, ow, ih, iw), outlined orange and tagged A, B, ...;
    picked ("x", ih, iw): pairs (k, 4) rows (oh, ow, ki, kj), the outputs and weights this input
    cell fed, outlined red and tagged."""
    space, r, c = picked
    x, dy, dw, fmt, dw_fmt = ex.x, ex.dy, ex.dw, ex.fmt, ".3g"
    panels = [
        Panel(x, f"x {x.shape[1]} x {x.shape[0]}", "x", "iw", "ih", fmt=fmt, kind=input_kind(x)),
        Panel(dy, f"dY {dy.shape[1]} x {dy.shape[0]}", "dY", "ow", "oh", fmt=fmt),
        Panel(dw, "dW[ki, kj] = grad_weight", "dW", "kj", "", fmt=dw_fmt),
    ]
    tags = tags_for(len(pairs))
    # pairs are (oh, ow, ih|ki, iw|kj): the dY cell (panel 1) and the other factor's cell
    picked, other, colour = (2, 0, HIGHLIGHT) if space == "w" else (0, 2, READER)
    dy_cells = [(1, int(a), int(b)) for a, b in pairs[:, :2]]
    other_cells = [(other, int(a), int(b)) for a, b in pairs[:, 2:]]
    tagged = [(*cell, t) for cell, t in zip(dy_cells + other_cells, tags + tags, strict=True)]
    marks = Marks((picked, r, c), dy_cells + other_cells, colour, tagged)
    if space == "w":
        title = f"dW[{r}, {c}] sums {len(pairs)} products dY · x: dY slides over x"
    else:
        title = f"x[{r}, {c}] feeds {len(pairs)} weight gradient term{'s' * (len(pairs) != 1)}"
    return panels_figure(panels, title, style, marks)


# ---- reflect-pad backward -------------------------------------------------------------------------------
@figure_memo
def reflect_backward_figure(
    grads: PadGrads, style: Style, *, picked: tuple[str, int, int], cells: np.ndarray
) -> go.Figure:
    """dY of the padded grid (the original region boxed) | how many padded cells send their
    gradient to each input cell (sequential) | dX = reflect_pad_backward(dY).
    picked ("in", y, x): the padded cells it sums (cells (k, 2), padded coordinates), orange;
    picked ("pad", row, col): the input cell it sends its gradient to (cells (1, 2)), red."""
    dy, counts, dx = grads.dy, grads.counts, grads.dx
    left, _, top, _ = grads.pads
    H, W = counts.shape
    panels = [
        Panel(
            dy,
            f"dY of the padded grid {dy.shape[1]} x {dy.shape[0]}",
            "dY",
            "padded column",
            "padded row",
            fmt=".3g",
        ),
        Panel(counts.astype(np.float64), "gradients summed", "count", "x", "y", fmt=".0f", kind=COUNT),
        Panel(dx, "dX = reflect_pad_backward", "dX", "x", "y", fmt=".3g"),
    ]
    space, r, c = picked
    boxes = [(0, top, left, H, W)]
    if space == "in":
        mapped = [(0, int(a), int(b)) for a, b in cells] + [(2, r, c)]
        marks = Marks((1, r, c), mapped, HIGHLIGHT, boxes=boxes)
        title = (
            f"Input cell ({r}, {c}) sums the gradients of {len(cells)} padded cell{'s' * (len(cells) != 1)}"
        )
    else:
        mapped = [(1, int(a), int(b)) for a, b in cells] + [(2, int(a), int(b)) for a, b in cells]
        marks = Marks((0, r, c), mapped, READER, boxes=boxes)
        y, x = cells[0]
        title = f"Padded cell ({r}, {c}) sends its gradient to input cell ({y}, {x})"
    return panels_figure(panels, title, style, marks)


# ---- runtimes --------------------------------------------------------------------------------------------
def runtime_groups(
    groups: Mapping[str, Mapping[str, float]], backend: str, style: Style = NORMAL
) -> go.Figure:
    """Median runtimes (ms) of the ways to compute each operation, one bar chart per operation
    (fastest first, linear axis from 0), stacked: the labels get the full width."""
    groups = {op: found for op, found in groups.items() if found}
    rows = len(groups)
    bar_px = 1.9 * style.font
    heights = [len(found) for found in groups.values()]
    gap_px = 2.6 * style.font + 18  # each chart's title above its bars
    plot_h = bar_px * sum(heights) + gap_px * (rows - 1)
    margin = dict(
        l=20,
        r=48,
        t=int(1.45 * style.title + 1.7 * style.font + 16),
        b=int(style.tick + 1.5 * style.font + 22),
    )
    lay = layout_base(
        f"Median runtimes on {backend} (shorter is faster)", style, plot_h + margin["t"] + margin["b"], margin
    )
    data, annotations, top = [], [], 1.0
    for k, (op, found) in enumerate(groups.items()):
        names = sorted(found, key=found.get)
        bottom = top - bar_px * len(found) / plot_h
        axis = "" if k == 0 else str(k + 1)
        data.append(
            dict(
                type="bar",
                orientation="h",
                x=[found[n] for n in names],
                y=names,
                xaxis=f"x{axis}",
                yaxis=f"y{axis}",
                marker=dict(color="#1f77b4"),
                text=[f"{found[n]:.3f} ms" for n in names],
                textposition="outside",
                textfont=dict(size=style.font),
                cliponaxis=False,
                hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
            )
        )
        top_ms = max(found.values())
        lay[f"xaxis{axis}"] = dict(
            domain=[0, 1],
            anchor=f"y{axis}",
            range=[0, 1.25 * top_ms if top_ms > 0 else 1],
            tickfont=dict(size=style.tick),  # room for the labels after the bars
            title=dict(text="milliseconds" if k == rows - 1 else "", font=dict(size=style.font)),
        )
        lay[f"yaxis{axis}"] = dict(
            domain=[max(0.0, bottom), top],
            anchor=f"x{axis}",
            autorange="reversed",
            automargin=True,
            tickfont=dict(size=style.tick),
        )
        annotations.append(
            dict(
                text=f"<b>{op}</b>",
                x=0,
                y=top,
                xref="paper",
                yref="paper",
                xanchor="left",
                yanchor="bottom",
                showarrow=False,
                yshift=4,
                font=dict(size=style.font),
            )
        )
        top = bottom - gap_px / plot_h
    lay.update(annotations=annotations)
    return go.Figure(dict(data=data, layout=lay))
