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
    assert other == {
        "values": values.tolist(),
        "style": change.get("style", NORMAL).name,
        "title": change.get("title", "x"),
    }


def test_keys_tell_types_and_containers_apart():
    def key(*args, **kwargs):
        return memo.key_of(build, args, kwargs)

    assert key(1) != key(1.0) != key("1") != key(True)
    assert key((1, 2)) != key([1, 2]) != key((1, (2,)))
    assert key({"a": 1, "b": 2}) == key({"b": 2, "a": 1})
    assert key(np.array(["ab", "c"], dtype=object)) != key(np.array(["a", "bc"], dtype=object))
    assert key(range(3)) == key(range(3)) != key(range(4)) != key(range(0, 4, 2))
    assert key(range(3)) != key((0, 1, 2))
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
def test_a_memoised_figure_is_an_ordinary_figure_equal_to_a_fresh_one(frames, rng):
    """Nothing of Plotly is replaced: the shared figure serialises as a fresh build does."""
    import plotly.io as pio

    values = rng.random((4, 5))
    fig = heatmap(values, frames)
    memo.enable(False)
    fresh = heatmap(values, frames)  # built anew
    memo.enable()
    assert type(fig) is type(fresh)
    assert pio.to_json(fig.to_dict(), validate=False) == pio.to_json(fresh.to_dict(), validate=False)
    assert pio.to_json.__module__.startswith("plotly")
    assert heatmap(values.copy(), frames) is fig
