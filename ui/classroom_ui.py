"""The classroom mode in the app: an instructor starts a room, students follow it live.

The rooms themselves (codes, the instructor's secret, versioned snapshots, presence, limits) live in
`ui.classroom`, in a store every server process shares (`ui.shared.store`); this module is the
Streamlit side, called twice per run by app.py:

- `before_page` (after st.navigation, before the sidebar): joins a room named by the link
  (`?room=CODE`), and for a follower applies the room's newest snapshot to this session's settings
  (each value parsed again through its Param, as a link's would be) and switches to the
  instructor's page; it draws the classroom part of the sidebar (join / start / the room's code,
  link and QR code) and the mode line above the page, whose `st.fragment(run_every=...)` polls the
  room (follower, every POLL_S; every SLOW_POLL_S under `serve`, where the browser watches the
  room's beacon for changes, ui/beacon.py) or keeps it alive (instructor, every HEARTBEAT_S).
- `after_page` (around page.run()): the instructor publishes the page's and the sidebar's settings
  after each run; for a follower it notices a change the student made (a widget, a click, another
  page) and turns that into breaking away: "exploring on your own", with a one-click way back.

Secrets: the instructor's secret is kept in its session_state and in a cookie of the instructor's
browser (`RESUME_COOKIE`, set by a script of this page, never in a widget, a link, a message or a log):
after a worker restart or a reload, the new session reads it (st.context.cookies) and resumes the
room with the same code. A follower holds only the code and a random follower id; its link
(`?room=CODE`) brings it back to the room after a reconnect.
Limits count per client address (`client_address`): st.context.ip_address, or behind the reverse
proxy that `scripts/dev.py serve` starts (CONV_EXPLORER_TRUST_PROXY=1) the address it forwards.
Images: a student's upload never leaves their session; the instructor's upload reaches followers
only if "Share my image" is ticked, as a PNG re-encoded from the working-size pixels.
Networks: a page with a trained network (LeNet) offers it for the instructor's publish
(`offer_network`); a follower's page reads what the room shares (`room_network`) and loads it. A
page's buttons that change no setting (Train) break a follower away through `own_action`.
"""

from __future__ import annotations

import contextlib
import hmac
import html
import io
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import streamlit as st

from ui import beacon, state
from ui.classroom import (
    ConfigError,
    ImageTooLarge,
    NetworkTooLarge,
    RoomEnded,
    RoomError,
    RoomStore,
    SharedImage,
    SharedNetwork,
    Snapshot,
    StoreUnavailable,
    TooManyAttempts,
    normalize_code,
)
from ui.images import decode_image, png_bytes, to_display
from ui.shared import store
from ui.state import Param

POLL_S = 1.0  # a follower asks the room for news this often (one read of the store)
SLOW_POLL_S = 5.0  # ... where its browser watches the room's beacon for changes (ui/beacon.py)
PRESENT_EVERY_S = 10.0  # a follower's poll counts it as present at most this often (one write)
HEARTBEAT_S = 5.0  # the instructor's tab keeps the room alive and counts followers this often
TRUST_PROXY_ENV = "CONV_EXPLORER_TRUST_PROXY"  # 1: the client address is the proxy's X-Real-Ip
RESUME_COOKIE = "ce_room"  # the instructor's browser: code and secret, to resume after a restart
FOLLOW_TURNS = int(os.environ.get("CONV_EXPLORER_FOLLOW_TURNS", "2"))  # follower runs at once per process
FOLLOW_WAIT_S = 10.0  # the longest a follower's run waits for a turn
KEY_ENV = "CONV_EXPLORER_INSTRUCTOR_KEY"  # when set, starting a room asks for this passphrase
URL_ENV = "CONV_EXPLORER_PUBLIC_URL"  # the address students use (a reverse proxy's), if not the browser's
LOCAL_ONLY = frozenset({"pres"})  # display preferences each student keeps (large projector text)
SHARED_NAME = "the instructor's image"
LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}

