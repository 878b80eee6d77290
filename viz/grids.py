"""Cell-level pictures: receptive fields, thread/block tiles, labelled small grids."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.images import image_trace
from viz.style import HIGHLIGHT, MAX_LABELLED, PADDING_COLOUR, SECOND, cell_rect, finish, rect_shape


def _region(lo: int, hi: int, margin: int, floor: int, ceil: int) -> tuple[int, int]:
    return max(floor, lo - margin), min(ceil, hi + margin)


def value_grid(values: np.ndarray, row0: int, col0: int, *, text: np.ndarray | None = None,
               colorscale: str = "Greys", reverse: bool = True, name: str = "value") -> go.Heatmap:  # fmt: skip
    """A heatmap whose cell centres sit at integer (row, col) from (row0, col0)."""
    h, w = values.shape
    labelled = max(h, w) <= MAX_LABELLED
    if text is None and labelled:
        text = np.vectorize(lambda v: "" if np.isnan(v) else f"{v:.2g}")(values)
    return go.Heatmap(
        z=values, x=np.arange(col0, col0 + w), y=np.arange(row0, row0 + h), colorscale=colorscale,
        reversescale=reverse, showscale=False, text=text if labelled else None,
        texttemplate="%{text}" if labelled else None, hovertemplate=f"row %{{y}}, col %{{x}}<br>{name} %{{z:.4g}}<extra></extra>",
    )  # fmt: skip


def receptive_field_figure(plane: np.ndarray, padded_value: np.ndarray, rf_rows: np.ndarray, rf_cols: np.ndarray,
                           weights: np.ndarray, pads: tuple[int, int], title: str) -> go.Figure:  # fmt: skip
    """The padded input around one output's receptive field, its taps outlined in orange.

    plane: (H, W) the input channel shown; padded_value: the same plane already padded by
    pads=(top, left) (zeros or reflected values); rf_rows/cols: (KH, KW) input coordinates.
    """
    top, left = pads
    Hp, Wp = padded_value.shape
    H, W = plane.shape
    r0, r1 = _region(int(rf_rows.min()), int(rf_rows.max()), 2, -top, Hp - top - 1)
    c0, c1 = _region(int(rf_cols.min()), int(rf_cols.max()), 2, -left, Wp - left - 1)
    region = padded_value[r0 + top : r1 + top + 1, c0 + left : c1 + left + 1]
    fig = go.Figure(value_grid(region, r0, c0))
    # shade the padding cells so they read as "not part of the image": one translucent layer
    rr, cc = np.meshgrid(np.arange(r0, r1 + 1), np.arange(c0, c1 + 1), indexing="ij")
    outside = ~((rr >= 0) & (rr < H) & (cc >= 0) & (cc < W))
    if outside.any():
        fig.add_trace(go.Heatmap(z=np.where(outside, 1.0, np.nan), x=np.arange(c0, c1 + 1), y=np.arange(r0, r1 + 1),
                                 colorscale=[[0, PADDING_COLOUR], [1, PADDING_COLOUR]], showscale=False,
                                 hoverinfo="skip"))  # fmt: skip
    fig.data[0].update(zmin=0, zmax=max(1.0, float(np.nanmax(region)) if region.size else 1.0))
    fig.add_trace(go.Scatter(
        x=rf_cols.ravel(), y=rf_rows.ravel(), mode="markers", name="taps",
        marker=dict(symbol="square-open", size=max(8, min(34, 400 // max(r1 - r0 + 1, c1 - c0 + 1))),
                    color=HIGHLIGHT, line=dict(width=3)),
        customdata=weights.ravel(), hovertemplate="tap reads row %{y}, col %{x}<br>weight %{customdata:.3g}<extra></extra>",
    ))  # fmt: skip
    finish(fig, title, "input column (negative / beyond the edge = padding)", "input row", 480)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_layout(showlegend=False)
    return fig


def _crop_box(r0: int, r1: int, c0: int, c1: int, margin: int, H: int, W: int) -> tuple[int, int, int, int]:
    """A window of the picture around rows r0..r1-1, cols c0..c1-1 plus a margin, clipped."""
    return max(0, r0 - margin), min(H, r1 + margin), max(0, c0 - margin), min(W, c1 + margin)


def grid_lines(rows: range, cols: range, row_span: tuple[int, int], col_span: tuple[int, int]) -> go.Scatter:
    """Tile boundaries as ONE line trace (None breaks the line): far cheaper than a shape per line."""
    xs: list = []
    ys: list = []
    for y in rows:
        xs += [col_span[0] - 0.5, col_span[1] - 0.5, None]
        ys += [y - 0.5, y - 0.5, None]
    for x in cols:
        xs += [x - 0.5, x - 0.5, None]
        ys += [row_span[0] - 0.5, row_span[1] - 0.5, None]
    return go.Scatter(
        x=xs, y=ys, mode="lines", line=dict(color=SECOND, width=2), hoverinfo="skip", showlegend=False
    )


def thread_tile_figure(out_pixels: np.ndarray, tile: tuple[int, int], oh: int, ow: int, block_idx: tuple,
                       thread_idx: tuple, kernel: str) -> go.Figure:  # fmt: skip
    """The output around one pixel, cut into thread-block tiles; its tile and thread highlighted.

    Shows the pixel's tile and one tile around it, so single pixels stay visible on big images.
    """
    th, tw = tile
    H, W = out_pixels.shape[:2]
    ty0, tx0 = (oh // th) * th, (ow // tw) * tw
    y0, y1, x0, x1 = _crop_box(ty0, ty0 + th, tx0, tx0 + tw, max(th, tw), H, W)
    fig = go.Figure(image_trace(out_pixels[y0:y1, x0:x1], x0, y0))
    fig.add_trace(grid_lines(range(-(-y0 // th) * th, y1 + 1, th), range(-(-x0 // tw) * tw, x1 + 1, tw),
                             (y0, y1), (x0, x1)))  # fmt: skip
    tile_box = rect_shape(
        ty0, tx0, HIGHLIGHT, 4, h=min(th, H - ty0), w=min(tw, W - tx0), fill="rgba(255,127,14,0.2)"
    )
    fig.update_layout(
        shapes=[tile_box, rect_shape(oh, ow, "red", 3, fill="rgba(255,0,0,0.5)")], showlegend=False
    )
    title = f"{kernel}<br><sub>blockIdx = {block_idx}, threadIdx = {thread_idx}</sub>"
    finish(fig, title, "output column", "output row", 480)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    return fig


def halo_figure(in_pixels: np.ndarray, pads: tuple[int, int], halo_rows: tuple[int, int], halo_cols: tuple[int, int],
                field_rows: np.ndarray, field_cols: np.ndarray, title: str) -> go.Figure:  # fmt: skip
    """The padded input around a block's shared-memory tile (tile + halo) and one thread's taps."""
    top, left = pads
    (r0, r1), (c0, c1) = halo_rows, halo_cols
    Hp, Wp = in_pixels.shape[:2]
    margin = max(4, (r1 - r0) // 3)
    y0, y1, x0, x1 = _crop_box(r0 + top, r1 + top, c0 + left, c1 + left, margin, Hp, Wp)
    fig = go.Figure(image_trace(in_pixels[y0:y1, x0:x1], x0 - left, y0 - top))
    cell_rect(fig, r0, c0, SECOND, width=4, h=r1 - r0, w=c1 - c0, fill="rgba(23,190,207,0.15)")
    cell_rect(fig, 0, 0, "black", width=2, dash="dot", h=Hp - 2 * top, w=Wp - 2 * left)
    fig.add_trace(go.Scatter(x=field_cols.ravel(), y=field_rows.ravel(), mode="markers",
                             marker=dict(symbol="square-open", color=HIGHLIGHT, size=10, line=dict(width=3)),
                             hovertemplate="tap row %{y}, col %{x}<extra></extra>", showlegend=False))  # fmt: skip
    finish(fig, title, "input column (dotted line: image edge)", "input row", 480)
    fig.update_xaxes(range=[x0 - left - 0.5, x1 - left - 0.5], autorange=False)
    fig.update_yaxes(
        range=[y1 - top - 0.5, y0 - top - 0.5], autorange=False, scaleanchor="x", constrain="domain"
    )
    return fig


def labelled_source_grid(rows: np.ndarray, cols: np.ndarray, H: int, W: int, pads: tuple[int, int, int, int],
                         title: str) -> go.Figure:  # fmt: skip
    """Each padded cell labelled with the input cell (y, x) it copies, coloured by that source cell."""
    left, _, top, _ = pads
    source_id = rows * W + cols
    text = np.vectorize(lambda r, c: f"{r},{c}")(rows, cols)
    Hp, Wp = rows.shape
    fig = go.Figure(go.Heatmap(
        z=source_id, x=np.arange(-left, Wp - left), y=np.arange(-top, Hp - top), text=text,
        texttemplate="%{text}", colorscale="Turbo", showscale=False, zmin=0, zmax=max(1, H * W - 1),
        hovertemplate="padded cell row %{y}, col %{x}<br>copies input (%{text})<extra></extra>",
    ))  # fmt: skip
    cell_rect(fig, 0, 0, "black", width=4, h=H, w=W)
    finish(fig, title, "column (input coordinates; outside the black box = padding)", "row", 120 + 48 * Hp)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain", dtick=1)
    fig.update_xaxes(dtick=1)
    return fig


def count_map_figure(counts: np.ndarray, title: str) -> go.Figure:
    """How many patches cover each pixel, with a colour bar (values written when small)."""
    fig = go.Figure(value_grid(counts.astype(float), 0, 0, colorscale="Viridis", reverse=False, name="count"))
    fig.data[0].update(showscale=True, colorbar=dict(title="patches"))
    finish(fig, title, "column", "row", 420)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    return fig
