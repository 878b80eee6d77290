"""Lanes: students exploring large images run on worker processes of their own.

One worker process has one interpreter lock: a session drawing figures of a 1024 px image on a
worker makes every light session there wait for it, and the proxy's sticky hash cannot know in
advance who will go large. So `scripts/dev.py serve` keeps a pool of workers for large images
(`--large-workers`; each worker reads its pool from CONV_EXPLORER_LANE) and nginx picks the pool
by the browser's `ce_lane` cookie. A websocket stays on the process it reached: a session changes
pools only by reconnecting, so the move is a reload (`location.replace`: the Back button keeps
its meaning), by ui/lanes.js, a Components v2 component that also sets the cookies.

- Who moves: a session exploring on its own (not an instructor or follower of a room: their
  runs belong to the class wherever they are) whose working size is at least budget.HEAVY_SIZE
  goes to the large pool; one on a large worker whose working size is smaller goes back.
- When: before the page computes anything (app.py calls `route` right after the classroom's
  part), so a heavy run never happens on a light worker. The run stops there with a caption.
- Nothing is lost: the settings travel in the link (the URL as this run would write it,
  `state.link_now`); an uploaded image travels through the deployment's shared store (the
  classroom store's backend: Redis under `serve`) under a random token, handed over in the
  `ce_upload` cookie, and comes back as the session's image (`kept_upload`).
- No loops: a browser whose cookie already names the pool it should be in, but which landed on a
  worker of the other pool, stays (that pool is down and nginx sent it to the other one).
  Without CONV_EXPLORER_LANE (`scripts/dev.py app`, AppTest) nothing here does anything.
"""

from __future__ import annotations

import os
import re
import secrets
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import streamlit as st

from ui import budget, state
from ui.images import ImageError, decode_image, png_bytes
from ui.shared import store

LANE_ENV = "CONV_EXPLORER_LANE"  # this worker's pool ("light" or "large"), set by scripts/serve.py
LANES = ("light", "large")
LANE_COOKIE = "ce_lane"  # "large": send this browser to the large pool (scripts/serve.py's nginx map)
UPLOAD_COOKIE = "ce_upload"  # the token of an upload carried across a move
UPLOAD_KEY = "ce:upload:"  # + token: the carried upload's PNG in the shared store
UPLOAD_TTL_S = 1800.0  # a carried upload waits this long for its session (and a reload of it)
KEPT_SIDE = 1024  # an upload is carried at the largest working size (ui/sidebar.py CAP_OPTIONS)
KEPT_NAME = "your upload"  # the name ui/sidebar.py gives an upload (the classroom shares by it)
CAPTIONS = {
    "large": "Large images run on the large-image servers: reloading…",
    "light": "Smaller images run on the other servers: reloading…",
}
_TOKEN = re.compile(r"^[A-Za-z0-9_\-]{16,64}$")
_MOVING = "_lane_moving"  # session_state: this run asked the browser to move (app.py writes no URL)
_KEPT = "_lane_kept"  # session_state: (token, PNG bytes) of an upload carried here, or None
_KEPT_DECODED = "_lane_kept_decoded"  # session_state: ((token, cap), pixels, notes)

_move = st.components.v2.component(
    "conv_explorer_lane", js=(Path(__file__).resolve().parent / "lanes.js").read_text(encoding="utf-8")
)


def this_lane(environ: Mapping[str, str] | None = None) -> str | None:
    """This worker's pool, or None when lanes are off (one process, or one pool)."""
    lane = (os.environ if environ is None else environ).get(LANE_ENV, "").strip()
    return lane if lane in LANES else None


def cookie_lane(cookie: object) -> str:
    """The pool a browser's ce_lane cookie asks nginx for ("large" only when it says so)."""
    return "large" if cookie == "large" else "light"


def wanted_lane(*, lane: str | None, exploring: bool, working_size: int, cookie: object) -> str | None:
    """The pool this session should move to, or None to stay where it is.

    lane: this worker's pool (None: lanes off); exploring: not an instructor or follower of a
    room; working_size: the longest side it works at; cookie: its ce_lane cookie as it arrived."""
    if lane not in LANES or not exploring:
        return None
    want = "large" if working_size >= budget.HEAVY_SIZE else "light"
    if want == lane:
        return None
    if cookie_lane(cookie) == want:  # it asked for that pool and landed here: that pool is down
        return None
    return want