# session_state keys (this session's own; nothing here is sent to the browser)
_ID = "_room_id"  # random follower id of this session
_TEACH = "_room_teach"  # (code, secret) while instructing
_FOLLOW = "_room_follow"  # code while following
_VERSION = "_room_version"  # the snapshot version last applied (never the Snapshot itself)
_STORE_DOWN = "_room_store_down"  # the last full run could not read the room (the store did not answer)
_SETTLING = "_room_settling"  # a snapshot was applied and the run that shows it has not finished yet
_BASELINE = "_room_baseline"  # (page, settings texts) after the last finished run while following
_LEFT = "_room_left"  # code of the room this student broke away from (for "follow again")
_LINK = "_room_link"  # the ?room= value this session has already acted on
_NOTE = "_room_note"  # (kind, text): a message for the next run
_SEEN = "_room_seen"  # when this follower last counted itself as present
_IN_RUN = "_room_in_run"  # True during a full run of the app (a fragment's own rerun leaves it False)
_COOKIE = "_room_cookie"  # the resume cookie's value this session last wrote ("" after clearing)
_TRIED = "_room_tried_cookie"  # this session has looked at the resume cookie
_TURN = "_room_turn"  # this run holds one of the process's follow turns
_PNG = "_room_png"  # (image key, SharedImage): the instructor's re-encoded working image
_OFFER = "_room_offer"  # this run's page offers a network to publish: a function giving it (or None)
_REFUSED = "_room_refused"  # key of the instructor's network the store refused (over its cap)
_NETWORK = "_room_network"  # (key, name) of the network the followed room shares, as of the last poll
_SIDEBAR: list[Param] = []  # the sidebar's Params (the same for every session), for the poll
SHARE_KEY = "room_share"  # the instructor's "Share my image" checkbox
CODE_KEY = "room_code_typed"  # the student's "Room code" text input
PASS_KEY = "room_passphrase"  # the instructor's passphrase input


# ---- process-wide ----------------------------------------------------------------------------------------
def registry() -> RoomStore:
    """The rooms of this deployment (memory, or Redis with CONV_EXPLORER_REDIS_URL)."""
    return store()


@st.cache_resource(show_spinner=False)
def _page_params() -> dict[str, dict[str, Param]]:
    """url_path -> that page's Params, as the page declared them (state.use) in any session of this
    process: a follower parses the instructor's values with them before the page runs."""
    return {}


@st.cache_resource(show_spinner=False, max_entries=8)
def _shared_pixels(key: str, cap: int) -> np.ndarray | None:
    """A shared image read from the store and decoded once per process and working size (every
    follower uses the same); None once its room has gone."""
    png = registry().image(key)
    if png is None:
        return None
    pixels = decode_image(png, cap).pixels
    pixels.setflags(write=False)
    return pixels


@st.cache_resource(show_spinner=False, max_entries=8)
def _network_bytes(key: str) -> bytes:
    """A shared network's .npz bytes, read once per process (every follower loads the same);
    errors (gone, damaged, the store not answering) are not kept: the next run asks again."""
    return registry().network(key)


@st.cache_data(show_spinner=False, max_entries=32)
def qr_png(text: str, scale: int = 8) -> bytes | None:
    """The QR code of `text` as a PNG (None if segno is not installed)."""
    try:
        import segno
    except ImportError:
        return None
    buf = io.BytesIO()
    segno.make(text, error="m").save(buf, kind="png", scale=scale, border=2)
    return buf.getvalue()


# ---- small helpers ---------------------------------------------------------------------------------------
def _ss() -> Any:
    return st.session_state


def client_address() -> str:
    """Who is asking, for the per-address limits: the browser's address, or behind our own proxy
    (CONV_EXPLORER_TRUST_PROXY=1, set by scripts/dev.py serve) the address the proxy forwards."""
    ip = st.context.ip_address
    ip = ip if isinstance(ip, str) else None  # None on loopback (and in AppTest)
    if os.environ.get(TRUST_PROXY_ENV) == "1" and (ip is None or ip in LOOPBACK):
        forwarded = st.context.headers.get("X-Real-Ip", "")
        if isinstance(forwarded, str) and forwarded.strip():
            return forwarded.strip()[:64]
    return ip or "local"


def follower_id() -> str:
    if _ID not in _ss():
        _ss()[_ID] = secrets.token_urlsafe(16)
    return _ss()[_ID]


def _note(kind: str, text: str) -> None:
    _ss()[_NOTE] = (kind, text)


def _texts(params: Sequence[Param]) -> dict[str, str]:
    """The settings as their URL text (what is published, and what a follower compares)."""
    ss = _ss()
    return {p.key: p.text(ss.get(p.key, p.default)) for p in params}


def _current_params(sidebar: Sequence[Param]) -> list[Param]:
    return [*sidebar, *_ss().get(state.PAGE_KEY, [])]


