"""The Direct page's precision ladder and padding "same", through AppTest on the NumPy backend.

Expected values are computed here: a float64 convolution written as plain loops over the taps,
operands rounded to a given number of mantissa bits with frexp, PyTorch's "same" split by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support.apptest import AppTest, latex_results, open_page
from ui import budget
from ui import precision_view as precision
from ui.records import Conv

pytestmark = pytest.mark.usefixtures("numpy_backend")

MANTISSA_BITS = {"fp32": 23, "tf32": 10, "bf16": 7, "fp16": 10}


def app(state: dict) -> AppTest:
    return open_page("pages/direct.py", None, state)


def conv64(planes: np.ndarray, kernel: np.ndarray, pads: tuple[int, int, int, int]) -> np.ndarray:
    """Each channel filtered on its own (the page's default, mix off), zeros padding, stride 1,
    in float64, tap by tap: out[c, i, j] = sum_ki,kj x_pad[c, i + ki, j + kj] * k[ki, kj]."""
    top, bottom, left, right = pads
    x = np.pad(planes.astype(np.float64), ((0, 0), (top, bottom), (left, right)))
    k = kernel.astype(np.float64)
    kh, kw = k.shape
    h, w = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    out = np.zeros((planes.shape[0], h, w))
    for ki in range(kh):
        for kj in range(kw):
            out += x[:, ki : ki + h, kj : kj + w] * k[ki, kj]
    return out


def rounded(a: np.ndarray, bits: int) -> np.ndarray:
    """a with `bits` stored mantissa bits, to nearest (frexp: a = m * 2**e, 0.5 <= |m| < 1)."""
    m, e = np.frexp(np.asarray(a, dtype=np.float64))
    return np.ldexp(np.round(m * 2.0 ** (bits + 1)) / 2.0 ** (bits + 1), e)


def rel(y: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))


def ladder_table(at: AppTest):
    found = [d.value for d in at.dataframe if "relative error" in d.value.columns]
    assert found, "the ladder's table is shown"
    return found[0]


def figures(at: AppTest) -> dict[str, dict]:
    out = {}
    for c in at.get("plotly_chart"):
        key = c.proto.id.split("-", 2)[-1]
        out[key.removeprefix("chart_").removeprefix("fig_")] = json.loads(c.proto.spec)
    return out


def test_the_ladder_times_four_precisions_with_errors_against_float64():
    at = app(dict(cap=48, direct_preset="box blur", direct_k=5, direct_pad=2))
    assert "Compare precisions" in [b.label for b in at.button], "nothing is timed until asked"
    assert not [d for d in at.dataframe if "relative error" in d.value.columns]
    next(b for b in at.button if b.label == "Compare precisions").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = ladder_table(at)
    assert list(table["precision"]) == ["FP32", "TF32", "BF16", "FP16"]
    assert list(table["algorithm"])[1:] == ["pipelined_tf32", "pipelined_bf16", "pipelined_fp16"]
    planes = at.session_state["image"].planes
    kernel = np.full((5, 5), 1 / 25, np.float32)
    ref = conv64(planes, kernel, (2, 2, 2, 2))
    for _, row in table.iterrows():
        bits = MANTISSA_BITS[row["precision"].lower()]
        want = conv64(rounded(planes, bits), rounded(kernel, bits), (2, 2, 2, 2))
        assert row["relative error"] == pytest.approx(rel(want, ref), rel=0.05, abs=2e-7)
        assert row["max |error|"] == pytest.approx(np.abs(want - ref).max(), rel=0.05, abs=1e-6)
        assert row["ms"] > 0 and row["GFLOP/s"] > 0
    # a reduced precision bounds its error: 2**-(bits+1) per rounded operand, twice (x and w)
    for _, row in table.iloc[1:].iterrows():
        assert row["relative error"] <= 2 * 2.0 ** -(MANTISSA_BITS[row["precision"].lower()] + 1)
    errors = dict(zip(table["precision"], table["relative error"], strict=True))
    assert errors["FP32"] < 1e-6 < errors["TF32"] < errors["BF16"]
    # the kernels the GPU runs for this depthwise layer (3 channels, one filter each): v8 (16-byte
    # copies, stride-1 rows) for TF32 and v9 for 16-bit operands, 64 x 64 tiles
    kernels = list(table["kernel (version, tile)"])
    assert kernels[1] == "conv2d_v8_tf32_64x64 (v8, tile 64 x 64)"
    assert kernels[2:] == [
        "conv2d_v9_bf16_64x64 (v9, tile 64 x 64)",
        "conv2d_v9_fp16_64x64 (v9, tile 64 x 64)",
    ]
    assert "cuDNN ms" not in table.columns, "no cuDNN on a CPU server (the caption says so)"
    assert next(d for d in at.dataframe if "relative error" in d.value.columns).proto.placeholder == "—"
    text = " ".join(c.value for c in at.caption)
    assert "the times are those of the NumPy twins on this CPU" in text and "cuDNN: no GPU here" in text
    # the figure draws the table's rates and errors
    fig = figures(at)["direct_ladder"]
    bars = next(t for t in fig["data"] if t["type"] == "bar" and t["name"] == "ours")
    assert bars["x"] == pytest.approx(list(table["GFLOP/s"]))
    dots = next(t for t in fig["data"] if t["type"] == "scatter" and t["name"] == "ours")
    assert dots["x"] == pytest.approx(list(table["relative error"]))


def test_missing_values_read_as_a_dash():
    frame = precision.table(
        precision.Ladder(
            (precision.Rung("tf32", "pipelined_tf32", "", "", "", None, None, None, None, note="refused"),),
            False,
            "",
            "no GPU",
        )
    )
    html = precision.styled(frame).to_html()
    assert "—" in html and "None" not in html and "nan" not in html


def test_the_ladder_keeps_to_the_budget(monkeypatch):
    """With a budget nothing fits, every precision says why it was not timed and no error is
    computed: a refusal in words, not a stall."""
    at = app(dict(cap=32))
    conv: Conv = at.session_state["_dc_conv"]
    monkeypatch.setattr(budget, "CPU_SECONDS", 1e-9)
    ladder = precision.measure_ladder(at.session_state["image"].planes, conv)
    assert [r.ms for r in ladder.rungs] == [None] * 4
    assert "over the budget" in ladder.rungs[0].note
    assert all("this comparison used its" in r.note for r in ladder.rungs[1:]), "the share is spent"
    assert "float64 reference would take" in ladder.reference_note
    assert any("was not timed" in c for c in precision.captions(ladder))


def test_same_padding_keeps_the_size_and_says_where_the_odd_cell_goes():
    at = app(dict(cap=40, direct_preset="box blur", direct_k=4, direct_same=True))
    assert not at.error, [e.value for e in at.error]
    planes = at.session_state["image"].planes
    _, H, W = planes.shape
    assert f"Output: {W} x {H}" in at.expander[0].label
    assert latex_results(at)[:2] == [str(H), str(W)]
    assert f"({H} + 1 + 2 − 1·(4−1) − 1)" in at.expander[0].label, "one row before, two after"
    conv: Conv = at.session_state["_dc_conv"]
    want = conv64(planes, np.full((4, 4), 1 / 16, np.float32), (1, 2, 1, 2))  # PyTorch's split of 3
    assert np.allclose(conv.out, want, atol=1e-5)
    text = " ".join(c.value for c in at.caption)
    assert "asymmetric" in text and "1 top, 2 bottom, 1 left, 2 right" in text
    # Compare algorithms times the same asymmetric layer (every algorithm's output has this size)
    next(b for b in at.button if b.label == "Compare algorithms").click().run()
    assert not at.exception and not [c.value for c in at.caption if "was not timed" in c.value]


def test_same_padding_with_an_odd_kernel_is_symmetric():
    at = app(dict(cap=40, direct_preset="box blur", direct_k=5, direct_dil=2, direct_same=True))
    text = " ".join(c.value for c in at.caption)
    assert "4 top, 4 bottom, 4 left, 4 right" in text and "asymmetric" not in text


def test_same_padding_with_a_stride_is_refused_in_words():
    at = app(
        dict(cap=40, direct_preset="box blur", direct_k=3, direct_stride=2, direct_pad=1, direct_same=True)
    )
    refused = " ".join(e.value for e in at.error)
    assert "Padding 'same' needs stride 1" in refused and "P = 1 instead" in refused
    _, H, W = at.session_state["image"].planes.shape
    h, w = (len(range(0, n + 2 - 3 + 1, 2)) for n in (H, W))  # the slider's padding, stride 2
    assert latex_results(at)[:2] == [str(h), str(w)]
