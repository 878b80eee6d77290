"""Figures built by many sessions at once: Streamlit runs each session's script in its own thread,
and Plotly objects are not safe to share between threads (a cached trace used by two figures at
once broke with "Invalid property ... for Scatter"). Every figure must be built from fresh objects."""

from __future__ import annotations

import threading

import numpy as np

from tests.support.helpers import require

require("plotly", "the figures")
from viz import conv2d as viz_conv2d  # noqa: E402
from viz.images import image_trace  # noqa: E402
from viz.style import NORMAL  # noqa: E402


def test_sessions_building_the_same_image_figures_at_once_all_succeed(rng):
    pixels = (rng.random((256, 256, 3)) * 255).astype(np.uint8)
    small = pixels[:64, :64]
    errors: list[str] = []
    start = threading.Barrier(16)

    def session(i: int) -> None:
        start.wait()  # all at once, as 16 students clicking together
        try:
            for j in range(30):
                spec = viz_conv2d.output_figure(
                    pixels, NORMAL, "Output", viz_conv2d.ImageMarks(picked=(j, i))
                ).to_plotly_json()
                assert spec["data"][0]["type"] == "image" and spec["data"][0]["source"].startswith("data:")
                assert image_trace(small).z is not None  # small images carry their values
        except Exception as exc:  # collected, so every thread's failure is reported
            errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")

    threads = [threading.Thread(target=session, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
