"""Back and Forward in a real browser: one history entry per page visit or deliberate pick, none
per rerun, and Back / Forward show the views that were seen (page, pick and sidebar settings).

Each test opens its own tab (a fresh session); expected views are the ones the test clicked."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.support import browser as web

pytestmark = pytest.mark.e2e


def title(page) -> str:
    return page.locator("h1").first.inner_text().strip()


def entries(page) -> int:
    return page.evaluate("history.length")


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(web.current_url(page)).query)


def open_from_menu(page, stem: str) -> None:
    page.locator(f'.st-key-page_menu a[href^="{stem}"]').click()
    web.wait_idle(page)
    web.no_exception(page)


def go(page, how: str) -> None:
    page.go_back() if how == "back" else page.go_forward()
    web.wait_idle(page)
    web.no_exception(page)


def picked(page) -> str:
    return page.get_by_text("Picked: output pixel").first.inner_text()


def test_back_after_home_direct_reflect_lands_on_direct(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(server + "/")
    web.wait_idle(page)
    home_title, start = title(page), entries(page)
    open_from_menu(page, "direct")
    assert title(page) == "Direct convolution" and entries(page) == start + 1
    open_from_menu(page, "reflect")
    assert title(page) == "Reflect padding" and entries(page) == start + 2
    go(page, "back")
    assert title(page) == "Direct convolution"
    go(page, "back")
    assert title(page) == home_title
    go(page, "forward")
    assert title(page) == "Direct convolution"
    go(page, "forward")
    assert title(page) == "Reflect padding" and entries(page) == start + 2  # no entry added on the way
    page.close()


@pytest.mark.tour
def test_a_pick_is_one_entry_a_rerun_none_and_back_restores_the_view(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(server + "/?pres=1")  # a sidebar setting away from its default travels along
    web.wait_idle(page)
    start = entries(page)
    open_from_menu(page, "direct")
    first = picked(page)  # the page's own first pick (a pixel with detail)
    assert "direct_pick" not in query(page) and query(page)["pres"] == ["1"]
    assert entries(page) == start + 1
    web.click_cell(page, "conv_output", 40, 60)
    assert picked(page).startswith("Picked: output pixel (40, 60)") and entries(page) == start + 2
    page.get_by_text("CUDA source", exact=False).first.click()  # opens a lazy expander: a rerun
    web.wait_idle(page)
    assert entries(page) == start + 2, "a rerun that changes no setting adds no entry"
    open_from_menu(page, "reflect")
    assert entries(page) == start + 3 and query(page)["pres"] == ["1"]
    go(page, "back")
    assert title(page) == "Direct convolution" and picked(page).startswith("Picked: output pixel (40, 60)")
    assert query(page)["direct_pick"] == ["out:40,60"] and query(page)["pres"] == ["1"]
    go(page, "back")
    assert picked(page) == first and "direct_pick" not in query(page)  # the view before the pick
    assert page.locator(".st-key-w_pres input").is_checked()  # presentation mode stayed on
    go(page, "forward")
    assert picked(page).startswith("Picked: output pixel (40, 60)")
    assert entries(page) == start + 3
    page.close()
