"""What the Home page computes, kept out of the page script: each operation run on a small copy
of the image, drawn as the cards' thumbnails (by page file), and the Benchmarks card's bars from
the committed results."""

from __future__ import annotations

import numpy as np
import streamlit as st

import gpuops
from bench import reports
from gpuops import filters, lenet
from gpuops.maps.channels import ChannelLayout
from ui.images import to_display
from viz import home


@st.cache_data(max_entries=8, show_spinner=False)
def thumbnails(key: str, _planes: np.ndarray) -> dict[str, np.ndarray]:
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
    tent = np.outer([0.5, 1.0, 0.5], [0.5, 1.0, 0.5]).astype(np.float32)  # linear interpolation
    upsampled = gpuops.conv_transpose2d(
        small, np.broadcast_to(tent, (c, 1, 3, 3)).copy(), stride=2, padding=1, output_padding=1, groups=c
    )
    pooled = gpuops.max_pool2d(small, 4, ceil_mode=True)
    digit = lenet.digit_from_planes(small) / 16.0
    return {
        "direct": home.rgb_thumbnail(to_display(conv)),
        "im2col": home.identity_thumbnail(cell_ids.astype(np.int64)),
        "unfold": home.rgb_thumbnail(to_display(folded)),
        "reflect": home.padded_thumbnail(to_display(gpuops.reflect_pad(small, pad)), pad),
        "backward": home.rgb_thumbnail(to_display(upsampled)),
        "channels": home.identity_thumbnail(ChannelLayout(6, 16, 2, 5).connections()),
        "pool": home.rgb_thumbnail(to_display(pooled)),
        "lenet": home.rgb_thumbnail(to_display(np.asarray(digit, np.float32)[None])),
        "benchmarks": home.bars_thumbnail(conv2d_speeds()),
    }


@st.cache_data(max_entries=1, show_spinner=False)
def conv2d_speeds() -> np.ndarray:
    """Our conv2d kernels' speed relative to cuDNN on the first shape of the newest committed GPU
    run (peer time / our time), for the Benchmarks card; empty without such a run."""
    lease = reports.default_lease(reports.group_leases(reports.load_runs()))
    if lease is None or not lease.first.gpu:
        return np.zeros(0)
    rows = [r for r in reports.compare([lease.first], "conv2d") if reports.is_ours(r.impl)]
    shape = rows[0].shape if rows else None
    peer = next((p for p in reports.peers([lease.first], "conv2d") if "cudnn" in p), None)
    speeds = [r.vs.get(peer, (None,))[0] for r in rows if r.shape == shape]
    return np.array([v for v in speeds if v is not None])
