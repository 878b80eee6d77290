"""ui/charts.py: a shared figure is serialised once per process; later runs get the same chart."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import plotly.graph_objects as go
import plotly.io
import pytest

from tests.support.apptest import AppTest, open_page, rerun
from ui import charts
from viz import memo as viz_memo

pytestmark = pytest.mark.usefixtures("numpy_backend")

PAGE = "pages/direct.py"


@pytest.fixture
def serialised(monkeypatch) -> list[int]:
    """Counts st.plotly_chart's serialisations (plotly.io.to_json), from a cold chart cache."""
    calls: list[int] = []
    real = plotly.io.to_json

    def counting(fig, *args, **kwargs):
        calls.append(1)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(plotly.io, "to_json", counting)
    charts._shared.clear()
    viz_memo.clear()
    yield calls
    charts._shared.clear()


@contextlib.contextmanager
def memo(on: bool) -> Iterator[None]:
    """The figure memo on or off for a while."""
    was = viz_memo._enabled
    viz_memo.enable(on)
    try:
        yield
    finally:
        viz_memo.enable(was)


def charts_of(at: AppTest) -> dict[str, str]:
    """Each chart's key -> its spec."""
    return {c.proto.id.split("-", 2)[-1]: c.proto.spec for c in at.get("plotly_chart")}


def containers_of(at: AppTest) -> dict[str, str]:
    """Each chart's id -> the id of the block it sits in (pickable charts sit in pick-<name>)."""
    out: dict[str, str] = {}

    def walk(node) -> None:
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", None) == "plotly_chart":
                out[child.proto.id] = str(getattr(node.proto, "id", ""))
            walk(child)

    walk(at.main)
    return out


def test_a_second_session_with_the_same_settings_gets_the_charts_without_serialising_them(serialised):
    first = open_page(PAGE, None, dict(cap=48, direct_stride=2))
    built = len(serialised)
    assert built >= 6  # every figure of the page, serialised once
    second = open_page(PAGE, None, dict(cap=48, direct_stride=2))
    assert len(serialised) == built
    assert charts_of(second) == charts_of(first)
    assert containers_of(second) == containers_of(first)  # the same element ids, in the same blocks
    for chart, block in containers_of(second).items():
        if "-chart_" in chart:  # a pickable chart: the bridge finds it by its container's key
            assert block.endswith("-pick-" + chart.split("-chart_")[-1])


def test_a_change_serialises_the_charts_it_changes_and_shows_them(serialised):
    at = open_page(PAGE, None, dict(cap=48, direct_stride=2))
    before = charts_of(at)
    n = len(serialised)
    rerun(at, direct_stride=1)
    after = charts_of(at)
    assert len(serialised) > n
    assert after["chart_conv_output"] != before["chart_conv_output"]
    with memo(False):  # the same settings, every figure built and serialised anew
        assert charts_of(open_page(PAGE, None, dict(cap=48, direct_stride=1))) == after


def test_the_digest_names_the_content_and_only_memoised_figures_have_one():
    with memo(True):

        @viz_memo.figure_memo
        def built(z: np.ndarray) -> go.Figure:
            return go.Figure(go.Heatmap(z=z))

        shared = built(np.arange(6.0).reshape(2, 3))
        assert viz_memo.digest_of(shared) == viz_memo.digest_of(built(np.arange(6.0).reshape(2, 3)))
        assert viz_memo.digest_of(built(np.ones((2, 3)))) not in (None, viz_memo.digest_of(shared))
    assert viz_memo.digest_of(go.Figure(go.Heatmap(z=np.ones((2, 3))))) is None


def test_a_second_session_with_the_same_settings_shares_the_convolution(monkeypatch):
    """The Direct page's convolution is kept for the process too: a follower's run (the same image
    and settings as its instructor's) computes nothing, and the result it shares is read-only."""
    from ui import direct_view

    direct_view._convs.clear()
    calls: list[int] = []
    real = direct_view.Conv

    def counting(*args, **kwargs):  # a Conv is built once per convolution computed
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(direct_view, "Conv", counting)
    first = open_page(PAGE, None, dict(cap=40, direct_stride=3))
    assert len(calls) == 1
    second = open_page(PAGE, None, dict(cap=40, direct_stride=3))
    assert len(calls) == 1
    conv = second.session_state["_dc_conv"]
    assert conv is first.session_state["_dc_conv"]
    assert not conv.out.flags.writeable and not conv.kernel.flags.writeable
    rerun(second, direct_stride=2)
    assert len(calls) == 2
