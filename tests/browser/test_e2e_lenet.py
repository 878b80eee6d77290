"""The LeNet page in a real browser: Train runs its chunks to the end of an epoch and the metrics,
curves and filters follow; a test digit and an uploaded digit get ten probabilities; clicking a
feature-map cell outlines what it reads in the previous stage and in the input. Screenshots at
1366 x 768 and 1920 x 1080 (tests/artifacts/lenet_*.png)."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest

from tests.support import browser as web
from tests.support.apptest import typed_array

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
HIGHLIGHT, READER = "#ff7f0e", "#d62728"


def metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label)
    return box.locator('[data-testid="stMetricValue"]').inner_text().strip()


def outlines(page, chart: str, colour: str) -> set[tuple[str, float, float]]:
    """(panel, top row, left col) of the server-drawn outlines in `colour` on a chart."""
    return {
        (s["xref"], s["y0"] + 0.5, s["x0"] + 0.5)
        for s in web.shapes_of(page, chart)
        if s.get("type") == "rect"
        and s.get("line", {}).get("color") == colour
        and s.get("name") != "hover-hl"
    }


def prediction(page) -> str:
    """The probabilities figure's title: "Prediction: d (label l)"."""
    text = page.inner_text("body")
    return text[text.index("Prediction:") :].split("\n")[0]


def digit_png() -> bytes:
    """A hand-drawn-looking 1: a dark slanted stroke on white paper."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (120, 160), "white")
    ImageDraw.Draw(im).line([(70, 15), (55, 145)], fill="black", width=14)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def test_train_predict_upload_and_pick(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(f"{server}/lenet?lenet_epochs=1")
    web.wait_idle(page)
    web.no_exception(page)
    assert metric(page, "Step") == "0"
    web.shot(page, "lenet_1366x768_start")
    page.get_by_role("button", name="Train").first.click()
    deadline = time.time() + 120
    while time.time() < deadline and metric(page, "Epoch") != "1":
        time.sleep(0.5)
    web.wait_idle(page)
    web.no_exception(page)
    assert metric(page, "Epoch") == "1"
    assert metric(page, "Test accuracy").endswith("%")
    assert float(metric(page, "Test accuracy").rstrip("%")) > 25  # one epoch: well above chance (10%)
    # a test digit: ten probabilities, the prediction in the title
    title = page.locator(".st-key-pick-lenet_probs, [class*='lenet_probs']").count()
    assert "Prediction:" in page.inner_text("body"), title
    web.shot(page, "lenet_1366x768_trained")
    # click conv2 map 5, cell (2, 1): pool1's 6 maps outlined at rows 2-6, columns 1-5
    web.click_cell(page, "lenet_conv2", 2, 1, panel="x6")
    web.no_exception(page)
    assert ("x6", 2.0, 1.0) in outlines(page, "lenet_conv2", HIGHLIGHT)
    read = outlines(page, "lenet_pool1", READER)
    assert {p for p, _, _ in read} == {"x", "x2", "x3", "x4", "x5", "x6"}
    assert {(r, c) for _, r, c in read} == {(2.0, 1.0)}
    assert "conv2 map 5, cell (2, 1)" in page.inner_text("body")
    assert "lenet_pick=convb" in web.current_url(page)
    # hover pool2 map 3, cell (1, 0): conv2's map 3 outlines the 2 x 2 window it pools, no rerun
    web.hover_cell(page, "lenet_pool2", 1, 0, panel="x4")
    deadline = time.time() + 5
    while time.time() < deadline and not web.highlighted_cells(page, "lenet_conv2"):
        time.sleep(0.1)
    hovered = {
        (s["xref"], (s["y0"] + s["y1"]) / 2, (s["x0"] + s["x1"]) / 2)
        for s in web.shapes_of(page, "lenet_conv2")
        if s.get("name") == "hover-hl"
    }
    assert hovered == {("x4", float(r), float(c)) for r in (2, 3) for c in (0, 1)}
    assert page.locator(web.RUNNING).count() == 0, "no rerun"
    # the trained weights, downloaded and loaded in another session (a student's): the same prediction
    predicted = prediction(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Weights (.npz, PyTorch's names)").click()
    weights = download.value.path().read_bytes()
    with web.reopened(browser, f"{server}/lenet") as other:
        other.get_by_text("Load weights (.npz)").click()
        web.wait_idle(other)
        other.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
            files=[{"name": "teacher.npz", "mimeType": "application/octet-stream", "buffer": weights}]
        )
        web.wait_idle(other)
        web.no_exception(other)
        assert "Loaded teacher.npz" in other.inner_text("body")
        assert prediction(other) == predicted
    # a digit drawn by clicks: a vertical stroke in column 4
    page.get_by_text("draw one", exact=True).click()
    web.wait_idle(page)
    for row in range(1, 7):
        web.click_cell(page, "lenet_draw", row, 4)
    web.no_exception(page)
    ink = typed_array(
        page.evaluate(
            """() => [...document.querySelectorAll('.st-key-pick-lenet_draw .js-plotly-plot')]
                       .find((g) => g.layout).data[0].z"""
        ),
        float,
    )
    assert [(int(r), int(c)) for r, c in np.argwhere(ink > 0)] == [(r, 4) for r in range(1, 7)]
    assert "Prediction:" in page.inner_text("body")
    web.shot(page, "lenet_1366x768_drawn")
    # an uploaded digit through the same network
    page.get_by_text("the sidebar image", exact=True).click()
    web.wait_idle(page)
    web.upload_file(page, "one.png", digit_png())
    web.no_exception(page)
    body = page.inner_text("body")
    assert "Prediction:" in body and "(label" not in body.split("Prediction:")[1][:20]
    web.shot(page, "lenet_1366x768_upload")
    page.close()


def test_projector_screenshot(server, browser):
    with web.reopened(browser, f"{server}/lenet?lenet_pick=poola:17,3&pres=1", web.PROJECTOR) as page:
        assert ("x3", 1.0, 3.0) in outlines(page, "lenet_pool1", HIGHLIGHT)  # map 2 (H 8): 17 = 2*8 + 1
        assert np.isclose(len(outlines(page, "lenet_conv1", READER)), 1)
        web.shot(page, "lenet_1920x1080")
