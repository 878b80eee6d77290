"""The load test at CI size: 2 sessions for 4 s, no errors, no state shared (tests/load_test.py
runs it at class size)."""

import pytest

pytestmark = pytest.mark.e2e


def test_two_sessions_keep_their_own_state_without_errors(browser):
    from tests.load_test import run_load

    report = run_load(sessions=2, seconds=4, browser=browser)
    print(report)
    assert report["errors"] == 0
    assert report["state_mismatches"] == 0
    assert report["reruns"] >= 2, "every session was served at least once"
    # memory levels off: the last sample is not far above the peak seen after warm-up
    assert report["rss_mib_during_last"] <= report["rss_mib_during_max"] * 1.05


def test_the_load_client_uploads_as_a_browser_does(server):
    """tests/st_client.py's upload (used by bench/hostile_load.py): URL over the websocket, PUT
    with the XSRF token, rerun; the page then works on the uploaded image."""
    import io

    import numpy as np
    from PIL import Image

    from tests.st_client import StClient

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(5).integers(0, 255, (300, 500, 3), dtype=np.uint8)).save(buf, "PNG")
    with StClient(server, "") as warm:  # a fresh server learns its pages on its first run
        warm.wait_idle()
    with StClient(server, "direct", "cap=256") as c:
        c.wait_idle()
        c.set("Image source", "Upload")
        label = next(x for x in c.labels() if x.startswith("Upload an image"))
        c.upload(label, "noise.png", buf.getvalue(), "image/png")
        assert any("downscaled from 500 x 300 to 256 x 154" in t for t in c.texts()), c.texts()
        assert not c.errors
