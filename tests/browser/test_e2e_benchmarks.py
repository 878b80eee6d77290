"""The Benchmarks page in a real browser (CPU server): the committed H100 results are on the first
screen of a student's laptop without pressing anything; choosing another results file puts it in
the URL, and that URL opened in a new tab (a new session) shows the same file."""

from __future__ import annotations

import pytest

from tests.pages.test_pages_benchmarks import bench_files, newest_gpu_pair
from tests.support.browser import PROJECTOR, no_exception, reopened, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.tour]


def chart_tops(page) -> list[float]:
    return page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].map((g) => g.getBoundingClientRect().top)"
    )


def test_committed_results_on_the_first_screen_and_the_file_in_the_url(server, browser):
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    page.goto(server + "/benchmarks")
    wait_idle(page)
    no_exception(page)
    body = page.inner_text("body")
    assert "NVIDIA H100 80GB HBM3" in body and "cuDNN 9.19.0" in body, "labelled with device and versions"
    assert f"benchmarks_run={newest_gpu_pair()[0]}" in page.url, (
        "the newest H100 lease is the default, in the URL"
    )
    assert any(top < 768 for top in chart_tops(page)), "a results chart starts on the first screen"
    assert page.get_by_role("button", name="Run the benchmark").is_visible(), "run here, beside the results"
    shot(page, "benchmarks_1366x768")

    page.locator(".st-key-w_benchmarks_run [role='combobox']").click()
    page.get_by_role("option", name="cpu_2core", exact=False).click()
    wait_idle(page)
    no_exception(page)
    assert "benchmarks_run=cpu_2core" in page.url
    assert f"{bench_files()['cpu_2core']['device']} · NumPy" in page.inner_text("body")
    url = page.url
    page.close()

    with reopened(browser, url, PROJECTOR) as fresh:
        no_exception(fresh)
        assert "cpu_2core" in fresh.locator(".st-key-w_benchmarks_run [role='combobox']").input_value()
        text = fresh.inner_text("body")
        assert "CPU numbers" in text and "speed relative to torch:cpu" in text
        assert "torch:cudnn" not in text, "a CPU run names no GPU peer"
        shot(fresh, "benchmarks_cpu_run_1920x1080")
