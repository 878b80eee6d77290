"""The Pooling page through AppTest: the picked output's window and winner, the picked input's readers
and routes, and the gradient panel, checked against an independent loop over the seeded grid; the
padding slider follows PyTorch's limit (kernel // 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.apptest import AppTest, open_page, typed_array
from ui.state import Cell

PAGE = "pages/pool.py"
HIGHLIGHT, READER, SECOND = "#ff7f0e", "#d62728", "#17becf"

pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str]) -> AppTest:
    return open_page(PAGE, query)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def boxes(spec: dict, colour: str, panel: str = "x") -> set[tuple[float, float]]:
    """(row, col) of the one-cell outlines in `colour` on a panel."""
    return {
        (s["y0"] + 0.5, s["x0"] + 0.5)
        for s in spec["layout"].get("shapes", [])
        if s.get("line", {}).get("color") == colour and s.get("xref") == panel and s["x1"] - s["x0"] == 1
    }


def grid(seed: int, H: int, W: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 10, (H, W)).astype(np.float32)


def test_output_pick_shows_its_window_and_first_maximum():
    """k 3, stride 2, padding 1 on a 6 x 7 grid of seed 3: output (1, 2) reads rows 1-3, columns
    3-5; its winner is the first maximum of those, row by row (computed here by a plain loop)."""
    at = app(
        {
            "pool_k": "3",
            "pool_s": "2",
            "pool_p": "1",
            "pool_h": "6",
            "pool_w": "7",
            "pool_seed": "3",
            "pool_pick": "out:1,2",
        }
    )
    x = grid(3, 6, 7)
    cells = [(r, c) for r in range(1, 4) for c in range(3, 6)]
    best = max(x[r, c] for r, c in cells)
    first = next(cell for cell in cells if x[cell] == best)
    spec = charts(at)[0]
    assert boxes(spec, SECOND) == {(float(r), float(c)) for r, c in cells}
    assert (float(first[0]), float(first[1])) in boxes(spec, HIGHLIGHT)
    y = typed_array(spec["data"][1]["z"])
    assert y[1, 2] == best
    assert f"taken from input **({first[0]}, {first[1]})**" in " ".join(m.value for m in at.markdown)


def test_input_pick_shows_readers_routes_and_its_gradient():
    at = app(
        {
            "pool_k": "2",
            "pool_s": "1",
            "pool_p": "0",
            "pool_h": "4",
            "pool_w": "4",
            "pool_seed": "8",
            "pool_pick": "in:1,1",
        }
    )
    x = grid(8, 4, 4)
    readers = [(oh, ow) for oh in range(3) for ow in range(3) if oh <= 1 <= oh + 1 and ow <= 1 <= ow + 1]
    won = []
    for oh, ow in readers:
        window = [(oh + a, ow + b) for a in range(2) for b in range(2)]
        best = max(x[c] for c in window)
        if next(c for c in window if x[c] == best) == (1, 1):
            won.append((oh, ow))
    spec = charts(at)[0]
    assert boxes(spec, READER, "x2") == {(float(r), float(c)) for r, c in readers}
    assert boxes(spec, HIGHLIGHT, "x2") == {(float(r), float(c)) for r, c in won}
    gradient = typed_array(charts(at)[1]["data"][0]["z"])
    assert gradient[1, 1] == len(won)


def test_padding_is_limited_to_half_the_kernel():
    at = app({"pool_k": "2", "pool_p": "2"})
    assert at.session_state["pool_p"] == 1
    assert at.slider(key="w_pool_p").max == 1


def test_avg_divides_by_the_window_and_the_pick_outside_moves_inside():
    at = app(
        {
            "pool_mode": "avg",
            "pool_k": "3",
            "pool_s": "2",
            "pool_p": "1",
            "pool_h": "5",
            "pool_w": "5",
            "pool_seed": "1",
            "pool_cip": "0",
            "pool_pick": "out:9,9",
        }
    )
    assert at.session_state["pool_pick"] == Cell("out", 2, 2)
    x = grid(1, 5, 5)
    y = typed_array(charts(at)[0]["data"][1]["z"])
    assert y[2, 2] == pytest.approx(x[3:5, 3:5].mean(), rel=1e-6)  # rows/cols 3-5, 5 is padding: 4 cells
