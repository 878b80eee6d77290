"""The sidebar every page shares: image source, colour mode, working-size cap, backend badge."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

import gpuops
from ui import state
from ui.images import UPLOAD_TYPES, ImageError, decode_image, to_planes
from ui.state import Param

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SAMPLES = {
    "shapes": "shapes.png",
    "zone plate": "zone_plate.png",
    "letters": "letters.png",
    "checkerboard": "checker.png",
}
CAP_OPTIONS = [32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
SOURCE = Param("source", "sample", "Image source", "radio", choices=("sample", "upload"))
SAMPLE = Param(
    "sample",
    "shapes",
    "Sample image",
    "select",
    choices=tuple(SAMPLES),
    help="Used when no upload is chosen. Licence: assets/LICENSE.md (CC0).",
)
GREY = Param("grey", False, "Greyscale (1 channel)", "toggle")
CAP = Param(
    "cap",
    256,
    "Working size (longest side, px)",
    "select_slider",
    lo=32,
    hi=1024,
    choices=tuple(CAP_OPTIONS),
    help="Larger images are downscaled to this size before any computation.",
)
PRESENT = Param(
    "pres",
    False,
    "Presentation mode",
    "toggle",
    help="Every text of the page and the figures sized for a projector, thick highlights; kept in the link. "
    "On every page, in either mode: space plays or pauses the animation in view, the arrow keys (or a "
    "presenter remote's Page Up / Page Down) step it.",
)
PARAMS = [SOURCE, SAMPLE, GREY, CAP, PRESENT]


@dataclass(frozen=True)
class SourceImage:
    planes: np.ndarray  # (C, H, W) float32 in [0, 1]
    name: str
    notes: tuple[str, ...]

    @functools.cached_property
    def key(self) -> str:
        """Identifies the pixels (for caching results per image)."""
        return hashlib.sha1(self.planes.tobytes()).hexdigest()[:16] + str(self.planes.shape)


@st.cache_resource(show_spinner=False, max_entries=16)
def _sample_pixels(filename: str, cap: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Sample images are shared by every session (read once per process and size)."""
    loaded = decode_image((ASSETS / filename).read_bytes(), cap)
    loaded.pixels.setflags(write=False)
    return loaded.pixels, tuple(loaded.notes)


def _uploaded_pixels(cap: int) -> tuple[np.ndarray, str, tuple[str, ...]] | None:
    """Decode this session's upload (kept in its own session state, one image at most)."""
    upload = st.session_state.get("upload_file")
    if upload is None:
        return None
    cache_key = (upload.file_id, cap)
    cached = st.session_state.get("_decoded")
    if cached is None or cached[0] != cache_key:
        try:
            loaded = decode_image(upload.getvalue(), cap)
        except ImageError as exc:
            st.session_state["_decoded"] = (cache_key, None, str(exc))
        else:
            st.session_state["_decoded"] = (cache_key, loaded, None)
        cached = st.session_state["_decoded"]
    _, loaded, error = cached
    if error:
        st.sidebar.error(f"Upload not used: {error}. Showing the sample image instead.")
        return None
    return loaded.pixels, "your upload", tuple(loaded.notes)


def render_sidebar(shared=None) -> SourceImage:
    """Draw the shared sidebar and return the image every page works on.

    shared: in a classroom room, the instructor's shared image for a working size (a function of
    the cap, from ui.classroom_ui), shown instead of this session's own image."""
    sb = st.sidebar
    sb.header("Image")
    source = state.widget(SOURCE, container=sb, format_func=lambda s: "Sample" if s == "sample" else "Upload")
    if source == "upload":
        sb.file_uploader(
            "Upload an image (PNG, JPEG, WebP, BMP, TIFF, GIF)", type=UPLOAD_TYPES, key="upload_file"
        )
    state.widget(SAMPLE, container=sb)
    grey = state.widget(GREY, container=sb)
    st.session_state["cap"] = min(CAP_OPTIONS, key=lambda o: abs(o - st.session_state["cap"]))
    cap = state.widget(CAP, container=sb)
    state.widget(PRESENT, container=sb)

    picked = shared(cap) if shared is not None else None
    if picked is None and source == "upload":
        picked = _uploaded_pixels(cap)
    if picked is None:
        name = st.session_state["sample"]
        pixels, notes = _sample_pixels(SAMPLES[name], cap)
        picked = (pixels, f"sample: {name}", notes)
    pixels, name, notes = picked
    # one converted image per session, rebuilt only when the pixels or the colour mode change
    cache_key = (id(pixels), pixels.shape, name, grey)
    cached = st.session_state.get("_source_image")
    if cached is None or cached[0] != cache_key or cached[2] is not pixels:
        cached = (cache_key, SourceImage(to_planes(pixels, grey), name, notes), pixels)
        st.session_state["_source_image"] = cached
    image = cached[1]
    c, h, w = image.planes.shape
    sb.caption(f"{name}: {w} x {h} px, {c} channel{'s' if c > 1 else ''}")
    for note in notes:
        sb.info(note, icon=":material/info:")
    render_backend_badge()
    return image


def render_backend_badge() -> None:
    info = gpuops.backend_info()
    st.sidebar.header("Backend")
    if info.gpu:
        st.sidebar.success(f"**GPU**: {info.device}  \nCuPy {info.cupy_version}, CUDA {info.cuda_runtime}")
    else:
        st.sidebar.warning(f"**CPU / NumPy**: timings are CPU timings.  \nWhy: {info.reason}")
