"""The classroom load test at CI size, over the websocket (tests/support/st_client.py, as
bench/hostile_load.py drives a server): two sessions, each with an image of its own uploaded as the
browser uploads it, move the stride at the same moments for a few seconds. Every rerun ends without
an error, each session keeps its own image and settings, and the server's memory levels off.
(bench/browser_load.py runs the same scenario in 30 headless Chromium pages; through a browser here it
took 78 s of a 2-core machine, almost all of it Chromium drawing the page.)"""

from __future__ import annotations

import io
import threading
import time

import numpy as np
import pytest
from PIL import Image

from tests.support.helpers import require

pytestmark = pytest.mark.usefixtures("numpy_backend")


def png(w: int, h: int, seed: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 255, (h, w, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def test_two_sessions_keep_their_own_state_without_errors():
    require("streamlit", "the load test")
    from bench.browser_load import rss_mib
    from tests.support.browser import _free_port, start_server
    from tests.support.st_client import StClient

    port = _free_port()
    server = start_server(port)
    url = f"http://127.0.0.1:{port}"
    try:
        with StClient(url, "") as warm:  # a fresh server learns its pages on its first run
            warm.wait_idle()
        sizes = [(60, 40), (62, 41)]  # every student's image has its own size
        clients = [StClient(url, "direct", timeout=120) for _ in sizes]
        try:
            for i, (c, (w, h)) in enumerate(zip(clients, sizes, strict=True)):
                c.wait_idle()
                c.set("Image source", "Upload")
                label = next(x for x in c.labels() if x.startswith("Upload an image"))
                c.upload(label, f"s{i}.png", png(w, h, i), "image/png")
                assert any(f"your upload: {w} x {h} px" in t for t in c.texts()), c.texts()
            rss, mismatches, reruns = [], 0, 0
            end = time.time() + 4
            stride = 1
            while time.time() < end:
                stride = 3 - stride  # 1 <-> 2, everyone at about the same time
                moves = [threading.Thread(target=c.set, args=("Stride S", stride)) for c in clients]
                for t in moves:
                    t.start()
                for t in moves:
                    t.join(120)
                for c, (w, h) in zip(clients, sizes, strict=True):
                    text = c.text()
                    ow, oh = -(-w // stride), -(-h // stride)  # 3 x 3, padding 1: ceil(size / stride)
                    mismatches += (
                        f"your upload: {w} x {h} px" not in text or f"**Output: {ow} x {oh}**" not in text
                    )
                    reruns += 1
                rss.append(rss_mib(server.pid))
            errors = [e for c in clients for e in c.errors]
        finally:
            for c in clients:
                c.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert errors == []
    assert mismatches == 0, "a session showed another's image or settings"
    assert reruns >= 4, "every session was served more than once"
    assert rss[-1] <= max(rss) * 1.05  # memory levels off: the last sample is not far above the peak


def test_the_load_client_uploads_as_a_browser_does(server):
    """tests/support/st_client.py's upload (used by bench/hostile_load.py): URL over the websocket, PUT
    with the XSRF token, rerun; the page then works on the uploaded image."""
    from tests.support.st_client import StClient

    data = png(500, 300, 5)
    with StClient(server, "") as warm:  # a fresh server learns its pages on its first run
        warm.wait_idle()
    with StClient(server, "direct", "cap=256") as c:
        c.wait_idle()
        c.set("Image source", "Upload")
        label = next(x for x in c.labels() if x.startswith("Upload an image"))
        c.upload(label, "noise.png", data, "image/png")
        assert any("downscaled from 500 x 300 to 256 x 154" in t for t in c.texts()), c.texts()
        assert not c.errors
