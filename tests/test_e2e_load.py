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
