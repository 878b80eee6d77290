"""The classroom load test at CI size: 8 sessions for 20 s, no errors, no state shared."""

import pytest

from tests.conftest import require

pytestmark = pytest.mark.e2e


def test_eight_sessions_keep_their_own_state_without_errors():
    require("playwright.sync_api", "the load test drives real browser sessions")
    from tests.load_test import run_load

    report = run_load(sessions=8, seconds=20)
    print(report)
    assert report["errors"] == 0
    assert report["state_mismatches"] == 0
    assert report["reruns"] >= 8, "every session was served at least once"
    # memory levels off: the last sample is not far above the peak seen after warm-up
    assert report["rss_mib_during_last"] <= report["rss_mib_during_max"] * 1.05
