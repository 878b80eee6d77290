"""Decode user images safely: any odd format in, an upright RGB uint8 array (or a clear error) out.

No Streamlit here, so the rules can be tested directly. Uploaded bytes are decoded in memory;
the file name a user sends never touches the filesystem.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

MAX_PIXELS = 64_000_000  # an 8000 x 8000 photo is fine; a 50000 x 50000 "image" is refused unread
Image.MAX_IMAGE_PIXELS = (
    4 * MAX_PIXELS
)  # Pillow's own bomb check: a backstop behind ours (which names the size)
ALLOWED_FORMATS = ("PNG", "JPEG", "WEBP", "BMP", "TIFF", "GIF")  # JPEG also opens MPO photos
UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "bmp", "tif", "tiff", "gif"]


class ImageError(ValueError):
    """The upload cannot be used; the message says why in words a student understands."""


@dataclass
class LoadedImage:
    pixels: np.ndarray  # (H, W, 3) uint8, upright
    notes: list[str] = field(default_factory=list)  # what was done to it (downscaled, frame 1 of 12, ...)


def _to_rgb(im: Image.Image, notes: list[str]) -> Image.Image:
    """Every mode Pillow reads, as 8-bit RGB."""
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(im, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        scaled = (arr - lo) / (hi - lo) * 255 if hi > lo else np.zeros_like(arr)
        notes.append(f"{im.mode} image scaled from [{lo:g}, {hi:g}] to 8-bit")
        im = Image.fromarray(scaled.astype(np.uint8), mode="L")
    if im.mode == "P":
        im = im.convert("RGBA" if "transparency" in im.info else "RGB")
    if im.mode in ("RGBA", "LA", "PA"):
        rgba = im.convert("RGBA")
        if rgba.getextrema()[3][0] < 255:
            notes.append("transparent areas are shown on white")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        im = Image.alpha_composite(white, rgba)
    if im.mode == "CMYK":
        notes.append("CMYK converted to RGB")
    return im.convert("RGB")


def decode_image(data: bytes, max_side: int) -> LoadedImage:
    """Decode image bytes; downscale so the longer side is at most max_side.

    Raises ImageError for anything that is not a usable image: other file types, truncated or
    corrupt files, decompression bombs, zero-sized images.
    """
    notes: list[str] = []
    if not data:
        raise ImageError("the file is empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data), formats=ALLOWED_FORMATS)
            w, h = im.size
            if w < 1 or h < 1:
                raise ImageError(f"the image has no pixels ({w} x {h})")
            if w * h > MAX_PIXELS:
                raise ImageError(
                    f"the image declares {w} x {h} = {w * h:,} pixels, more than the limit of "
                    f"{MAX_PIXELS:,}; it was not decoded"
                )
            frames = getattr(im, "n_frames", 1)
            if frames > 1:
                im.seek(0)
                notes.append(f"first frame of {frames} shown")
            if im.format in ("JPEG", "MPO") and max(w, h) > 2 * max_side:
                im.draft("RGB", (max_side, max_side))  # decode a reduced JPEG: far less memory
            im.load()
            im = ImageOps.exif_transpose(im)
            im = _to_rgb(im, notes)
    except ImageError:
        raise
    except UnidentifiedImageError:
        raise ImageError(
            "this file is not an image Conv Explorer can read (PNG, JPEG, WebP, BMP, TIFF, GIF)"
        ) from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageError(f"the image is larger than the limit of {MAX_PIXELS:,} pixels") from None
    except (OSError, SyntaxError, ValueError, EOFError, MemoryError) as exc:
        raise ImageError(f"the image file is damaged or truncated ({type(exc).__name__})") from None
    if max(im.size) > max_side:
        im.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    if im.size != (w, h) and im.size != (h, w):  # (w, h) as stored; EXIF rotation may swap them
        notes.append(
            f"downscaled from {w} x {h} to {im.size[0]} x {im.size[1]} (working-size cap {max_side})"
        )
    return LoadedImage(np.asarray(im, dtype=np.uint8).copy(), notes)


def to_planes(pixels: np.ndarray, grey: bool) -> np.ndarray:
    """(H, W, 3) uint8 -> (C, H, W) float32 in [0, 1]; greyscale uses ITU-R 601 luma weights."""
    rgb = pixels.astype(np.float32) / 255.0
    if grey:
        luma = rgb @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
        return luma[None]
    return np.ascontiguousarray(rgb.transpose(2, 0, 1))


def to_display(planes: np.ndarray) -> np.ndarray:
    """(C, H, W) float in [0, 1] -> (H, W, 3) uint8 for showing and PNG downloads."""
    arr = np.clip(np.nan_to_num(planes), 0, 1)
    if arr.shape[0] == 1:
        arr = np.repeat(arr, 3, axis=0)
    elif arr.shape[0] == 2:
        arr = np.concatenate([arr, arr[:1]], axis=0)
    # C order: the figure memo hashes these pixels for every figure that shows them (viz/memo.py)
    return (arr[:3].transpose(1, 2, 0) * 255 + 0.5).astype(np.uint8, order="C")


def png_bytes(pixels: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()
