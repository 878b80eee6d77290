"""ui.charts: what a chart sends to the browser (the figure's JSON and its Plotly config)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from ui.charts import payload, spec_of
from viz import memo


def test_the_payload_carries_the_figure_as_plotly_encodes_it_and_the_config():
    fig = go.Figure(go.Heatmap(z=np.arange(12, dtype=np.float32).reshape(3, 4)), layout=dict(height=321))
    data = payload(fig, {"scrollZoom": True})
    assert spec_of(data) == json.loads(pio.to_json(fig, validate=False))
    assert json.loads(data)["config"] == {"scrollZoom": True}
    assert spec_of(data)["layout"]["height"] == 321


def test_a_memoised_figure_sends_the_json_encoded_when_it_was_built():
    @memo.figure_memo
    def build(n: int) -> go.Figure:
        return go.Figure(go.Scatter(y=list(range(n))))

    was_on = memo._enabled
    memo.enable()
    try:
        a, b = build(5), build(5)
        assert a is b  # the memo's figure, shared
        assert payload(a) == payload(b)
        assert spec_of(payload(a))["data"][0]["y"] == [0, 1, 2, 3, 4]
    finally:
        memo.clear()
        memo.enable(was_on)