def _undo_stale_widgets(applied: dict[str, str]) -> None:
    """Put back the room's values that a poll's widget values overwrote.

    A browser sends all its widget values with every fragment rerun. A poll sent while the app
    was still drawing the room's newest values carries the old ones, and the widgets' callbacks
    copy them into the settings. Nothing else changes a setting in a fragment run (a student's
    own change reruns the whole app), so restore those settings here, without a rerun: the
    browser's next poll carries the new values. (Applying the snapshot again with a full rerun
    instead fed a storm of reruns on a loaded server: each rerun's polls crossed it again.)"""
    ss = _ss()
    for p in _current_params(_SIDEBAR):
        text = applied.get(p.key)
        if text is not None and p.text(ss.get(p.key, p.default)) != text:
            ss[p.key] = p.default if text == "" else p.parse(text)[0]


def _fragment_run() -> bool:
    """This run reruns fragments only (a poll), not the whole app: app.py's before_page did not run."""
    return not _ss().get(_IN_RUN, False)


def _follower_texts(sidebar: Sequence[Param]) -> dict[str, str]:
    """What a follower compares to notice its own changes (display preferences left out)."""
    return {k: v for k, v in _texts(_current_params(sidebar)).items() if k not in LOCAL_ONLY}


def mode() -> str:
    """'instructing', 'following' or 'exploring' (for tests and the mode line)."""
    if _ss().get(_TEACH):
        return "instructing"
    return "following" if _ss().get(_FOLLOW) else "exploring"


# ---- joining and leaving ---------------------------------------------------------------------------------
def _join(typed: str) -> bool:
    """Follow the room a student typed or opened (only this function passes typed codes on)."""
    ss = _ss()
    try:
        registry().join(typed, follower_id(), client_address())
    except RoomError as exc:
        _note("error", f"Could not join: {exc}.")
        return False
    code = normalize_code(typed)
    ss[_FOLLOW], ss[_LINK], ss[_SEEN] = code, code, time.time()
    ss[_VERSION], ss[_SETTLING] = None, True
    ss.pop(_BASELINE, None)
    ss.pop(_LEFT, None)
    return True


def _stop_following(code: str, why: str, *, ended: bool) -> None:
    ss = _ss()
    with contextlib.suppress(RoomError, ValueError):
        registry().leave(code, follower_id())
    ss[_FOLLOW] = None
    ss[_LEFT] = None if ended else code
    ss.pop(_BASELINE, None)
    _note("warning" if ended else "info", why)


def _break_away(code: str, what: str) -> None:
    _stop_following(
        code,
        f"You {what}, so you are exploring on your own now. Room {code} goes on: "
        "**Follow again** brings back the instructor's view.",
        ended=False,
    )


def _on_join_typed() -> None:
    typed = str(_ss().get(CODE_KEY, ""))
    _ss()[CODE_KEY] = ""
    if typed.strip():
        _join(typed)


def _on_rejoin() -> None:
    code = _ss().get(_LEFT)
    if code:
        _join(code)


def _on_leave() -> None:
    code = _ss().get(_FOLLOW)
    if code:
        _stop_following(
            code, f"You left room {code} and explore on your own: your changes stay yours.", ended=False
        )


# ---- instructing -----------------------------------------------------------------------------------------
def _passphrase_ok() -> bool:
    """True when no passphrase is configured or the typed one matches (rate-limited per session)."""
    key = os.environ.get(KEY_ENV, "")
    if not key:
        return True
    ss = _ss()
    typed = str(ss.get(PASS_KEY, ""))
    ss[PASS_KEY] = ""  # not kept in the widget
    try:
        registry().check_attempts("wrong passphrases", client_address())
        if hmac.compare_digest(typed.encode("utf-8", "replace"), key.encode("utf-8", "replace")):
            return True
        registry().count_attempt("wrong passphrases", client_address())
    except TooManyAttempts as exc:
        _note("error", f"{str(exc)[0].upper()}{str(exc)[1:]}.")
        return False
    except RoomError as exc:
        _note("error", f"No room started: {exc}.")
        return False
    _note("error", f"Wrong instructor passphrase (the server's {KEY_ENV}).")
    return False


