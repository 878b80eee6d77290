"""Browser-test harness shared by the e2e tests and the load tests: the real server in headless
Chromium (Debian's), driven by Playwright. Screenshots go to tests/artifacts/.

In CI a missing browser or Playwright is a failure; elsewhere the tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import IN_CI, require

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict | None = None, app: Path | None = None) -> subprocess.Popen:
    """The app as a student's browser meets it (CPU backend unless the caller says otherwise)."""
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app or ROOT / "app.py"),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--global.developmentMode",
        "false",
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env={**os.environ, "CONV_EXPLORER_BACKEND": "numpy", **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
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


@pytest.fixture(scope="session")
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


class Browser:
    """Headless Chromium with one profile on disk for every page a test opens. Each page is its own
    tab and its own Streamlit session (the app keeps nothing in cookies or browser storage), and
    they share the HTTP cache and V8's code cache: Streamlit's scripts (5 MB, Plotly's 4.7 MB of
    them) are compiled once instead of for every page. On a 2-core machine that was about 2 of the
    10-12 CPU seconds a Direct page load cost in a fresh browser context."""

    def __init__(self, context) -> None:
        self.context = context

    def new_page(self, viewport: dict | None = None):
        page = self.context.new_page()
        if viewport:
            page.set_viewport_size(viewport)
        return page


@pytest.fixture(scope="session")
def playwright():
    """One Playwright per test process (a second sync_playwright in the same process is refused)."""
    sync_api = require("playwright.sync_api", "browser tests")
    with sync_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(server, playwright, tmp_path_factory):
    exe = chromium_path()
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = playwright.chromium.launch_persistent_context(
        profile,
        executable_path=exe,
        args=CHROMIUM_ARGS,
        viewport={"width": LAPTOP[0], "height": LAPTOP[1]},
    )
    b = Browser(context)
    warm_up(b, server + "/")
    yield b
    context.close()


# Streamlit marks its root element with the script's state: "notRunning" once a run has finished
# (the first run included), "running" or "rerunRequested" while one is under way.
RUNNING = '[data-testid="stApp"]:not([data-test-script-state="notRunning"])'
RUN_FINISHED = (
    '[data-testid="stApp"][data-test-script-state="notRunning"][data-test-connection-state="CONNECTED"]'
)


def wait_idle(page, timeout: float = 90) -> None:
    """Wait until Streamlit has finished the current run and the browser has drawn its charts."""
    deadline = time.time() + timeout
    time.sleep(0.3)  # a rerun just asked for (a click, a key press) reaches the app's state
    while True:
        left_ms = max(1000, (deadline - time.time()) * 1000)
        page.wait_for_selector(RUN_FINISHED, state="attached", timeout=left_ms)
        time.sleep(0.2)
        if page.locator(RUN_FINISHED).count():  # still finished: no rerun chained on (st.rerun)
            break
        if time.time() > deadline:
            raise AssertionError("the page did not finish running")
    # the script is done; let the browser fetch the widgets' code and draw the charts
    page.wait_for_load_state("networkidle", timeout=timeout * 1000)
    # charts still loading on screen (a collapsed expander's skeletons never load)
    loading = page.locator('[data-testid="stSkeleton"]:visible')
    if loading.count():
        loading.first.wait_for(state="hidden", timeout=30000)


LAPTOP, PROJECTOR = (1366, 768), (1920, 1080)  # the viewports every page is checked at


@contextlib.contextmanager
def reopened(browser, url: str, size: tuple[int, int] = LAPTOP) -> Iterator:
    """`url` in a new tab (a new Streamlit session: no session state), loaded and idle: what a
    shared link shows to someone else."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(url)
    wait_idle(page)
    no_exception(page)
    try:
        yield page
    finally:
        page.close()


def current_url(page) -> str:
    """The address bar now: Playwright's page.url can lag a same-page URL update by one event."""
    return page.evaluate("location.href")


def no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator(
        '[data-testid="stException"]'
    ).all_inner_texts()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


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


# the drawn Plotly chart inside the pickable chart `chart` (JavaScript, in every snippet below)
_FIND_PLOT = """const gd = [...document.querySelectorAll(`.st-key-pick-${chart} .js-plotly-plot`)]
    .find((g) => g.layout);"""

# A cell's centre from Plotly's public state: the axis ranges it writes back into gd.layout once
# drawn, and the subplot's plot area in the DOM (its drag rectangle, data-subplot="xy", "x2y2", ...).
# On a y axis the top of the area is range[1] (reversed or not); on an x axis the left is range[0].
_CELL_CENTRE = f"""([chart, panel, row, col]) => {{
  {_FIND_PLOT}
  if (!gd) return null;
  const suffix = panel.slice(1);
  const xa = gd.layout["xaxis" + suffix] || {{}};
  const yname = xa.anchor || "y" + suffix;
  const ya = gd.layout["yaxis" + yname.slice(1)] || {{}};
  const area = gd.querySelector(`.nsewdrag[data-subplot="${{panel}}${{yname}}"]`);
  if (!area || !xa.range || !ya.range) return null;
  const r = area.getBoundingClientRect();
  const [x0, x1] = xa.range, [y0, y1] = ya.range;
  return {{ x: r.left + ((col - x0) / (x1 - x0)) * r.width, y: r.top + ((y1 - row) / (y1 - y0)) * r.height }};
}}"""


def cell_centre(page, chart: str, row: int, col: int, panel: str = "x") -> tuple[float, float]:
    """Screen position of cell (row, col) of subplot `panel` of the pickable chart `chart`."""
    page.locator(f".st-key-pick-{chart}").scroll_into_view_if_needed()
    page.wait_for_function(
        f"document.querySelector('.st-key-pick-{chart} .js-plotly-plot') && "
        f"document.querySelector('.st-key-pick-{chart} .js-plotly-plot')?.layout?.xaxis?.range",
        timeout=30000,
    )
    where = page.evaluate(_CELL_CENTRE, [chart, panel, row, col])
    assert where is not None, f"chart {chart} is not on the page"
    return round(where["x"]), round(where["y"])


def click_cell(page, chart: str, row: int, col: int, panel: str = "x") -> None:
    """Click a figure cell as a person does: move there, rest (Plotly updates hover every ~50 ms),
    click, then wait for the rerun to finish."""
    x, y = cell_centre(page, chart, row, col, panel)
    page.mouse.move(x, y)
    time.sleep(0.2)
    page.mouse.click(x, y)
    time.sleep(0.3)
    wait_idle(page)


def press_play(page, chart, label, first: str, wait: float = 2.0) -> str:
    """Press an animation's Play button with a real mouse click (its SVG group takes no pointer
    events itself) until the slider's current-value `label` no longer shows `first`; up to three
    tries, as a slow renderer may miss the first. Returns the label's text afterwards."""
    for _ in range(3):
        box = chart.locator(".updatemenu-button", has_text="Play").first.bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        time.sleep(wait)
        if first not in label.text_content():
            break
    return label.text_content()


def hover_cell(page, chart: str, row: int, col: int, panel: str = "x") -> None:
    x, y = cell_centre(page, chart, row, col, panel)
    page.mouse.move(x, y - 3)
    page.mouse.move(x, y)
    time.sleep(0.4)


def highlighted_cells(page, chart: str, name: str = "hover-hl") -> list[tuple[float, float]]:
    """Centres (row, col) of the layout shapes named `name` drawn on a chart (hover outlines)."""
    cells = page.evaluate(
        f"""([chart, name]) => {{
      {_FIND_PLOT}
      const shapes = gd ? (gd.layout.shapes || []).filter((s) => s.name === name) : [];
      return shapes.map((s) => [(s.y0 + s.y1) / 2, (s.x0 + s.x1) / 2]);
    }}""",
        [chart, name],
    )
    return sorted({(float(r), float(c)) for r, c in cells})


def shapes_of(page, chart: str) -> list[dict]:
    """The layout shapes of a pickable chart as the browser holds them (server-drawn highlights)."""
    return page.evaluate(
        f"""(chart) => {{
      {_FIND_PLOT}
      return gd ? (gd.layout.shapes || []) : [];
    }}""",
        chart,
    )


# gd.data[i][key] as plain (nested) arrays: Plotly's public figure data holds what the page sent,
# where a NumPy array may arrive as a typed-array spec {dtype, bdata (base64), shape}
_TRACE_ARRAY = f"""([chart, index, key]) => {{
  {_FIND_PLOT}
  const value = gd && gd.data[index] ? gd.data[index][key] : null;
  if (value == null) return null;
  if (!value.bdata) return Array.from(value, (v) => (v && v.length !== undefined ? Array.from(v) : v));
  const bytes = Uint8Array.from(atob(value.bdata), (ch) => ch.charCodeAt(0));
  const kinds = {{ f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array,
                   u2: Uint16Array, i1: Int8Array, u1: Uint8Array }};
  const flat = Array.from(new kinds[value.dtype](bytes.buffer));
  const shape = typeof value.shape === "string" ? value.shape.split(",").map(Number) : value.shape || [];
  if (shape.length < 2) return flat;
  const cols = shape[1];
  return Array.from({{ length: shape[0] }}, (_, r) => flat.slice(r * cols, (r + 1) * cols));
}}"""


def trace_array(page, chart: str, index: int, key: str) -> list | None:
    """Trace `index`'s array `key` (z, customdata, ...) of a pickable chart, from gd.data."""
    return page.evaluate(_TRACE_ARRAY, [chart, index, key])
