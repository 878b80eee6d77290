"""Hostile and unusual uploads: each gives a clear message or a sensible image, never a crash.

All fixtures are generated here with Pillow; nothing is downloaded.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np
import pytest
from PIL import Image

from ui.images import MAX_PIXELS, ImageError, decode_image


def encode(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, format=fmt, **kw)
    return buf.getvalue()


def png_header_only(w: int, h: int) -> bytes:
    """A tiny PNG that declares w x h pixels (a decompression bomb's calling card)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def gradient(w: int, h: int) -> Image.Image:
    x = (np.arange(w) % 256).astype(np.uint8)[None, :]
    y = (np.arange(h) % 256).astype(np.uint8)[:, None]
    rgb = np.empty((h, w, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = x, y, x + y  # uint8 sums wrap: (x + y) % 256
    return Image.fromarray(rgb)


@pytest.mark.parametrize(
    "data,message",
    [
        (b"just some text, not an image\n" * 10, "not an image Conv Explorer can read"),
        (b"%PDF-1.7\n1 0 obj << >> endobj\n", "not an image Conv Explorer can read"),
        (b"", "the file is empty"),
        (png_header_only(50000, 50000), "larger than the limit"),
        (png_header_only(9000, 8000), "declares 9000 x 8000 = 72,000,000 pixels"),
    ],
    ids=["text", "pdf", "empty", "bomb-50000", "over-limit"],
)
def test_unusable_files_are_refused_with_a_reason(data, message):
    with pytest.raises(ImageError, match=message):
        decode_image(data, 256)


def test_zip_renamed_png_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "hello")
    with pytest.raises(ImageError, match="not an image"):
        decode_image(buf.getvalue(), 256)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_truncated_files_are_refused(fmt):
    data = encode(gradient(200, 150), fmt)
    with pytest.raises(ImageError, match="damaged or truncated"):
        decode_image(data[: len(data) // 2], 256)


def test_corrupt_png_checksum_is_refused():
    data = bytearray(encode(gradient(40, 30), "PNG"))
    data[60] ^= 0xFF  # inside the IDAT stream
    with pytest.raises(ImageError):
        decode_image(bytes(data), 256)


def test_huge_real_jpeg_is_downscaled_to_the_cap():
    data = encode(gradient(8000, 6000), "JPEG", quality=60)
    out = decode_image(data, 512)
    assert out.pixels.shape == (384, 512, 3)
    assert any("downscaled from" in n for n in out.notes)
    assert MAX_PIXELS >= 8000 * 6000


def test_sixteen_bit_greyscale_is_scaled_to_eight_bits():
    arr = (np.arange(64 * 32, dtype=np.uint16).reshape(32, 64) * 30).astype(np.uint16)
    out = decode_image(encode(Image.fromarray(arr), "PNG"), 256)
    assert out.pixels.shape == (32, 64, 3) and out.pixels.dtype == np.uint8
    assert out.pixels.min() == 0 and out.pixels.max() == 255
    assert any("scaled" in n for n in out.notes)


def test_palette_image_keeps_its_colours():
    im = gradient(30, 20).convert("P", palette=Image.Palette.ADAPTIVE, colors=16)
    out = decode_image(encode(im, "PNG"), 256)
    np.testing.assert_array_equal(out.pixels, np.asarray(im.convert("RGB")))


def test_rgba_transparency_is_composited_on_white():
    rgba = np.zeros((10, 10, 4), np.uint8)
    rgba[..., 0] = 200
    rgba[:5, :, 3] = 255  # top half opaque red, bottom half fully transparent
    out = decode_image(encode(Image.fromarray(rgba, "RGBA"), "PNG"), 256)
    assert tuple(out.pixels[0, 0]) == (200, 0, 0)
    assert tuple(out.pixels[9, 9]) == (255, 255, 255)
    assert any("transparent" in n for n in out.notes)


def test_cmyk_jpeg_becomes_rgb():
    im = Image.new("CMYK", (16, 8), (0, 255, 255, 0))  # pure red in CMYK
    out = decode_image(encode(im, "JPEG"), 256)
    r, g, b = (int(v) for v in out.pixels[4, 8])
    assert r > 200 and g < 60 and b < 60


def test_exif_rotated_photo_is_shown_upright():
    im = gradient(40, 20)  # stored landscape
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 degrees clockwise to display
    out = decode_image(encode(im, "JPEG", exif=exif.tobytes()), 256)
    assert out.pixels.shape[:2] == (40, 20)  # shown portrait


@pytest.mark.parametrize("size", [(1, 1), (1, 9), (9, 1)])
def test_tiny_images_load(size):
    out = decode_image(encode(gradient(*size), "PNG"), 256)
    assert out.pixels.shape == (size[1], size[0], 3)


def test_animated_gif_uses_the_first_frame():
    frames = [Image.new("RGB", (12, 10), c) for c in ((255, 0, 0), (0, 255, 0), (0, 0, 255))]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    out = decode_image(buf.getvalue(), 256)
    assert out.pixels[5, 5, 0] > 200 and out.pixels[5, 5, 1] < 50
    assert any("first frame of 3" in n for n in out.notes)


@pytest.mark.parametrize("fmt", ["WEBP", "BMP", "TIFF"])
def test_other_formats_load(fmt):
    out = decode_image(encode(gradient(20, 10), fmt), 256)
    assert out.pixels.shape == (10, 20, 3)