def _on_start() -> None:
    ss = _ss()
    if not _passphrase_ok():
        return
    if ss.get(_FOLLOW):
        _stop_following(ss[_FOLLOW], "You left the room you followed.", ended=False)
    try:
        code, secret = registry().create_room(client_address())
    except RoomError as exc:
        _note("error", f"No room started: {exc}.")
        return
    ss[_TEACH] = (code, secret)
    ss.pop(_LEFT, None)
    ss.pop(_PNG, None)
    ss.pop(_REFUSED, None)
    _note(
        "success",
        f"Room {code} started. Show the QR code or the code; students who open the link "
        "follow your page and settings live.",
    )


def _on_end() -> None:
    ss = _ss()
    teach = ss.pop(_TEACH, None)
    if teach:
        with contextlib.suppress(RoomError):
            registry().close(*teach)
        beacon.remove(teach[0])
        _note("info", f"Room {teach[0]} ended; its followers were told.")


def _resume_from_cookie() -> None:
    """Once per session: the instructor's browser still holds a room (a reload, or its worker
    restarted); resume it if it is alive, say so if it ended. A join link (?room=) means follow:
    a tab opened from it, even in the instructor's own browser, follows instead."""
    ss = _ss()
    if ss.get(_TRIED):
        return
    ss[_TRIED] = True
    if "room" in st.query_params:
        return
    raw = st.context.cookies.get(RESUME_COOKIE, "")
    if not isinstance(raw, str) or "." not in raw or ss.get(_TEACH):
        return
    code, _, secret = raw.partition(".")
    try:
        status = registry().heartbeat(code, secret)
    except RoomEnded as exc:
        _note("warning", f"Your {exc}.")
        ss[_COOKIE] = "stale"  # cleared by _cookie_script
        return
    except RoomError:
        ss[_COOKIE] = "stale"
        return
    ss[_TEACH] = (status.code, secret)
    ss[_COOKIE] = raw
    if ss.get(_FOLLOW):
        ss[_FOLLOW] = None
    _note("info", f"Room {status.code} resumed: your followers see your page again.")


def _cookie_script() -> None:
    """Keep the instructor's resume cookie in step with this session (written by the browser:
    the server sends no headers on a websocket)."""
    ss = _ss()
    teach = ss.get(_TEACH)
    want = f"{teach[0]}.{teach[1]}" if teach else ""
    if ss.get(_COOKIE, "") == want:
        return
    ss[_COOKIE] = want
    age = 6 * 3600 if want else 0
    cookie = f"{RESUME_COOKIE}={want}; path=/; max-age={age}; samesite=strict"
    st.html(f"<script>document.cookie = {json.dumps(cookie)};</script>", unsafe_allow_javascript=True)


def _shared_image(image: Any) -> SharedImage | None:
    """The instructor's working image as a PNG, when an upload is in use and sharing is ticked."""
    ss = _ss()
    if ss.get("source") != "upload" or not ss.get(SHARE_KEY) or getattr(image, "name", "") != "your upload":
        return None
    cached = ss.get(_PNG)
    if cached is None or cached[0] != image.key:
        cached = (image.key, SharedImage(png_bytes(to_display(image.planes)), SHARED_NAME))
        ss[_PNG] = cached
    return cached[1]


def _offered_network() -> SharedNetwork | None:
    """The network this run's page offers (offer_network), unless the store refused it before."""
    ss = _ss()
    offer = ss.get(_OFFER)
    network = offer() if offer is not None else None
    return None if network is None or network.key == ss.get(_REFUSED) else network


def _publish(page: Any, sidebar: Sequence[Param]) -> None:
    ss = _ss()
    code, secret = ss[_TEACH]
    fields = {
        "page": page.url_path,
        "settings": _texts(_current_params(sidebar)),
        "image": _shared_image(ss.get("image")),
        "network": _offered_network(),
    }
    refused = False
    try:
        while True:  # what is over the server's caps is left out, the rest is shared (at most 3 tries)
            try:
                beacon.write(code, registry().publish(code, secret, fields))
                break
            except ImageTooLarge as exc:
                ss[SHARE_KEY], fields["image"] = False, None
                _note("warning", f"Your image is not shared: {exc}.")
            except NetworkTooLarge as exc:
                ss[_REFUSED], fields["network"] = fields["network"].key, None
                _note("warning", f"Your network is not shared: {exc}.")
            refused = True
        if refused:
            state.rerun()  # the notice, and the unticked box, now
    except StoreUnavailable as exc:  # the room is not lost: the next run publishes again
        _note("warning", f"{str(exc)[0].upper()}{str(exc)[1:]}.")
    except RoomError as exc:
        ss.pop(_TEACH, None)
        _note("warning", f"{exc}.")
        state.rerun()


