"""ui.common.compare on the CPU keeps the whole comparison to the rerun budget: candidates that
would not fit in what is left are not timed, and each says why."""

from __future__ import annotations

import pytest

from tests.support.apptest import AppTest, assert_clean

pytestmark = pytest.mark.usefixtures("numpy_backend")


def script() -> None:
    import time

    import streamlit as st

    from ui import budget, common

    saved = budget.CPU_SECONDS
    budget.CPU_SECONDS = 0.3  # timing may use 0.22 s of it; each candidate takes about 0.09 s (3 calls)
    try:
        results = common.compare(("budget-test",), {f"c{i}": (lambda: time.sleep(0.03)) for i in range(6)})
    finally:
        budget.CPU_SECONDS = saved
    st.write("timed: " + ("none yet" if results is None else ", ".join(sorted(results))))


def test_a_comparison_stops_timing_when_the_cpu_budget_is_spent():
    at = AppTest.from_function(script, default_timeout=60)
    at.run()
    assert "timed: none yet" in at.markdown[0].value  # nothing timed before the button
    at.button[0].click().run()
    assert_clean(at)
    timed = at.markdown[0].value.removeprefix("timed: ").split(", ")
    assert 1 <= len(timed) <= 3 and timed == [f"c{i}" for i in range(len(timed))]
    skipped = [c.value for c in at.caption if "was not timed" in c.value]
    assert len(skipped) == 6 - len(timed)
    assert all("used its 0.2 s on this CPU server" in s for s in skipped), skipped
