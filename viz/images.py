"""Images as figures: input/output side by side, the padded input with its original outlined."""

from __future__ import annotations

import base64
import io

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from viz.style import SECOND, cell_rect, finish

MAX_SHOWN = 640  # larger images are sent to the browser subsampled (the axes keep image coordinates)


def png_data_url(pixels: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels)).save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image_trace(pixels: np.ndarray, x0: int = 0, y0: int = 0) -> go.Image:
    """An image as a compressed PNG (fast to send), subsampled above MAX_SHOWN pixels a side."""
    step = max(1, -(-max(pixels.shape[:2]) // MAX_SHOWN))
    shown = pixels[::step, ::step]
    return go.Image(source=png_data_url(shown), x0=x0 - (step - 1) / 2, y0=y0 - (step - 1) / 2, dx=step, dy=step,
                    hovertemplate="row %{y}, col %{x}<extra></extra>")  # fmt: skip


def image_figure(pixels: np.ndarray, title: str, *, x0: int = 0, y0: int = 0, height: int = 420,
                 caption_axis: str = "input") -> go.Figure:  # fmt: skip
    """An RGB uint8 image, with axes in pixel coordinates starting at (y0, x0)."""
    fig = go.Figure(image_trace(pixels, x0, y0))
    finish(fig, title, f"{caption_axis} column", f"{caption_axis} row", height)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain")
    return fig


def padded_figure(
    pixels: np.ndarray, pads: tuple[int, int, int, int], title: str, height: int = 460
) -> go.Figure:
    """A padded image with the original region outlined; axes in input coordinates."""
    left, _, top, _ = pads
    fig = image_figure(pixels, title, x0=-left, y0=-top, height=height)
    h, w = pixels.shape[0] - pads[2] - pads[3], pixels.shape[1] - pads[0] - pads[1]
    cell_rect(fig, 0, 0, SECOND, width=3, h=h, w=w)
    fig.add_annotation(x=0, y=-top, text="original image (cyan box)", showarrow=False, yshift=12, xanchor="left",
                       font=dict(color=SECOND))  # fmt: skip
    return fig


def signed_to_display(planes: np.ndarray, mode: str) -> tuple[np.ndarray, str]:
    """Map conv output to [0, 1] for showing: 'clip' (blurs) or 'abs' (edge filters, sum 0)."""
    if mode == "abs":
        mag = np.abs(planes)
        top = float(np.percentile(mag, 99.5)) if mag.size else 0.0
        return np.clip(mag / top, 0, 1) if top > 0 else mag, "|output| scaled to its 99.5th percentile"
    return np.clip(planes, 0, 1), "output clipped to [0, 1]"
