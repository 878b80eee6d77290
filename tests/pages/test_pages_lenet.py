"""The LeNet page through AppTest: Train runs in chunks until its goal (each chunk a rerun), the
state resumes, the metrics and curves follow; a pick (through the URL) outlines the cells it reads,
checked against an independent count; bad URL values are clamped with a notice."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpuops import lenet
from tests.support.apptest import AppTest, open_page, typed_array
from tests.support.helpers import require
from ui import budget
from ui import lenet as training
from ui.state import Cell
from viz import memo

require("sklearn", "the digits the LeNet page trains on")
PAGE = "pages/lenet.py"
HIGHLIGHT, READER = "#ff7f0e", "#d62728"

pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str] | None = None) -> AppTest:
    return open_page(PAGE, query)


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def chart_json(at: AppTest, name: str) -> dict:
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        if name in json.dumps(spec.get("layout", {}).get("title", "")):
            return spec
    raise AssertionError(f"no chart {name}")


def outlines(spec: dict, colour: str) -> list[tuple[str, float, float, float, float]]:
    return [
        (s["xref"], s["y0"], s["y1"], s["x0"], s["x1"])
        for s in spec["layout"].get("shapes", [])
        if s.get("line", {}).get("color") == colour
    ]


def test_train_runs_in_chunks_to_its_goal_and_resumes(monkeypatch):
    """One epoch per Train; chunks of 5 steps (the budget made small): AppTest follows the page's
    reruns until the goal, so one click ends at exactly one epoch; a second click adds one more."""
    monkeypatch.setattr(training, "CHUNK_SHARE", 5 * training.FIRST_GUESS_S / 2.0)
    monkeypatch.setattr(training, "seconds_per_step", lambda state: training.FIRST_GUESS_S)
    monkeypatch.setattr(training, "CLOCK", lambda: 0.0)  # no deadline: the estimate alone sizes chunks
    at = app({"lenet_epochs": "1", "lenet_batch": "128"})
    assert metric(at, "Step") == "0" and metric(at, "Test accuracy") == "not trained"
    at.button(key="lenet_train").click().run()
    per_epoch = -(-1437 // 128)  # 1797 digits, a fifth held out (rounded): 1437 to train on
    for _ in range(per_epoch):  # AppTest runs one script run per .run(): follow the page's reruns
        if metric(at, "Step") == str(per_epoch):
            break
        at.run()
    assert not at.exception
    assert metric(at, "Epoch") == "1" and metric(at, "Step") == str(per_epoch)
    assert metric(at, "Test accuracy").endswith("%")
    at.button(key="lenet_train").click().run()
    for _ in range(per_epoch):
        if metric(at, "Step") == str(2 * per_epoch):
            break
        at.run()
    assert metric(at, "Epoch") == "2" and metric(at, "Step") == str(2 * per_epoch)


def test_a_chunk_ends_at_its_deadline_whatever_the_estimate(monkeypatch):
    """The estimate (1 microsecond a step) would allow a whole epoch in one chunk; the deadline
    (CHUNK_SHARE of the rerun budget) ends it. A clock that moves 0.5 s per reading, read once
    at the start and once after each step: the first step to end at or past the share ends each
    chunk, and the chunks (each its own rerun) still reach the goal."""
    monkeypatch.setattr(training, "seconds_per_step", lambda state: 1e-6)
    ticks = iter(range(10_000))
    monkeypatch.setattr(training, "CLOCK", lambda: 0.5 * next(ticks))
    chunks, train_steps = [], lenet.train_steps

    def counted(state, *args, **kwargs):
        new = train_steps(state, *args, **kwargs)
        chunks.append(new.step - state.step)
        return new

    monkeypatch.setattr(lenet, "train_steps", counted)
    share = training.CHUNK_SHARE * budget.CPU_SECONDS
    expected = next(n for n in range(1, 100) if 0.5 * n >= share)
    per_epoch = -(-1437 // 128)
    at = app({"lenet_epochs": "1", "lenet_batch": "128"})
    at.button(key="lenet_train").click().run()
    for _ in range(per_epoch):
        if metric(at, "Step") == str(per_epoch):
            break
        at.run()
    assert not at.exception
    assert metric(at, "Step") == str(per_epoch)
    assert chunks[:-1] == [expected] * (len(chunks) - 1) and 1 <= chunks[-1] <= expected


def test_a_pick_outlines_its_window_in_the_previous_stage():
    """conv2 map 3, cell (1, 2): a 5 x 5 window at rows 1-5, columns 2-6 of every pool1 map (no
    padding); its receptive field in the 16 x 16 input: pool1 rows 1-5 are conv1 rows 2-11, which
    (5 x 5, padding 2) read input rows 0-13 (2-2 = 0 up to 11 - 2 + 4 = 13), columns 2-6 -> 4-13 -> 2-15."""
    H = 4
    at = app({"lenet_pick": str(Cell("convb", 3 * H + 1, 2))})
    conv2 = chart_json(at, "conv2 + activation")
    assert ("x4", 0.5, 1.5, 1.5, 2.5) in outlines(conv2, HIGHLIGHT)
    pool1 = outlines(chart_json(at, "pool1"), READER)
    assert {s[0] for s in pool1} == {"x", "x2", "x3", "x4", "x5", "x6"}
    assert {s[1:] for s in pool1} == {(0.5, 5.5, 1.5, 6.5)}
    assert ("x", -0.5, 13.5, 1.5, 15.5) in outlines(chart_json(at, "Input"), READER)
    text = " ".join(m.value for m in at.markdown)
    assert "reads **150 values** of pool1" in text


def test_pool_pick_reads_its_own_channel():
    at = app({"lenet_pick": str(Cell("poola", 2 * 8 + 7, 5))})  # pool1 map 2, cell (7, 5)
    conv1 = outlines(chart_json(at, "conv1 + activation"), READER)
    assert [s[0] for s in conv1] == ["x3"]  # on map 2 only
    assert conv1[0][1:] == (13.5, 15.5, 9.5, 11.5)  # rows 14-15, columns 10-11


def test_a_pick_outside_the_stage_is_moved_inside():
    at = app({"lenet_pick": "poolb:999,9"})
    assert at.session_state["lenet_pick"] == Cell("poolb", 15 * 2 + 1, 1)  # last map, last cell


def test_the_test_digit_gets_ten_probabilities():
    at = app({"lenet_digit": "5"})
    probs = chart_json(at, "Prediction")
    bars = probs["data"][0]["y"]
    values = np.asarray(bars if isinstance(bars, list) else [], dtype=float)
    if values.size == 0:  # a typed array
        values = typed_array(bars)
    assert values.shape == (10,) and abs(values.sum() - 1) < 1e-5
    data = training.digits(16, 0)
    assert f"(label {int(data.y_test[5])})" in probs["layout"]["title"]["text"]


def test_digit_from_an_upload_is_cropped_and_scaled():
    """A dark 1 on white paper: inverted, its ink centred, 8 x 8 in 0..16 with the ink column bright."""
    planes = np.ones((3, 40, 30))
    planes[:, 5:35, 14:17] = 0.0  # a vertical bar
    digit = lenet.digit_from_planes(planes)
    assert digit.shape == (8, 8) and digit.max() == pytest.approx(16)
    assert digit[:, 3:5].mean() > 8 > digit[:, :2].mean()


def test_dense_layers_agree_with_the_prediction():
    """The logits' largest entry is the predicted digit (softmax keeps the order)."""
    at = app({"lenet_digit": "7"})
    dense = chart_json(at, "Dense layers")
    hidden = typed_array(dense["data"][0]["z"], float)
    logits = typed_array(dense["data"][1]["z"], float)
    assert hidden.shape == (1, 32) and (hidden >= 0).all()  # after relu
    assert logits.shape == (1, 10)
    title = chart_json(at, "Prediction")["layout"]["title"]["text"]
    assert title.startswith(f"Prediction: {int(np.argmax(logits))} ")


def test_sessions_with_the_same_network_and_pick_share_the_figures_and_a_new_pick_builds_anew():
    """A class on the LeNet page: a second session with the same network, digit and pick gets the
    figures built for the first (viz.memo), equal to them; another pick builds its own maps."""
    memo.clear()
    first = app({"lenet_pick": str(Cell("poola", 2 * 8 + 7, 5))})
    hits = memo.stats["hits"]
    second = app({"lenet_pick": str(Cell("poola", 2 * 8 + 7, 5))})
    assert not first.exception and not second.exception
    figures = [el.proto.spec for el in second.get("plotly_chart")]
    assert memo.stats["hits"] - hits >= len(figures) >= 8
    assert figures == [el.proto.spec for el in first.get("plotly_chart")]
    misses = memo.stats["misses"]
    third = app({"lenet_pick": str(Cell("poola", 3 * 8 + 1, 1))})
    assert not third.exception and memo.stats["misses"] > misses
    assert [el.proto.spec for el in third.get("plotly_chart")] != figures