# ---- following -------------------------------------------------------------------------------------------
def _apply(snap: Snapshot, sidebar: Sequence[Param]) -> dict[str, str]:
    """Put the snapshot's settings into this session, each parsed and clamped by its Param.

    Returns the settings of a page this process has not run yet (their page's state.use parses
    them from the URL instead)."""
    ss = _ss()
    params = {p.key: p for p in sidebar}
    params.update(_page_params().get(snap.page, {}))
    source = snap.settings.get("source")
    unknown: dict[str, str] = {}
    for key, raw in snap.settings.items():
        text = str(raw)
        if key in LOCAL_ONLY or key == "source" or (key == "sample" and source != "sample"):
            continue  # an unshared upload: the student keeps their own image
        p = params.get(key)
        if p is None:
            unknown[key] = text
            continue
        ss[key] = p.default if text == "" else p.parse(text)[0]
    if source == "sample":
        ss["source"] = "sample"
    for key, text in unknown.items():
        ss.pop(key, None)
        if text:
            st.query_params[key] = text
    ss[_VERSION] = snap.version
    ss[_SETTLING] = True
    return unknown


def _follow(page: Any, pages: Sequence[Any], sidebar: Sequence[Param]) -> Snapshot | None:
    """Bring this follower to the room's newest snapshot (may switch page: the run ends there)."""
    ss = _ss()
    code = ss[_FOLLOW]
    try:
        snap = _poll(code)
    except StoreUnavailable:
        ss[_STORE_DOWN] = True  # no beacon watch: a rerun could not show what it says
        return None  # the mode line says so; the follower keeps its view and keeps polling
    except RoomError as exc:
        _stop_following(code, f"{exc}. You are exploring on your own.", ended=isinstance(exc, RoomEnded))
        return None
    ss[_STORE_DOWN] = False
    baseline = ss.get(_BASELINE)
    if not ss.get(_SETTLING) and baseline is not None and page.url_path != baseline[0]:
        _break_away(code, "opened another page")
        return None
    if st.query_params.get("room") != code:
        st.query_params["room"] = code  # the address bar is the join link while following
    ss[_NETWORK] = None if snap is None or snap.network_key is None else (snap.network_key, snap.network_name)
    if snap is None:
        return None
    unknown: dict[str, str] = {}
    if snap.version != ss.get(_VERSION):
        _take_turn()
        unknown = _apply(snap, sidebar)
    if snap.page != page.url_path:
        target = next((p for p in pages if p.url_path == snap.page), None)
        if target is not None:
            st.switch_page(target, query_params={"room": code, **unknown})
    return snap


def _poll(code: str) -> Snapshot | None:
    """The room's snapshot; counts this follower as present every PRESENT_EVERY_S."""
    ss = _ss()
    now = time.time()
    present = now - ss.get(_SEEN, 0.0) >= PRESENT_EVERY_S
    snap = registry().snapshot(code, follower_id() if present else None)
    if present:
        ss[_SEEN] = now
    return snap


def _shared_source(snap: Snapshot | None) -> Callable[[int], tuple[np.ndarray, str, tuple[str, ...]]] | None:
    if snap is None or snap.image_key is None:
        return None
    key = snap.image_key

    def load(cap: int) -> tuple[np.ndarray, str, tuple[str, ...]]:
        pixels = _shared_pixels(key, cap)
        if pixels is None:
            raise ValueError("the instructor's shared image is no longer available")
        return pixels, SHARED_NAME, ()

    return load


# ---- a page's network ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoomNetwork:
    """The trained network the followed room shares: `name` to show (e.g. "epoch 3, step 36"),
    `key` names its bytes (a new key: new weights)."""

    key: str
    name: str

    def npz(self) -> bytes:
        """The weights' .npz bytes: ValueError when they are gone, damaged or over the server's cap,
        StoreUnavailable when the store does not answer (the follower keeps what it has)."""
        return _network_bytes(self.key)


def offer_network(network: Callable[[], SharedNetwork | None]) -> str | None:
    """A page with a trained network offers it to the room (`network()` is asked when this run
    publishes, after the page has finished: the state it ends with). Returns the room's code while
    instructing, else None (the offer is then ignored)."""
    teach = _ss().get(_TEACH)
    if not teach:
        return None
    _ss()[_OFFER] = network
    return teach[0]


