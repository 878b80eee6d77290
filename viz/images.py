"""Images in figures: sent as PNG (small on the wire), with their values on hover while they are small."""

from __future__ import annotations

import base64
import hashlib
import io

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from gpuops.cache import Memo

MAX_SHOWN = 640  # larger images are sent to the browser subsampled (the axes keep image coordinates)
VALUES_UP_TO = 128  # images up to this side are sent as numbers, so hover shows each pixel's value


_encoded = Memo("png_data_urls", 16)  # shared by every session: a string, never mutated


def png_data_url(pixels: np.ndarray) -> str:
    """The image as a PNG data URL, remembered for the last few images (encoding 256 x 256 costs
    ~30 ms, and every click on a page would pay it again for the same picture)."""
    pixels = np.ascontiguousarray(pixels)
    key = (hashlib.sha1(pixels.tobytes()).hexdigest(), pixels.shape, pixels.dtype.str)
    return _encoded.get_or_make(key, lambda: _png(pixels))


def _png(pixels: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image_trace(pixels: np.ndarray, x0: int = 0, y0: int = 0) -> go.Image:
    """An RGB uint8 image with axes in pixel coordinates from (y0, x0). Small images go as numbers
    (hover names the pixel's value), larger ones as a compressed PNG, subsampled above MAX_SHOWN.
    A new trace every call: Plotly objects are not safe to share between sessions' threads."""
    if max(pixels.shape[:2]) <= VALUES_UP_TO:
        value = "%{z[0]}" if _grey(pixels) else "(%{z[0]}, %{z[1]}, %{z[2]})"
        return go.Image(
            z=pixels, x0=x0, y0=y0, hovertemplate=f"row %{{y}}, col %{{x}}: {value}<extra></extra>"
        )
    step = max(1, -(-max(pixels.shape[:2]) // MAX_SHOWN))
    shown = pixels[::step, ::step]
    return go.Image(
        source=png_data_url(shown),
        x0=x0 - (step - 1) / 2,
        y0=y0 - (step - 1) / 2,
        dx=step,
        dy=step,
        hovertemplate="row %{y}, col %{x}<extra></extra>",
    )


def _grey(pixels: np.ndarray) -> bool:
    return pixels.ndim == 2 or bool(
        (pixels[..., 0] == pixels[..., 1]).all() and (pixels[..., 1] == pixels[..., 2]).all()
    )


def signed_to_display(planes: np.ndarray, mode: str) -> tuple[np.ndarray, str]:
    """Map conv output to [0, 1] for showing: 'clip' (blurs) or 'abs' (edge filters, sum 0)."""
    if mode == "abs":
        mag = np.abs(planes)
        top = float(np.percentile(mag, 99.5)) if mag.size else 0.0
        return np.clip(mag / top, 0, 1) if top > 0 else mag, "|output| scaled to its 99.5th percentile"
    return np.clip(planes, 0, 1), "output clipped to [0, 1]"
