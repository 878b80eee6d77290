"""The custom kernel: typed text and link text parsed as a whole (never evaluated, never padded,
cropped or silently rounded), and the Direct page's editor keeping the last valid kernel.

Expected values are written out here or computed with NumPy from the typed numbers."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import errors, open_page
from ui.kernel_param import (
    KernelParam,
    flipped,
    from_text,
    from_typed,
    normalised,
    rounding_notes,
    to_text,
    to_typed,
)

pytestmark = pytest.mark.usefixtures("numpy_backend")


# ---- parsing what a person types ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    ["1 2 1; 2 4 2; 1 2 1", "1,2,1\n2,4,2\n1,2,1", "  1  2 1 ;2 4 2;\n1 2 1;\n", "2/2 4/2 1; 2 4 2; 1 2 1"],
)
def test_the_same_kernel_however_it_is_typed(text):
    assert from_typed(text) == ((1, 2, 1), (2, 4, 2), (1, 2, 1))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1 2 1; 2 x 2; 1 2 1", "row 2, value 2: 'x' is not a number"),
        ("1 2 1; 2 4 2; 1 2", "row 3 has 2 values, row 1 has 3"),
        ("1,,1; 1 1 1; 1 1 1", "row 1, value 2 is empty"),
        ("1 1; ; 1 1", "row 2 is empty"),
        ("", "the kernel is empty"),
        ("1e30 0; 0 1", "'1e30' is outside -1e6 .. 1e6"),
        ("12345678901234567890 0; 0 1", "is outside -1e6 .. 1e6"),
        ("1 2 3; 4 5 6", "the kernel is 2 x 3; it must be square"),
        ("1/0", "'1/0' divides by zero"),
        ("1e-60", "too small for float32"),
        ("nan", "'nan' is not a number"),
        ("inf", "'inf' is not a number"),
        ("__import__('os')", "is not a number"),
        ("1" + "0" * 30, "longer than 24 characters"),
        ("; ".join([" ".join(["1"] * 16)] * 16), "16 rows: a kernel has at most 15"),
    ],
)
def test_a_bad_text_is_refused_saying_where_and_why(text, reason):
    with pytest.raises(ValueError, match=None) as caught:
        from_typed(text)
    assert reason in str(caught.value)


def test_every_size_up_to_15_and_the_text_round_trips():
    rng = np.random.default_rng(7)
    for k in range(1, 16):
        weights = rng.normal(size=(k, k)).astype(np.float32)
        cells = tuple(tuple(float(v) for v in row) for row in weights)
        assert from_typed(to_typed(cells)) == cells  # exact: the text reads back as the same float32
        assert from_text(to_text(cells)) == cells


def test_float32_rounding_is_said_not_hidden():
    assert rounding_notes("0.1 0.5; 0.25 1e-3") == []  # each reads back as typed
    assert rounding_notes("0.123456789 1; 1 1") == ["0.123456789 is 0.12345679 in float32"]


def test_normalise_and_flip():
    typed = from_typed("1 2 1; 2 4 2; 1 2 1")
    assert np.allclose(normalised(typed), np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16)
    with pytest.raises(ValueError, match="sum to 0"):
        normalised(from_typed("-1 0 1; -2 0 2; -1 0 1"))
    assert flipped(from_typed("1 2 3; 4 5 6; 7 8 9")) == ((9, 8, 7), (6, 5, 4), (3, 2, 1))


# ---- a link's kernel ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("1,2,3_4,5,6", "must be square"),  # once padded to 3 x 3 with a zero row
        ("0,,1_1,1,1_1,1,1", "is empty"),
        ("1,2_import,os", "is not a number"),
        ("1e30", "is outside"),
    ],
)
def test_a_link_kernel_that_does_not_fit_is_refused_with_a_notice(raw, reason):
    value, notice = KernelParam("direct_kernel", None).parse(raw)
    assert value is None and reason in notice and "ignored" in notice


# ---- the editor on the Direct page -------------------------------------------------------------------------
def editor_text(at) -> str:
    return at.text_area(key="w_direct_kernel_text").value


def weights_shown(at) -> np.ndarray:
    from tests.pages.test_pages_conv2d import array, figures

    return array(figures(at)["direct_kernel"]["data"][0]["z"])


def test_the_editor_keeps_the_last_valid_kernel_and_recovers():
    at = open_page("direct", state=dict(direct_preset="custom"))
    at.text_area(key="w_direct_kernel_text").set_value("1 2 1; 2 4 2; 1 2 1").run()
    good = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    assert np.allclose(weights_shown(at), good) and at.query_params["direct_kernel"] == "1,2,1_2,4,2_1,2,1"
    for bad, why in [
        ("1 2 1; 2 x 2; 1 2 1", "'x' is not a number"),
        ("1 2 1; 2 4 2; 1 2", "row 3 has 2 values"),
        ("1e30 2 1; 2 4 2; 1 2 1", "outside -1e6 .. 1e6"),
    ]:
        at.text_area(key="w_direct_kernel_text").set_value(bad).run()
        shown = " ".join(errors(at))
        assert why in shown and "Still using the last valid kernel (3 x 3)" in shown
        assert editor_text(at) == bad  # what was typed stays, to be fixed
        assert (
            np.allclose(weights_shown(at), good) and at.query_params["direct_kernel"] == "1,2,1_2,4,2_1,2,1"
        )
    at.text_area(key="w_direct_kernel_text").set_value(
        "0 1 0 0 0; 0 0 0 0 0; 0 0 0 0 0; 0 0 0 0 0; 0 0 0 0 2"
    ).run()
    assert not errors(at)  # a valid text after bad ones is used: K follows it
    assert at.session_state["direct_k"] == 5 and at.slider(key="w_direct_k").proto.disabled
    expected = np.zeros((5, 5))
    expected[0, 1], expected[4, 4] = 1, 2
    assert np.allclose(weights_shown(at), expected)


def test_normalise_and_flip_buttons_rewrite_the_box():
    at = open_page("direct", state=dict(direct_preset="custom"))
    at.text_area(key="w_direct_kernel_text").set_value("1 2 3; 4 5 6; 7 8 9").run()
    at.button(key="direct_kernel_flip").click().run()
    assert editor_text(at) == "9 8 7\n6 5 4\n3 2 1"
    assert np.allclose(weights_shown(at), [[9, 8, 7], [6, 5, 4], [3, 2, 1]])
    at.button(key="direct_kernel_normalise").click().run()
    assert np.allclose(weights_shown(at), np.array([[9, 8, 7], [6, 5, 4], [3, 2, 1]]) / 45)
    at.text_area(key="w_direct_kernel_text").set_value("-1 0 1; -2 0 2; -1 0 1").run()
    at.button(key="direct_kernel_normalise").click().run()
    assert any("sum to 0" in e for e in errors(at))
    assert np.allclose(weights_shown(at), [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])


def test_a_5x5_link_kernel_sets_k_and_a_2x3_one_is_refused():
    at = open_page(
        "direct", query={"direct_preset": "custom", "direct_kernel": "_".join([",".join(["1"] * 5)] * 5)}
    )
    assert at.session_state["direct_k"] == 5 and np.allclose(weights_shown(at), np.ones((5, 5)))
    at = open_page(
        "direct", query={"direct_preset": "custom", "direct_k": "3", "direct_kernel": "1,2,3_4,5,6"}
    )
    assert any("must be square" in w.value for w in at.warning)
    assert weights_shown(at).shape == (3, 3)


def test_custom_starts_from_the_preset_on_screen():
    at = open_page("direct", state=dict(direct_preset="Gaussian", direct_k=5))
    at.selectbox(key="w_direct_preset").set_value("custom").run()
    at.run()
    from gpuops import filters

    assert np.allclose(weights_shown(at), filters.preset_kernel("Gaussian", 5))
