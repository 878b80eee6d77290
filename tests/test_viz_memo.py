"""viz.memo: equal arguments give the figure built before; anything else builds anew."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from viz import memo
from viz.style import NORMAL, PRESENTATION

calls: list[tuple] = []


@memo.figure_memo
def build(values: np.ndarray, style=NORMAL, *, title: str = "t") -> dict:
    calls.append((values.tobytes(), style.name, title))
    return {"values": values.tolist(), "style": style.name, "title": title}


@pytest.fixture(autouse=True)
def enabled():
    was = memo._enabled
    memo.enable()
    memo.clear()
    calls.clear()
    yield
    memo.clear()
    memo.enable(was)


def test_equal_arguments_return_the_same_figure_and_build_once(rng):
    a = rng.random((3, 4)).astype(np.float32)
    first = build(a, NORMAL, title="x")
    again = build(a.copy(), NORMAL, title="x")  # another array, the same values
    assert again is first and len(calls) == 1


@pytest.mark.parametrize(
    "change",
    [
        dict(values=lambda a: a + 1),  # other values
        dict(values=lambda a: a.reshape(4, 3)),  # the same bytes, another shape
        dict(values=lambda a: a.astype(np.float64)),  # another dtype
        dict(style=PRESENTATION),  # another style
        dict(title="y"),  # another keyword
    ],
)
def test_any_difference_builds_a_new_figure(change, rng):
    a = rng.random((3, 4)).astype(np.float32)
    first = build(a, NORMAL, title="x")
    values = change["values"](a) if "values" in change else a
    other = build(values, change.get("style", NORMAL), title=change.get("title", "x"))
    assert other is not first and len(calls) == 2
    assert other == {"values": values.tolist(), "style": change.get("style", NORMAL).name,
                     "title": change.get("title", "x")}  # fmt: skip


def test_keys_tell_types_and_containers_apart():
    def key(*args, **kwargs):
        return memo.key_of(build, args, kwargs)

    assert key(1) != key(1.0) != key("1") != key(True)
    assert key((1, 2)) != key([1, 2]) != key((1, (2,)))
    assert key({"a": 1, "b": 2}) == key({"b": 2, "a": 1})
    assert key(np.array(["ab", "c"], dtype=object)) != key(np.array(["a", "bc"], dtype=object))
    assert key(NORMAL) != key(PRESENTATION)
    assert key(dataclasses.replace(NORMAL, line=4)) != key(NORMAL)


def test_unkeyable_or_too_large_arguments_skip_the_memo():
    assert memo.key_of(build, (object(),), {}) is None
    assert memo.key_of(build, (np.array([object()], dtype=object),), {}) is None
    big = np.zeros(memo.MAX_ARRAY_BYTES // 8 + 1)
    assert memo.key_of(build, (big,), {}) is None
    build(big)
    build(big)
    assert len(calls) == 2  # built each time, not kept


def test_least_recently_used_figures_leave_first():
    figs = [build(np.array([i])) for i in range(memo.SLOTS)]
    assert build(np.array([0])) is figs[0]  # 0 is now the most recently used
    build(np.array([-1]))  # one more: the least recently used (1) leaves
    assert build(np.array([0])) is figs[0]
    assert build(np.array([1])) is not figs[1]


def test_off_builds_every_time():
    memo.enable(False)
    a = np.arange(3)
    assert build(a) is not build(a)
    assert len(calls) == 2


@memo.figure_memo
def heatmap(values: np.ndarray, frames: int = 0):
    import plotly.graph_objects as go

    from viz.conv2d import FramedFigure

    if not frames:
        return go.Figure(go.Heatmap(z=values), layout={"title": {"text": "h"}})
    raw = [{"name": str(i), "data": [{"z": (values + i).tolist()}]} for i in range(frames)]
    return FramedFigure(go.Heatmap(z=values), raw_frames=raw, raw_layout={"sliders": [{"steps": []}]})


@pytest.mark.parametrize("frames", [0, 3])
def test_a_memoised_figure_is_frozen_its_dict_built_once_and_equal_to_a_fresh_one(frames, rng):
    import plotly.graph_objects as go
    import plotly.io as pio

    values = rng.random((4, 5))
    fig = heatmap(values, frames)
    memo.enable(False)
    fresh = heatmap(values, frames)  # built anew, not frozen
    memo.enable()
    assert isinstance(fig, type(fresh)) and isinstance(fig, go.Figure) and not isinstance(fresh, memo._Frozen)
    assert fig.to_dict() is fig.to_dict()  # no deep copy per call
    sent = pio.to_json(fig.to_dict(), validate=False)  # the call st.plotly_chart makes, on every rerun
    assert sent == pio.to_json(fresh.to_dict(), validate=False)  # a plain dict: encoded as before
    assert pio.to_json(fig.to_dict(), validate=False) is sent  # encoded once
    assert pio.to_json(fig.to_dict(), validate=False, pretty=True) != sent  # other calls: Plotly's own
    memo.enable(False)
    assert pio.to_json(fig.to_dict(), validate=False) == sent  # Plotly's function again
    assert pio.to_json(fig.to_dict(), validate=False) is not sent
    memo.enable()
    assert fig.to_html(include_plotlyjs=False).count('"frames"') == fresh.to_html(
        include_plotlyjs=False
    ).count('"frames"')
    assert heatmap(values.copy(), frames) is fig and memo.freeze(fig) is fig


def test_the_checkpoint_runs_before_each_build_and_not_on_a_hit(monkeypatch, rng):
    """memo.before_build (the app's give-way point) runs before a figure is built, built anew or
    with arguments the memo cannot key, and not when the memo answers."""
    seen: list[int] = []
    monkeypatch.setattr(memo, "before_build", lambda: seen.append(len(calls)))
    a = rng.random((2, 2))
    build(a)
    build(a)  # a hit
    build(a + 1)
    build(a, title=object())  # unkeyable: built without the memo
    assert seen == [0, 1, 2] and len(calls) == 3  # each time before the build it preceded


def test_the_server_sets_the_give_way_checkpoint():
    from ui import fair_share, server_tuning

    server_tuning.tune_process()
    assert memo.before_build is fair_share.give_way