def moving() -> bool:
    """This run stopped to move the browser to the other pool (app.py then writes no URL: the
    reload carries the link, one history entry). Asked once per run, at its end."""
    return bool(st.session_state.pop(_MOVING, False))


def route(url_path: str, sidebar: list[state.Param], *, exploring: bool) -> None:
    """Move this session to the pool its working size belongs to, before the page computes:
    a caption, the component that sets the cookies and reloads, and the end of this run."""
    target = wanted_lane(
        lane=this_lane(),
        exploring=exploring,
        working_size=int(st.session_state.get("cap", 0)),
        cookie=st.context.cookies.get(LANE_COOKIE),
    )
    if target is None:
        return
    # an upload not in use is dropped, as Streamlit drops it when its uploader is not shown
    lane_cookie = "large" if target == "large" else None  # None: cleared, nginx's default pool
    cookies: dict[str, str | None] = {LANE_COOKIE: lane_cookie, UPLOAD_COOKIE: None}
    if st.session_state.get("source") == "upload":
        token = _carried_token()
        if token == "":
            return  # the store cannot keep it (not answering, over its cap): stay, image and all
        cookies[UPLOAD_COOKIE] = token
    st.session_state[_MOVING] = True
    st.caption(CAPTIONS[target])
    _move(
        key="lane_move",
        data={
            "id": uuid.uuid4().hex,
            "cookies": cookies,
            "upload_max_age": int(UPLOAD_TTL_S),
            "query": state.link_now(url_path, sidebar),
        },
        height=0,
    )
    st.stop()


# ---- an uploaded image across the move -----------------------------------------------------------------
def _carried_token() -> str | None:
    """The token under which the shared store keeps this session's upload for the next worker:
    an upload made here is stored under a fresh one, an upload carried here keeps its own (its
    lifetime renewed). None: no usable upload; "": the store cannot keep it."""
    upload = st.session_state.get("upload_file")
    if upload is None:
        kept = _kept()
        if not kept:
            return None
        try:
            store().backend.expire(UPLOAD_KEY + kept[0], UPLOAD_TTL_S)
        except Exception:  # StoreUnavailable
            return ""
        return kept[0]
    try:
        png = png_bytes(decode_image(upload.getvalue(), KEPT_SIDE).pixels)
    except ImageError:
        return None  # an upload the page cannot use either (it says why)
    try:
        rooms = store()
        if len(png) > rooms.max_image_bytes:
            return ""
        token = secrets.token_urlsafe(24)
        rooms.backend.put(UPLOAD_KEY + token, png, UPLOAD_TTL_S)
    except Exception:  # StoreUnavailable, ConfigError: the move waits for a store that answers
        return ""
    return token


def _kept() -> tuple[str, bytes] | None:
    """(token, PNG) of the upload this session's browser carried here (read once per session)."""
    ss = st.session_state
    if _KEPT not in ss:
        token = st.context.cookies.get(UPLOAD_COOKIE)
        png = _fetch(token) if isinstance(token, str) and _TOKEN.match(token) else None
        ss[_KEPT] = (token, png) if png else None
    if ss.get("upload_file") is not None:
        ss[_KEPT] = None  # an upload made here takes its place for good
    return ss[_KEPT]


def _fetch(token: str) -> bytes | None:
    try:
        png = store().backend.get(UPLOAD_KEY + token)
    except Exception:  # the store does not answer: the sample image shows, the page says so
        return None
    return png if png and png.startswith(b"\x89PNG\r\n\x1a\n") else None


def kept_upload() -> Callable[[int], tuple[np.ndarray, str, tuple[str, ...]] | None] | None:
    """For ui/sidebar.render_sidebar: the upload this session's browser carried from its former
    worker (the `ce_upload` cookie), as a function of the working size; None when there is none.
    An upload made here afterwards takes its place for good."""
    ss = st.session_state
    kept = _kept() if this_lane() is not None else None
    if not kept:
        return None
    token, png = kept

    def load(cap: int) -> tuple[np.ndarray, str, tuple[str, ...]] | None:
        if ss.get("source") != "upload":
            return None
        cached = ss.get(_KEPT_DECODED)
        if cached is None or cached[0] != (token, cap):
            loaded = decode_image(png, cap)
            cached = ((token, cap), loaded.pixels, tuple(loaded.notes))
            ss[_KEPT_DECODED] = cached
        return cached[1], KEPT_NAME, cached[2]

    return load
