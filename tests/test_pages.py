"""Every page driven through streamlit.testing.v1.AppTest: defaults, extremes, invalid geometry, URLs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require

require("streamlit", "the app's page tests")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = {
    "direct": "pages/conv2d.py",
    "im2col": "pages/im2col.py",
    "unfold": "pages/unfold_fold.py",
    "reflect": "pages/reflect_pad.py",
    "backward": "pages/conv_backward.py",
    "bench": "pages/benchmarks.py",
}


@pytest.fixture(autouse=True)
def cpu_backend(monkeypatch):
    from gpuops import backend

    monkeypatch.setenv("CONV_EXPLORER_BACKEND", "numpy")
    backend.reset_backend()
    yield
    backend.reset_backend()


def app(page: str | None = None, query: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()  # the entry point first, as a browser does
    if page:
        for k, v in (query or {}).items():
            at.query_params[k] = v
        at.switch_page(PAGES[page])
        at.run()
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def latex_text(at: AppTest) -> str:
    return " ".join(el.value for el in at.get("latex"))


def latex_results(at: AppTest) -> list[str]:
    """The right-most value of each formula shown (what the formula evaluates to)."""
    return [re.split(r"=\s*", el.value.strip().strip("$").strip())[-1].strip() for el in at.get("latex")]


def expected_out(size: int, k: int, s: int, p: int, d: int) -> int:
    """Independent output size: count window starts that fit in the padded input."""
    return len(range(0, size + 2 * p - (d * (k - 1) + 1) + 1, s))


@pytest.mark.parametrize("page", [None, *PAGES])
def test_every_page_runs_with_defaults(page):
    at = app(page)
    assert_clean(at)
    assert not errors(at)
    assert at.title, "every page has a title"


def test_backend_badge_says_cpu_and_why():
    at = app()
    texts = " ".join(w.value for w in at.sidebar.warning)
    assert (
        "CPU / NumPy" in texts
        and "timings are CPU timings" in texts
        and "CONV_EXPLORER_BACKEND=numpy" in texts
    )


@pytest.mark.parametrize(
    "preset",
    ["identity", "box blur", "Gaussian", "sharpen", "Laplacian edge", "Sobel x", "Sobel y", "emboss"],
)
@pytest.mark.parametrize("k,stride,pad,dil,mode,mix", [(1, 1, 0, 1, "zeros", False), (15, 8, 15, 5, "reflect", True),
                                                       (4, 3, 2, 2, "zeros", False)])  # fmt: skip
def test_direct_presets_and_sliders_at_extremes(preset, k, stride, pad, dil, mode, mix):
    at = app("direct", state=dict(cap=64, dc_preset=preset, dc_k=k, dc_stride=stride, dc_pad=pad, dc_dil=dil,
                                  dc_mode=mode, dc_mix=mix))  # fmt: skip
    assert_clean(at)
    kk = 3 if preset in ("sharpen", "Laplacian edge", "Sobel x", "Sobel y", "emboss") else k
    h = expected_out(64, kk, stride, pad, dil)
    if h <= 0 or (mode == "reflect" and pad >= 64):
        assert errors(at)
    else:
        assert not errors(at), errors(at)
        assert latex_results(at)[:2] == [str(h), str(h)]


def test_output_shape_formula_shows_independent_values():
    at = app("direct", state=dict(cap=64, dc_k=5, dc_stride=2, dc_pad=1, dc_dil=2))
    assert_clean(at)
    h = expected_out(64, 5, 2, 1, 2)  # (64 + 2 - 9) // 2 + 1 = 29
    assert h == 29
    assert latex_results(at)[:2] == [str(h), str(h)]
    assert "Sum of products" in [m.label for m in at.metric]


def test_sum_of_products_equals_the_kernel_output():
    at = app("direct", state=dict(cap=32, dc_preset="Sobel x", dc_row=5, dc_col=7))
    assert_clean(at)
    total = float(at.metric[0].value)
    wrote = float(re.search(r"wrote (-?[\d.]+)", " ".join(c.value for c in at.caption)).group(1))
    assert abs(total - wrote) < 1e-4


def test_invalid_geometry_shows_the_error_and_the_page_lives_on():
    at = app("direct", state=dict(cap=32, dc_k=15, dc_dil=5, dc_pad=0))
    assert_clean(at)
    assert any("kernel height 15 with dilation 5 spans 71 cells" in e for e in errors(at))
    # the sidebar still works: a different size makes it valid again
    at.session_state["cap"] = 128
    at.run()
    assert_clean(at)
    assert not errors(at)


def test_reflect_padding_at_the_image_side_is_refused_with_a_message():
    at = app("direct", state=dict(cap=32, dc_mode="reflect", dc_pad=15, dc_k=3))
    assert_clean(at)
    assert not errors(at)  # 15 < 32 is fine
    at = app(
        "direct",
        state=dict(
            cap=32, grey=True, dc_mode="reflect", dc_pad=15, dc_k=1, source="sample", sample="checkerboard"
        ),
    )
    assert_clean(at)


def test_custom_kernel_with_an_empty_cell_is_rejected():
    cells = [[0.0, 1.0, 0.0], [1.0, float("nan"), 1.0], [0.0, 1.0, 0.0]]
    at = app("direct", state=dict(dc_preset="custom", dc_k=3, custom_cells=cells))
    assert_clean(at)
    assert any("custom kernel cell (row 1, column 1) is empty" in e for e in errors(at))


def test_hostile_query_parameters_are_ignored_or_clamped_with_a_notice():
    at = app("direct", query={"dc_k": "<script>alert(1)</script>", "dc_stride": "-4", "dc_pad": "9999999",
                              "dc_mode": "circular", "dc_preset": "x" * 500, "cap": "abc"})  # fmt: skip
    assert_clean(at)
    notices = " ".join(w.value for w in at.warning)
    assert "not a whole number" in notices and "out of range" in notices and "too long" in notices
    assert "<script>" not in notices  # the value is quoted, never rendered as HTML
    assert at.session_state["dc_stride"] == 1 and at.session_state["dc_pad"] == 15


def test_settings_travel_in_the_url():
    at = app("direct", query={"dc_k": "5", "dc_stride": "2", "dc_mode": "reflect"})
    assert_clean(at)
    assert at.session_state["dc_k"] == 5 and at.session_state["dc_mode"] == "reflect"
    assert at.query_params["dc_k"] == ["5"] or at.query_params["dc_k"] == "5"


def test_im2col_page_reproduces_pmpp_and_the_expansion_ratio():
    at = app("im2col", state=dict(cap=64, im_img_k=5))
    assert_clean(at)
    assert any("PMPP's example" in s.value for s in at.success)
    ratio = float(next(m.value for m in at.metric if m.label == "Expansion ratio"))
    # 64 x 64 image, K=5, padding 2, stride 1: H_out = W_out = 64, ratio = 25 * 64 * 64 / (64 * 64) = 25
    assert ratio == pytest.approx(25.0)
    unroll = next(m.value for m in at.metric if m.label == "X_unroll (float32)")
    assert unroll == f"{4 * 3 * 25 * 64 * 64 / 2**20:.2f} MiB"


def test_im2col_small_example_at_extremes():
    for c, n, k, m, s, p in [(1, 2, 1, 1, 1, 0), (3, 6, 4, 3, 3, 2), (2, 2, 4, 1, 1, 0)]:
        at = app("im2col", state=dict(im_c=c, im_n=n, im_k=k, im_m=m, im_stride=s, im_pad=p))
        assert_clean(at)
        valid = n + 2 * p >= 4 * 1 - 1 + 1 if k == 4 else True
        assert bool(errors(at)) == (not valid)


def test_unfold_page_counts_patches_independently():
    at = app("unfold", state=dict(cap=48, uf_k=4, uf_stride=3, uf_pad=2, uf_dil=2))
    assert_clean(at)
    n = expected_out(48, 4, 3, 2, 2)
    text = " ".join(md.value for md in at.markdown)
    assert f"{n} x {n} = {n * n} patches" in text
    assert next(m.value for m in at.metric if m.label.startswith("Max |restored")) == "0.00e+00"


def test_unfold_page_extremes_and_invalid():
    at = app("unfold", state=dict(cap=32, uf_k=9, uf_stride=6, uf_pad=4, uf_dil=4))
    assert_clean(at)
    assert any("spans 33 cells" in e for e in errors(at))
    at = app("unfold", state=dict(cap=32, uf_k=1, uf_stride=1, uf_pad=0, uf_dil=1, uf_crop=24))
    assert_clean(at)
    assert not errors(at)


@pytest.mark.parametrize("h,w,pads", [(1, 1, (0, 0, 0, 0)), (8, 8, (7, 7, 7, 7)), (4, 5, (4, 2, 2, 1))])
def test_reflect_page_grid_extremes(h, w, pads):
    l, r, t, b = pads
    at = app(
        "reflect",
        state=dict(rp_h=h, rp_w=w, rp_left=l, rp_right=r, rp_top=t, rp_bottom=b, rp_img_pad=256, cap=32),
    )
    assert_clean(at)
    # pad 256 on a 32-pixel image is refused by reflect_pad, with the limit in the message
    assert any("must be smaller than the input width 32" in e for e in errors(at))


def test_reflect_formula_matches_numpy_reflect():
    at = app("reflect", state=dict(rp_w=5, rp_left=3))
    assert_clean(at)
    # padded column 0 with left pad 3 is input column 3 (np.pad mirrors without the edge)
    src = int(np.pad(np.arange(5), (3, 0), mode="reflect")[0])
    assert latex_results(at)[-1] == str(src)


def test_upload_of_a_non_image_shows_a_message_and_falls_back():
    from ui.images import ImageError, decode_image

    with pytest.raises(ImageError):
        decode_image(b"%PDF-1.4 not an image", 256)


@pytest.mark.parametrize("algo", ["auto", "direct", "tiled", "im2col", "implicit_gemm"])
def test_direct_page_runs_every_algorithm_and_names_the_one_that_ran(algo):
    at = app("direct", state=dict(cap=48, dc_algo=algo))
    assert_clean(at)
    ran = "direct" if algo == "auto" else algo  # auto on the CPU is direct
    assert any(f"**{ran}**" in c.value for c in at.caption)
