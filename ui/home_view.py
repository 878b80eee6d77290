"""What the Home page computes, kept out of the page script: each operation run on a small copy
of the image, drawn as the cards' thumbnails."""

from __future__ import annotations

import numpy as np
import streamlit as st

import gpuops
from gpuops import filters
from ui.images import to_display
from viz import home


@st.cache_data(max_entries=8, show_spinner=False)
def thumbnails(key: str, _planes: np.ndarray) -> list[np.ndarray]:
    """Each operation run on a small copy of the image (at most 96 px a side): quick, and cached
    per image (key), so the Home page costs nothing after its first visit."""
    small = home.small_copy(_planes)
    c = small.shape[0]
    edges, groups = filters.channel_weights(filters.preset_kernel("Laplacian edge", 3), c, mix=False)
    conv = np.abs(gpuops.conv2d(small, edges, padding=1, groups=groups)) * 4
    cell_ids = (
        gpuops.unfold(np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4), 3, padding=1) - 1
    )  # padding: -1
    k, stride = home.fold_window(small.shape)
    covered = home.covered_crop(small, k, stride)
    folded = gpuops.fold(gpuops.unfold(covered, k, stride=stride), covered.shape[1:], k, stride=stride) / 2
    pad = min(small.shape[1:]) // 3
    return [
        home.rgb_thumbnail(to_display(conv)),
        home.identity_thumbnail(cell_ids.astype(np.int64)),
        home.rgb_thumbnail(to_display(folded)),
        home.padded_thumbnail(to_display(gpuops.reflect_pad(small, pad)), pad),
    ]
