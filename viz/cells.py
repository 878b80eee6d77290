"""Cell-level building blocks every operation's figures share: value grids with labels that fit,
identity grids (one colour per input cell, value on top), and picked-cell outlines.

Arrays in, Plotly traces and shapes out; no Streamlit, no kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from viz.style import NORMAL, SIGNED, Style, cell_colours, label_size, scale_for

NOMINAL_WIDTH = 560  # px a half-width figure gets at 1366 x 768 with the sidebar open


def _labels(values: np.ndarray, fmt: str) -> np.ndarray:
    return np.vectorize(lambda v: "" if not np.isfinite(v) else format(v, fmt))(values.astype(np.float64))


@dataclass(frozen=True)
class GridLook:
    """How a grid's cells are drawn: the hover's word for a value, the labels' number format, the
    width (px) the grid is drawn across (labels are sized to fit it), the number of colours of an
    identity grid (one per input cell; None: as many as its ids), the kind of data a value grid
    shows (viz.style.scale_for: image, signed or count) and a colour scale shared with another
    grid (None: the kind's scale for these values)."""

    name: str = "value"
    fmt: str = ".3g"
    width_px: int = NOMINAL_WIDTH
    n_cells: int | None = None
    scale: dict | None = None
    kind: str = SIGNED


GRID = GridLook()


def value_grid(
    values: np.ndarray, style: Style = NORMAL, *, origin: tuple[int, int] = (0, 0), look: GridLook = GRID
) -> go.Heatmap:
    """A heatmap whose cell centres sit at integer (row, col) from origin (row0, col0), coloured by
    the colour policy for the kind of data it shows (look.kind, viz.style.scale_for), with each
    value written in its cell when the cell is large enough to read it."""
    (row0, col0), fmt = origin, look.fmt
    h, w = values.shape
    size = label_size(
        w,
        look.width_px,
        style,
        chars=len(format(float(np.nanmax(np.abs(values))) if values.size else 0, fmt)),
    )
    labelled = size is not None and h * w <= 2500
    return go.Heatmap(
        z=values,
        x=np.arange(col0, col0 + w),
        y=np.arange(row0, row0 + h),
        text=_labels(values, fmt) if labelled else None,
        texttemplate="%{text}" if labelled else None,
        textfont=dict(size=size) if labelled else None,
        hovertemplate=f"row %{{y}}, col %{{x}}<br>{look.name} %{{z:.4g}}<extra></extra>",
        showscale=False,
        **(look.scale or scale_for(look.kind, values)),
    )


def identity_grid(
    cell_ids: np.ndarray,
    values: np.ndarray,
    style: Style = NORMAL,
    *,
    origin: tuple[int, int] = (0, 0),
    look: GridLook = GRID,
) -> go.Heatmap:
    """Cells coloured by WHICH input cell they hold (cell_ids, -1 = padding, drawn white), with
    the value written on top: a value can be followed from the input into X_unroll, a patch or
    the padded grid by its colour."""
    (row0, col0), n_cells = origin, look.n_cells
    n = int(n_cells if n_cells is not None else (cell_ids.max() + 1 if cell_ids.size else 1))
    colours = ["#ffffff", *cell_colours(max(1, n))]
    steps = len(colours)
    scale = []
    for i, c in enumerate(colours):  # a stepped scale: id k (shifted by 1 for padding) -> colour k
        scale += [[i / steps, c], [(i + 1) / steps, c]]
    h, w = cell_ids.shape
    size = label_size(w, look.width_px, style)
    labelled = size is not None
    return go.Heatmap(
        z=cell_ids + 1,
        zmin=0,
        zmax=steps,
        x=np.arange(col0, col0 + w),
        y=np.arange(row0, row0 + h),
        colorscale=scale,
        showscale=False,
        text=_labels(values, look.fmt) if labelled else None,
        texttemplate="%{text}" if labelled else None,
        textfont=dict(size=size, color="#111111") if labelled else None,
        customdata=cell_ids,
        hovertemplate="row %{y}, col %{x}<br>input cell %{customdata}<br>value %{text}<extra></extra>",
        xgap=1,
        ygap=1,
    )