def network_refused(key: str) -> bool:
    """The store refused this network of the instructor (over its cap): it is not shared."""
    return _ss().get(_REFUSED) == key


def room_network() -> RoomNetwork | None:
    """For a follower: the network its room shares as of this run's poll (None when it shares
    none). While the store does not answer this stays what the last poll saw."""
    if mode() != "following":
        return None
    named = _ss().get(_NETWORK)
    return None if named is None else RoomNetwork(*named)


def own_action(what: str) -> None:
    """A follower's own action that changes no setting (a page's Train button) breaks it away, as
    a changed setting does ("You {what}, so you are exploring on your own now"), and the app reruns
    at once: call it after the action has left its result in session_state."""
    code = _ss().get(_FOLLOW)
    if code:
        _break_away(code, what)
        state.rerun()


# ---- what the page shows ---------------------------------------------------------------------------------
def join_link(code: str, url_path: str) -> str:
    """The address students open: this server as the instructor's browser reaches it (or
    CONV_EXPLORER_PUBLIC_URL), the current page, ?room=CODE."""
    public = os.environ.get(URL_ENV, "").strip()
    if public.startswith(("http://", "https://")):
        root = public.rstrip("/") + "/"
    else:
        here = st.context.url or "http://localhost:8501/"
        root = here.split("?")[0].split("#")[0]
        root = root.rstrip("/")
        current = _ss().get("_room_url_path", "")
        if current and root.endswith("/" + current):
            root = root[: -len(current) - 1]
        root += "/"
    return f"{root}{url_path}?room={code}"


def _lan_address() -> str | None:
    """This machine's address on the local network (a UDP socket learns it; no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def _show_code(code: str, link: str, *, size: int) -> None:
    """The code (large), its QR code and the join link: all three on the first screen."""
    st.markdown(
        f"<div style='font-size:{size}px;font-weight:700;letter-spacing:0.12em;line-height:1.1;"
        f"font-family:monospace'>{code}</div>",
        unsafe_allow_html=True,
    )
    qr = qr_png(link)
    if qr is not None:
        st.image(qr, width=size * 6)
    st.markdown(
        f"<div style='font-size:{max(13, size // 3)}px;word-break:break-all'>{html.escape(link)}</div>",
        unsafe_allow_html=True,
    )


@st.dialog("Join this room", width="large")
def _big_code(code: str, link: str) -> None:
    _show_code(code, link, size=64)


def _sidebar(page: Any) -> None:
    ss = _ss()
    sb = st.sidebar
    teach = ss.get(_TEACH)
    if teach:
        code = teach[0]
        with sb.container(key="room_instructor"):
            st.subheader(f"Classroom: room {code}")
            link = join_link(code, page.url_path)
            _show_code(code, link, size=34)
            host = urlsplit(link).hostname or ""
            if host in LOOPBACK:
                lan = _lan_address()
                where = f" such as `http://{lan}:{st.get_option('server.port')}/`" if lan else ""
                st.warning(
                    f"Students cannot open a {host} link: open Conv Explorer at this computer's network "
                    f"address{where} and start the room there (or set {URL_ENV}).",
                    icon=":material/wifi_off:",
                )
            if ss.get("source") == "upload":
                st.checkbox(
                    "Share my image with the class",
                    key=SHARE_KEY,
                    help="Followers get a PNG of the working-size image, never your file. "
                    "Off: they keep their own image and are told yours is not shared.",
                )
            a, b = st.columns(2)
            if a.button("Show large", icon=":material/fullscreen:", width="stretch"):
                _big_code(code, link)
            b.button("End room", on_click=_on_end, icon=":material/stop_circle:", width="stretch")
        return
    if ss.get(_FOLLOW):
        return  # the mode line says it all
    with sb.expander("Classroom: follow or teach", icon=":material/school:"):
        st.caption("You are exploring on your own. Follow the instructor with the code on the projector:")
        st.text_input(
            "Room code",
            key=CODE_KEY,
            max_chars=12,
            placeholder="e.g. K7QF2M",
            on_change=_on_join_typed,
            help="The code on the projector. Opening the instructor's link does the same.",
        )
        st.button("Follow", on_click=_on_join_typed, icon=":material/login:")
        st.divider()
        if os.environ.get(KEY_ENV):
            st.text_input("Instructor passphrase", key=PASS_KEY, type="password")
        st.button("Start a room (instructor)", on_click=_on_start, icon=":material/co_present:")


def _following_line(code: str, titles: dict[str, str]) -> None:
    """The follower's mode line; its fragment polls the room, every POLL_S, or every SLOW_POLL_S
    where the browser watches the room's beacon for changes (ui/beacon.py)."""
    if not _ss().get(_STORE_DOWN):  # else the slow poll notices the store is back
        beacon.watch(code, _ss().get(_VERSION), _on_beacon_asked)
    st.fragment(run_every=follower_poll_s())(_following_poll)(code, titles)


