"""Draw the sample images in assets/ (all made here, released under CC0 1.0).

Run `python scripts/make_samples.py` to regenerate them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def shapes(size: int = 1024) -> Image.Image:
    """Flat coloured shapes with sharp edges (1024 px, for timing a full-size image)."""
    img = Image.new("RGB", (512, 512), (235, 232, 220))
    d = ImageDraw.Draw(img)
    d.rectangle([40, 60, 230, 250], fill=(200, 40, 40))
    d.ellipse([260, 50, 470, 260], fill=(40, 90, 200))
    d.polygon([(80, 470), (250, 290), (420, 470)], fill=(40, 160, 70))
    d.line([(20, 280), (500, 300)], fill=(20, 20, 20), width=6)
    for i in range(8):
        d.rectangle([300 + 24 * i, 330, 310 + 24 * i, 460], fill=(30, 30, 30))
    return img.resize((size, size), Image.Resampling.NEAREST)


def zone_plate(size: int = 512) -> Image.Image:
    """Rings of rising frequency: stride and dilation visibly alias the fine rings."""
    y, x = np.mgrid[-1 : 1 : size * 1j, -1 : 1 : size * 1j]
    r2 = x * x + y * y
    grey = 0.5 + 0.5 * np.cos(np.pi * 60 * r2)
    rgb = np.stack([grey, 0.6 * grey + 0.2, 1 - 0.7 * grey], axis=-1)
    return Image.fromarray((rgb * 255).astype(np.uint8))


def letters(size: int = 512) -> Image.Image:
    """Dark letters on a light gradient: thin strokes for sharpening and Laplacian."""
    grad = np.linspace(180, 250, size, dtype=np.float32)
    base = np.broadcast_to(grad[None, :, None], (size, size, 3)).astype(np.uint8)
    img = Image.fromarray(np.ascontiguousarray(base))
    d = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=110)
    d.text((40, 60), "CONV", fill=(20, 20, 60), font=font)
    d.text((40, 270), "GPU", fill=(120, 20, 20), font=font)
    return img


def checker(size: int = 256, cell: int = 16) -> Image.Image:
    """A black-and-white checkerboard: every pixel is an edge or a flat cell."""
    idx = (np.arange(size) // cell) % 2
    board = (idx[:, None] ^ idx[None, :]).astype(np.uint8) * 255
    return Image.fromarray(board, mode="L").convert("RGB")


SAMPLES = {"shapes.png": shapes, "zone_plate.png": zone_plate, "letters.png": letters, "checker.png": checker}

if __name__ == "__main__":
    ASSETS.mkdir(exist_ok=True)
    for name, draw in SAMPLES.items():
        draw().save(ASSETS / name, optimize=True)
        print("wrote", ASSETS / name)
