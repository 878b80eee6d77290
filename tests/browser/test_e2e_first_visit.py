"""A student's first minute in a real browser, each test on a freshly started server in a fresh
browser context: the projector's deep link opens its page with no "Page not found" dialog and
the first click picks (the pick in the page and in the link); the visit that goes on to every
page makes no request off the server (the tab icon and every font are the server's own).

Expected picks are the clicked cells, in the page's own coordinates."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import browser as web

pytestmark = pytest.mark.e2e

# page (with the link's query), its title, the first click (chart, row, col, subplot), the pick it makes
DEEP_LINKS = [
    ("direct", "Direct convolution", ("conv_output", 40, 60, "x"), ("direct_pick", "out:40,60")),
    ("im2col", "im2col + GEMM", ("ymat", 1, 2, "x"), ("im2col_pick", "out:1,2")),
    (
        "unfold?unfold_pick=px:100,120",
        "Unfold / Fold",
        ("zoom", 103, 118, "x"),
        ("unfold_pick", "px:103,118"),
    ),
    ("reflect", "Reflect padding", ("reflect_grid", 1, 0, "x2"), ("reflect_pick", "pad:1,0")),
    (
        "backward",
        "Backward & transposed convolution",
        ("backward_dx", 4, 5, "x4"),
        ("backward_pick", "dx:4,5"),
    ),
]
PAGES = ["", "direct", "im2col", "unfold", "reflect", "backward", "benchmarks"]


@pytest.fixture(scope="module")
def chromium(playwright):
    """One Chromium launch for the module; each test's context is a browser that never saw its
    server (a new context shares no cache, cookies or storage with another)."""
    browser = playwright.chromium.launch(executable_path=web.chromium_path(), args=web.CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def fresh(chromium):
    """A server started for this test alone and a browser context that never saw it."""
    port = web._free_port()
    proc = web.start_server(port)
    context = chromium.new_context(viewport={"width": web.LAPTOP[0], "height": web.LAPTOP[1]})
    try:
        yield f"http://127.0.0.1:{port}", context
    finally:
        context.close()
        proc.terminate()
        proc.wait(timeout=20)


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(web.current_url(page)).query)


def no_page_not_found(page) -> None:
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator('[data-testid="stDialog"], [role="dialog"]').count() == 0


def open_deep_link(page, url: str, link: tuple) -> None:
    """Open a deep link, check its page and make its first click: the pick must land in the link."""
    path, title, (chart, row, col, panel), (key, value) = link
    page.goto(f"{url}/{path}")
    web.wait_idle(page)
    web.no_exception(page)
    no_page_not_found(page)
    assert page.locator("h1").first.inner_text().strip() == title
    web.click_cell(page, chart, row, col, panel)
    no_page_not_found(page)
    assert query(page)[key] == [value], "the first click picked"


@pytest.mark.tour  # the Direct page's link in the quick suite (below), every page's in the tour
@pytest.mark.parametrize("link", DEEP_LINKS, ids=[d[0].split("?")[0] for d in DEEP_LINKS])
def test_a_deep_link_on_a_fresh_server_opens_its_page_and_the_first_click_picks(fresh, link):
    url, context = fresh
    open_deep_link(context.new_page(), url, link)  # the server's very first request


def test_a_first_visit_from_a_deep_link_to_every_page_requests_nothing_off_the_server(fresh):
    """The projector's link to the Direct page is the fresh server's first request; then the
    student opens every other page from the menu, scrolled to its last figure, and the home page."""
    url, context = fresh
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_deep_link(page, url, DEEP_LINKS[0])
    for stem in PAGES[2:]:
        page.locator(f'.st-key-page_menu a[href^="{stem}"]').click()
        web.wait_idle(page)
        web.no_exception(page)
        page.mouse.wheel(0, 20000)  # the whole page, down to its last figure
        web.wait_idle(page)
    page.goto(url + "/")
    web.wait_idle(page)
    web.no_exception(page)
    assert len(requests) > 50, "the visit was recorded"
    own = (url + "/", f"blob:{url}/", "data:")
    off = sorted({r for r in requests if not r.startswith(own)})
    assert not off, off