def _on_beacon_asked(shown: int) -> None:
    """The browser's beacon asked for this run from a page that showed version `shown`. If the
    session has applied another version since (its slow poll saw the change first, and that run
    may not have reached the browser), the request carried the older version's widget values, no
    choice of the student's: apply the room's snapshot again in this run instead of taking them
    for a change of the student's (which would stop following) or keeping them (the follower
    would show the old values while counting itself at the new version)."""
    ss = _ss()
    if ss.get(_FOLLOW) and shown != (-1 if ss.get(_VERSION) is None else ss[_VERSION]):
        ss[_VERSION] = None


def follower_poll_s() -> float:
    """How often a follower's page asks its worker about the room."""
    return SLOW_POLL_S if beacon.directory() is not None else POLL_S


def _following_poll(code: str, titles: dict[str, str]) -> None:
    ss = _ss()
    if ss.get(_FOLLOW) != code:
        state.rerun()
    try:
        snap = _poll(code)
    except StoreUnavailable as exc:
        st.warning(f"**Following room {code}**: {exc}.", icon=":material/cloud_off:")
        return
    except RoomError as exc:
        _stop_following(code, f"{exc}. You are exploring on your own.", ended=isinstance(exc, RoomEnded))
        state.rerun()
    if snap is not None and snap.version != ss.get(_VERSION):
        state.rerun()  # the instructor changed something: the whole app follows
    baseline = ss.get(_BASELINE)
    if _fragment_run() and baseline is not None and not ss.get(_SETTLING):
        _undo_stale_widgets(baseline[1])
    where = (
        f" on **{titles.get(snap.page, snap.page)}**" if snap is not None else ": waiting for the instructor"
    )
    st.markdown(
        f":material/visibility: **Following room {code}**{where}; a change of your own stops following."
    )
    if snap is not None and not snap.instructor_here:
        minutes = registry().end_after_s / 60
        st.warning(
            f"The instructor has left: room {code} ends {minutes:g} minute{'' if minutes == 1 else 's'} "
            "after they left, unless they come back.",
            icon=":material/person_off:",
        )
    if snap is not None and snap.settings.get("source") == "upload" and snap.image_key is None:
        st.caption(
            "The instructor uses an uploaded image that is not shared: you see your own image, so sizes "
            "and picks may differ."
        )


def _instructing_line(code: str) -> None:
    """The instructor's mode line; its fragment keeps the room alive (at least 3 beats per idle
    time, so a short CONV_EXPLORER_ROOM_IDLE_MINUTES still lasts while the tab is open)."""
    st.fragment(run_every=min(HEARTBEAT_S, registry().left_after_s / 3))(_heartbeat)(code)


def _heartbeat(code: str) -> None:
    ss = _ss()
    teach = ss.get(_TEACH)
    if not teach or teach[0] != code:
        state.rerun()
    try:
        status = registry().heartbeat(*teach)
    except StoreUnavailable as exc:
        st.warning(f"**Instructing room {code}**: {exc}.", icon=":material/cloud_off:")
        return
    except RoomError as exc:
        ss.pop(_TEACH, None)
        _note("warning", f"{exc}.")
        state.rerun()
    n = status.followers
    st.markdown(
        f":material/co_present: **Instructing room {code}** with {n} follower{'' if n == 1 else 's'}: "
        "they see this page and its settings."
    )


