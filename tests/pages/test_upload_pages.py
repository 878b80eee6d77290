"""Every hostile or odd upload through the real page (AppTest's file uploader): the message is
shown in the sidebar, and the page still computes and draws afterwards."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from PIL import Image

from tests.pages.test_uploads import encode, gradient, png_header_only
from tests.support.apptest import assert_clean, expected_out, latex_results, open_page


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "hello")
    return buf.getvalue()


def _gif() -> bytes:
    frames = [Image.new("RGB", (12, 10), c) for c in ((255, 0, 0), (0, 255, 0))]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    return buf.getvalue()


def _exif_rotated() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6
    return encode(gradient(40, 20), "JPEG", exif=exif.tobytes())


pytestmark = pytest.mark.usefixtures("numpy_backend")


def upload(data: bytes, name: str = "upload.png"):
    at = open_page("direct", state=dict(source="upload", cap=64))
    at.sidebar.file_uploader[0].set_value((name, data, "image/png"))
    at.run()
    return at


BAD = {
    "text": (b"plain text, not an image\n" * 20, "not an image Conv Explorer can read"),
    "pdf": (b"%PDF-1.7\n1 0 obj << >> endobj\n", "not an image Conv Explorer can read"),
    "zip-renamed-png": (_zip(), "not an image Conv Explorer can read"),
    "truncated-png": (encode(gradient(200, 150), "PNG")[:400], "damaged or truncated"),
    "truncated-jpeg": (encode(gradient(200, 150), "JPEG")[:600], "damaged or truncated"),
    "bomb-50000x50000": (png_header_only(50000, 50000), "larger than the limit"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_upload_shows_why_and_the_page_keeps_working(name):
    data, message = BAD[name]
    at = upload(data)
    assert_clean(at)
    errors = " ".join(e.value for e in at.sidebar.error)
    assert message in errors and "Showing the sample image instead" in errors
    # the page still works on the sample: the output formula is filled in (64 px working size)
    assert latex_results(at)[:2] == ["64", "64"]
    assert any("sample: shapes" in c.value for c in at.sidebar.caption)


GOOD = {
    "huge-jpeg-8000x6000": (
        encode(gradient(8000, 6000), "JPEG", quality=50),
        (64, 48),
        "downscaled from 8000 x 6000",
    ),
    "16-bit-grey": (
        encode(Image.fromarray((np.arange(40 * 30).reshape(30, 40) * 50).astype(np.uint16)), "PNG"),
        (40, 30),
        "scaled from",
    ),
    "palette": (
        encode(gradient(30, 20).convert("P", palette=Image.Palette.ADAPTIVE, colors=8), "PNG"),
        (30, 20),
        None,
    ),
    "rgba-transparent": (
        encode(Image.new("RGBA", (16, 12), (255, 0, 0, 0)), "PNG"),
        (16, 12),
        "transparent areas",
    ),
    "cmyk-jpeg": (encode(Image.new("CMYK", (16, 8), (0, 255, 255, 0)), "JPEG"), (16, 8), "CMYK"),
    "exif-rotated": (_exif_rotated(), (20, 40), None),
    "1x1": (encode(gradient(1, 1), "PNG"), (1, 1), None),
    "1x9": (encode(gradient(1, 9), "PNG"), (1, 9), None),
    "animated-gif": (_gif(), (12, 10), "first frame of 2"),
}


@pytest.mark.parametrize("name", list(GOOD))
def test_odd_but_valid_upload_is_used(name):
    data, (w, h), note = GOOD[name]
    at = upload(data)
    assert_clean(at)
    assert not at.sidebar.error
    assert any(f"your upload: {w} x {h} px" in c.value for c in at.sidebar.caption)
    if note:
        assert any(note in i.value for i in at.sidebar.info)
    # default 3x3 kernel, stride 1, padding 1 keeps the size (even 1 px: 1 + 2 = 3 cells fit the window)
    assert latex_results(at)[:2] == [str(expected_out(h, 3, 1, 1, 1)), str(expected_out(w, 3, 1, 1, 1))]
