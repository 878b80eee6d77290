"""The classroom load test at CI size (no browser: followers speak Streamlit's protocol, so it runs
beside the browser groups instead of inside one; tests/classroom_load.py has the class-size run)."""

from __future__ import annotations

from tests.conftest import require

require("streamlit", "the classroom load test runs the app")


def test_classroom_load_small():
    """tests/classroom_load.py at CI size: 6 headless followers for 12 s, the instructor toggling a
    sidebar setting every 5 s. No errors, and every follower shows every change within 10 s."""
    from tests.classroom_load import run_load

    report = run_load(followers=6, seconds=12, every=5, late=10, page="", setting="Greyscale (1 channel)",
                      values=(False, True))  # fmt: skip
    print(report)
    assert report["errors"] == 0, report["error_samples"]
    assert report["changes"] >= 2 and report["updates"] == 6 * report["changes"]
    assert report["superseded_updates"] == 0 and report["delay_max_s"] <= 10