def _mode_line(titles: dict[str, str]) -> None:
    ss = _ss()
    note = ss.pop(_NOTE, None)
    teach, code, left = ss.get(_TEACH), ss.get(_FOLLOW), ss.get(_LEFT)
    if note and note[0] == "success":
        st.toast(note[1], icon=":material/school:")
    elif not (note or teach or code or left):
        return
    # the first element of the page: clear of Streamlit's header bar
    st.html("<style>.st-key-room_mode{margin-top:0.9rem}</style>")
    with st.container(key="room_mode"):
        if note and note[0] != "success":
            getattr(st, note[0])(note[1])
        if not (teach or code or left):
            return
        text, action = st.columns([5, 1.6], vertical_alignment="center")
        with text:
            if teach:
                _instructing_line(teach[0])
            elif code:
                _following_line(code, titles)
            else:
                st.markdown(f":material/explore: **Exploring on your own** (room {left} goes on).")
        if code:
            action.button("Explore on my own", on_click=_on_leave, icon=":material/logout:", width="stretch")
        elif left and not teach:
            action.button(
                f"Follow {left} again", on_click=_on_rejoin, icon=":material/login:", width="stretch"
            )


# ---- the two calls from app.py ---------------------------------------------------------------------------
def before_page(page: Any, pages: Sequence[Any], sidebar: Sequence[Param]) -> Callable | None:
    """Join from the link, follow the room, draw the classroom sidebar and mode line.

    Returns, for a follower of a room whose instructor shares an image, the function that gives
    the sidebar that image for a working size (else None)."""
    ss = _ss()
    try:
        registry()
    except ConfigError as exc:
        st.sidebar.error(f"Classroom mode is off: {exc}", icon=":material/school:")
        return None
    ss[_IN_RUN] = True
    ss.pop(_OFFER, None)  # a page offers its network anew in each run
    _resume_from_cookie()
    ss["_room_url_path"] = page.url_path
    _SIDEBAR[:] = sidebar
    link = st.query_params.get("room")
    if link and link != ss.get(_LINK) and not ss.get(_TEACH) and not ss.get(_FOLLOW):
        ss[_LINK] = link
        if not _join(link):
            del st.query_params["room"]
    snap = _follow(page, pages, sidebar) if ss.get(_FOLLOW) else None
    if not ss.get(_FOLLOW) and "room" in st.query_params:
        del st.query_params["room"]  # the link follows only while this session follows
    _sidebar(page)
    _mode_line({p.url_path: p.title for p in pages})
    _cookie_script()
    return _shared_source(snap) if ss.get(_FOLLOW) else None


@contextlib.contextmanager
def after_page(page: Any, sidebar: Sequence[Param]) -> Iterator[None]:
    """Around page.run(): afterwards the instructor publishes; a follower's own change breaks away.

    A run cut short by st.rerun or st.stop (Streamlit's control flow, not an Exception) publishes
    nothing: the next finished run does. A page error counts as a finished run."""
    try:
        yield
    except Exception:
        _after(page, sidebar)
        raise
    else:
        _after(page, sidebar)


def run_ended() -> None:
    """app.py's last word on every full run, however it ended: the fragment reruns until the next
    full run are polls (ui._fragment_run), and a follow turn taken by this run is given back."""
    _ss()[_IN_RUN] = False
    if _ss().pop(_TURN, False):
        _follow_turns().release()


@st.cache_resource(show_spinner=False)
def _follow_turns() -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(FOLLOW_TURNS)


def _take_turn() -> None:
    """A run that shows the instructor's change waits for one of FOLLOW_TURNS places of this
    process (at most FOLLOW_WAIT_S). When the whole class reruns at once, the process's one
    interpreter otherwise shares itself among all of them and every follower is as late as the
    last; in turns, the first ones are done early. Only these runs take turns: a student's own
    clicks never wait here, and a run waits once."""
    if not _ss().get(_TURN) and _follow_turns().acquire(timeout=FOLLOW_WAIT_S):
        _ss()[_TURN] = True


def _after(page: Any, sidebar: Sequence[Param]) -> None:
    ss = _ss()
    page_params = ss.get(state.PAGE_KEY, [])
    if page_params:
        _page_params()[page.url_path] = {p.key: p for p in page_params}
    if ss.get(_TEACH):
        _publish(page, sidebar)
        return
    code = ss.get(_FOLLOW)
    if not code:
        return
    texts = _follower_texts(sidebar)
    now = (page.url_path, texts)
    baseline = ss.get(_BASELINE)
    if ss.get(_SETTLING) or baseline is None:
        ss[_BASELINE], ss[_SETTLING] = now, False
        return
    if now == baseline:
        return
    labels = {p.key: p.label or p.key for p in _current_params(sidebar)}
    changed = next((k for k in texts if texts[k] != baseline[1].get(k)), None)
    what = f"changed “{labels.get(changed, changed)}”" if changed else "changed a setting"
    _break_away(code, what)
    state.rerun()
