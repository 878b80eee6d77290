"""Browser tests: the real server in headless Chromium (Debian's), driven by Playwright.

Screenshots go to tests/artifacts/. In CI a missing browser or Playwright is a failure.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import IN_CI, require

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict | None = None) -> subprocess.Popen:
    """The app as a student's browser meets it (CPU backend unless the caller says otherwise)."""
    cmd = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "CONV_EXPLORER_BACKEND": "numpy", **(env or {})},
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the Streamlit server did not answer within 60 s")


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = start_server(port)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if IN_CI:
            raise RuntimeError("CI must install Debian's chromium for the browser tests")
        pytest.skip("chromium is not installed here (apt-get install chromium)")
    return path


def warm_up(browser, root_url: str) -> None:
    """Open the main page once. A fresh server learns its pages (st.navigation) on its first run;
    before that, a deep link such as /direct shows Streamlit's "Page not found" dialog."""
    page = browser.new_page()
    page.goto(root_url)
    wait_idle(page)
    page.close()


@pytest.fixture(scope="module")
def browser(server):
    sync_api = require("playwright.sync_api", "browser tests")
    exe = chromium_path()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        warm_up(b, server + "/")
        yield b
        b.close()


def wait_idle(page, timeout: float = 90) -> None:
    """Wait until Streamlit has finished the current run (no 'running' status widget)."""
    page.wait_for_selector('[data-testid="stAppViewContainer"]', timeout=timeout * 1000)
    time.sleep(0.8)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if page.locator('[data-testid="stStatusWidget"]').count() == 0:
            time.sleep(0.5)
            if page.locator('[data-testid="stStatusWidget"]').count() == 0:
                # the script is done; let the browser fetch the widgets' code and draw the charts
                page.wait_for_load_state("networkidle", timeout=timeout * 1000)
                if page.locator('[data-testid="stSkeleton"]').count():
                    page.locator('[data-testid="stSkeleton"]').first.wait_for(state="detached", timeout=30000)
                return
        time.sleep(0.3)
    raise AssertionError("the page did not finish running")


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]'
    ).all_inner_texts()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.mark.parametrize("path", ["", "direct", "im2col", "unfold", "reflect", "benchmarks"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_every_page_opens(server, browser, path, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(f"{server}/{path}")
    wait_idle(page)
    no_exception(page)
    assert page.locator("h1").count() >= 1
    if path not in ("", "benchmarks"):
        page.locator(".js-plotly-plot").first.wait_for(timeout=30000)  # the figures are drawn
        time.sleep(1)
    shot(page, f"{path or 'home'}_{size[0]}x{size[1]}")
    page.close()


def _png(w: int, h: int) -> bytes:
    from PIL import Image

    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), np.full_like(x, 90)], -1).astype(
        np.uint8
    )
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG")
    return buf.getvalue()


def upload_file(page, name: str, data: bytes, wait=None) -> None:
    """Choose "Upload" in the sidebar and send a file through the real file input, as a user does."""
    wait = wait or wait_idle
    wait(page)
    page.get_by_text("Upload", exact=True).click()
    wait(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(
        files=[{"name": name, "mimeType": "image/png", "buffer": data}]
    )
    wait(page)
    no_exception(page)


def test_upload_then_move_a_slider_changes_the_output(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{server}/direct")
    upload_file(page, "gradient.png", _png(120, 80))
    page.get_by_text("your upload: 120 x 80 px").wait_for(timeout=30000)
    page.get_by_text("Output: 120 x 80").first.wait_for(timeout=30000)
    shot(page, "direct_after_upload")
    # move the stride slider one step with the keyboard, as a user would
    slider = page.get_by_role("slider", name="Stride S")
    slider.focus()
    slider.press("ArrowRight")
    wait_idle(page)
    no_exception(page)
    page.get_by_text("Output: 60 x 40").first.wait_for(timeout=30000)
    shot(page, "direct_stride_2")
    page.close()


def test_bad_upload_shows_a_message_and_the_page_works(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/direct")
    upload_file(page, "notes.png", b"this is text, not a PNG")
    page.get_by_text("not an image Conv Explorer can read").wait_for(timeout=30000)
    page.get_by_text("Output: 256 x 256").first.wait_for(timeout=30000)  # the sample is used meanwhile
    shot(page, "direct_bad_upload")
    page.close()


def test_animation_plays_in_the_browser(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{server}/im2col")
    wait_idle(page)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    label = chart.locator("text.slider-label", has_text="column l =")  # the slider's current-value label
    assert "column l = 0" in label.text_content()
    page.locator("div.stDialog").wait_for(state="detached", timeout=30000)
    for _ in range(3):  # a real mouse click on the SVG button (its group takes no pointer events itself)
        box = chart.locator(".updatemenu-button", has_text="Play").first.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        time.sleep(2.5)
        if "column l = 0" not in label.text_content():
            break
    assert "column l = 0" not in label.text_content(), "the frame advanced"
    shot(page, "im2col_animation_playing")
    page.close()
