"""Matrices as heatmaps: values for small ones, block averages for large ones."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.grids import value_grid
from viz.style import HIGHLIGHT, cell_rect, finish

MAX_SIDE = 160  # cells per axis actually drawn


def block_average(mat: np.ndarray, max_side: int = MAX_SIDE) -> tuple[np.ndarray, int, int]:
    """Shrink a matrix by averaging fy x fx blocks so no side exceeds max_side."""
    h, w = mat.shape
    fy, fx = max(1, -(-h // max_side)), max(1, -(-w // max_side))
    if fy == fx == 1:
        return mat, 1, 1
    ph, pw = -(-h // fy) * fy, -(-w // fx) * fx
    padded = np.full((ph, pw), np.nan, dtype=np.float64)
    padded[:h, :w] = mat
    return np.nanmean(padded.reshape(ph // fy, fy, pw // fx, fx), axis=(1, 3)), fy, fx


def matrix_figure(mat: np.ndarray, title: str, x_title: str, y_title: str, *, highlight_col: int | None = None,
                  highlight_row: int | None = None, height: int = 420, colorscale: str = "RdBu") -> go.Figure:  # fmt: skip
    """A matrix; large ones are block-averaged and the title says by how much."""
    shown, fy, fx = block_average(np.asarray(mat, dtype=np.float64))
    note = (
        ""
        if fy == fx == 1
        else f"<br><sub>{mat.shape[0]} x {mat.shape[1]}: each cell averages {fy} x {fx} entries</sub>"
    )
    fig = go.Figure(value_grid(shown, 0, 0, colorscale=colorscale, reverse=False, name="value"))
    fig.data[0].update(zmid=0 if np.nanmin(shown) < 0 < np.nanmax(shown) else None)
    if highlight_col is not None:
        cell_rect(fig, 0, highlight_col // fx, HIGHLIGHT, width=3, h=shown.shape[0], w=1)
    if highlight_row is not None:
        cell_rect(fig, highlight_row // fy, 0, HIGHLIGHT, width=3, h=1, w=shown.shape[1])
    finish(fig, f"{title} ({mat.shape[0]} x {mat.shape[1]}){note}", x_title, y_title, height)
    fig.update_yaxes(autorange="reversed", dtick=1 if shown.shape[0] <= 24 else None)
    fig.update_xaxes(dtick=1 if shown.shape[1] <= 24 else None)
    return fig
