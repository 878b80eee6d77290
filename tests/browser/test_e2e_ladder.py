"""The precision ladder and the Benchmarks page's first minute in a real browser (CPU server): the
Benchmarks tables fit their width, chart titles are whole, missing values read "—", what auto
compares is said once, the word "lease" appears nowhere; the Direct page's "Compare precisions"
and padding "same". Screenshots at 1366x768 and 1920x1080 go to tests/artifacts/.
"""

from __future__ import annotations

import pytest

from tests.support.browser import LAPTOP, PROJECTOR, no_exception, shot, wait_idle

pytestmark = pytest.mark.e2e

# every dataframe's grid: how wide its content is against the room it has
TABLE_WIDTHS = """() => [...document.querySelectorAll('[data-testid="stDataFrame"]')]
  .filter((d) => d.offsetParent !== null)
  .map((d) => {
    const scroller = d.querySelector('.dvn-scroller') || d;
    const key = [...d.closest('[class*="st-key-"]')?.classList || []].find((c) => c.startsWith('st-key-'));
    const title = d.closest('details')?.querySelector('summary')?.innerText;
    return [scroller.scrollWidth, scroller.clientWidth, key || title || '?'];
  })"""
# every visible chart's title against its own drawing: [left, right, top, chart left, chart right]
TITLE_BOXES = """(within) => [...document.querySelectorAll(`${within} .js-plotly-plot`)]
  .filter((g) => g.offsetParent !== null)
  .map((g) => {
    const t = g.querySelector('.gtitle');
    const svg = g.querySelector('.main-svg').getBoundingClientRect();
    if (!t) return null;
    const r = t.getBoundingClientRect();
    const over = [...g.querySelectorAll('.xtick text, .ytick text, .x2tick text')].some((k) => {
      const b = k.getBoundingClientRect();
      return b.width > 0 && b.left < r.right && b.right > r.left && b.top < r.bottom && b.bottom > r.top;
    });
    return [r.left, r.right, r.top, svg.left, svg.right, svg.top, over, t.textContent];
  }).filter((x) => x)"""


def open_expanders(page, text: str) -> None:
    for summary in page.locator("summary", has_text=text).all():
        if summary.is_visible():
            summary.click()
    wait_idle(page)


def check_fits(page, within: str = "") -> None:
    """No table wider than its room; no chart title (of the charts under `within`) outside its chart."""
    cut = [(name, content, room) for content, room, name in page.evaluate(TABLE_WIDTHS) if content > room + 1]
    assert not cut, f"tables cut on the right (name, content px, room px): {cut}"
    boxes = page.evaluate(TITLE_BOXES, within)
    assert boxes, "charts are shown"
    for left, right, top, chart_left, chart_right, chart_top, over, text in boxes:
        assert left >= chart_left - 1 and right <= chart_right + 1 and top >= chart_top - 1, (
            f"clipped: {text}"
        )
        assert not over, f"the title {text!r} lies over tick labels"


@pytest.mark.parametrize("size", [LAPTOP, PROJECTOR], ids=["1366x768", "1920x1080"])
def test_benchmarks_tables_fit_titles_are_whole_and_auto_is_explained_once(server, browser, size):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(server + "/benchmarks")
    wait_idle(page)
    no_exception(page)
    text = page.inner_text("body")
    assert "lease" not in text.lower()
    assert text.count("never runs implicit_gemm_tf32") == 1, "what auto compares, said once"
    assert "auto did not run the fastest" not in text, "the newest run's auto ran its fastest fp32 candidate"
    assert "Precision ladder" in text
    shot(page, f"ladder_benchmarks_{size[0]}x{size[1]}")
    open_expanders(page, "Table:")
    text = page.inner_text("body")
    assert "None" not in text and "nan" not in text.split()
    check_fits(page)
    page.locator("summary", has_text="Table: the precision ladder").scroll_into_view_if_needed()
    shot(page, f"ladder_benchmarks_tables_{size[0]}x{size[1]}")
    # an older pair of runs: more columns (two runs, the spread), still within the page
    page.goto(server + "/benchmarks?benchmarks_run=h100_final_run1")
    wait_idle(page)
    open_expanders(page, "Table:")
    check_fits(page)
    assert "lease" not in page.inner_text("body").lower()
    # presentation mode: larger text, the same promises
    page.goto(server + "/benchmarks?pres=1")
    wait_idle(page)
    no_exception(page)
    open_expanders(page, "Table:")
    check_fits(page)
    page.locator("summary", has_text="Table: the precision ladder").scroll_into_view_if_needed()
    shot(page, f"ladder_benchmarks_pres_{size[0]}x{size[1]}")
    page.close()


def test_direct_compare_precisions_and_same_padding(server, browser):
    page = browser.new_page(viewport={"width": LAPTOP[0], "height": LAPTOP[1]})
    page.goto(server + "/direct?cap=64&direct_k=4&direct_same=1&direct_preset=box+blur")
    wait_idle(page)
    no_exception(page)
    text = page.inner_text("body")
    assert "Padding 'same' is asymmetric here" in text and "1 top, 2 bottom" in text
    shot(page, "ladder_direct_same_1366x768")
    open_expanders(page, "Precision ladder")
    page.get_by_role("button", name="Compare precisions").click()
    wait_idle(page)
    no_exception(page)
    text = page.inner_text("body")
    assert "the times are those of the NumPy twins on this CPU" in text
    figure = page.locator(".st-key-pick-direct_ladder, .st-key-fig_dc_ladder").first
    figure.scroll_into_view_if_needed()
    check_fits(page, ".st-key-fig_dc_ladder")  # the other figures of the page are not this file's
    shot(page, "ladder_direct_1366x768")
    page.set_viewport_size({"width": PROJECTOR[0], "height": PROJECTOR[1]})
    figure.scroll_into_view_if_needed()
    wait_idle(page)
    shot(page, "ladder_direct_1920x1080")
    # stride 2 with 'same': refused in words, the page lives on
    page.goto(server + "/direct?cap=64&direct_k=3&direct_same=1&direct_stride=2")
    wait_idle(page)
    no_exception(page)
    assert "Padding 'same' needs stride 1" in page.inner_text("body")
    page.close()
