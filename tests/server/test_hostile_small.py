"""bench/hostile_load.py at CI size: a server under heavy sessions (the largest kernels at 1024 px
with Compare, Unfold K = 9 stride 1 at 1024 px, one photo upload after another) beside light
ones, all at once for a few seconds. No errors, no stuck session, every session served, the
uploads reach the page. (The latency ratio is measured at class size and reported, not asserted:
no timed assertions in the suite.)"""

import pytest

from tests.support.helpers import require

pytestmark = pytest.mark.usefixtures("numpy_backend")


def test_a_small_hostile_mix_serves_everyone_without_errors():
    require("streamlit", "the hostile-mix load test")
    from bench.hostile_load import load

    report = load(
        sessions=6,
        seconds=8,
        heavy=3,
        url=None,
        backend="numpy",
        heavy_kinds=("direct_heavy", "unfold_heavy", "uploader"),
        photo_px=(1600, 1200),
        quiet_reruns=10,
        crowd_seconds=3,
    )
    print(report)
    assert report["errors"] == 0, report["error_samples"]
    assert report["stuck_sessions"] == 0
    assert report["light_under_load"]["reruns"] >= 3, "the light sessions were served"
    assert report["light_crowd_quiet"]["reruns"] >= 3, "the light sessions alone were served"
    assert report["light_p95_ratio_to_crowd"] > 0
    for kind in ("direct_heavy", "unfold_heavy", "uploader"):
        assert report[kind]["reruns"] >= 1, kind
    assert report["uploader"]["refusals"] == 0
    assert report["rss_mib_max"] < 4096
