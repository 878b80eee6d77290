"""A headless Streamlit client: one app session over the websocket, without a browser.

For load tests (also of a GPU server that has no browser): it speaks what Streamlit's own frontend
speaks on ws://HOST:PORT/_stcore/stream (binary protobufs: BackMsg up, ForwardMsg down):

- open a session on a page with a query string (`StClient(url, "direct", "room=K7QF2M")`); the
  first BackMsg asks for a run with the page's path, as a browser's first request does;
- keep the elements of the page as the frontend does: a delta puts an element or block at its
  delta path; when a full run finishes, what it did not write is dropped (after a fragment's run,
  what that fragment did not write again); `texts()` reads markdown, captions, headings, alerts,
  metrics, plain text and exceptions;
- keep every widget's value (the value Python set, else the last one sent, else the default),
  send them all with each rerun, and set one by its label (`set("Stride S", 2)`, a button with
  `click("Follow")`), encoded as the browser encodes it (slider: double array, select slider:
  its option labels, select box / radio: the option label, number input: int or double, ...);
- follow the server's query-string updates and page switches (new_session's page hash);
- honour `auto_rerun` like the browser: every `interval` seconds ask for a rerun of that fragment
  (`is_auto_rerun`), until a full run or `stop_auto_rerun` clears it. Without that, a run_every
  fragment (the classroom's polling) never runs again;
- watch a room's beacon like ui/beacon.js: a full run that mounts the beacon component starts a
  timer that reads its file over HTTP (with the cookies) every every_ms and, once it names a
  version after the one the run showed, sends the component's trigger (one full rerun);
- upload a file to a file uploader as the browser does (`upload(label, name, data)`): ask for
  its URL over the websocket (file_urls_request), PUT it as multipart form data with the XSRF
  cookie and header, then rerun with the uploader holding the file's info;
- measure: `rerun()` / `set()` return the seconds from sending to the run's script_finished;
- load the page's address before connecting, as a browser does, and keep cookies as its jar
  (`cookies`, sent with the websocket's handshake and every HTTP request; Set-Cookie headers of
  the page and the handshake kept, e.g. the proxy's ce_worker and ce_lane) and follow a move
  to the other pool of workers (ui/lanes.py) as the browser does: when a run mounts the lane
  component, take its cookies and its link, reconnect (a new session, as a reload is) and wait
  for the first run there. `rerun()` then measures up to that run; `moves`
  counts them.

Stdlib + `websockets` (a Streamlit dependency) + Streamlit's protobufs; one reader thread per client.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from streamlit.components.v2.bidi_component.main import _make_trigger_id
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.Common_pb2 import UploadedFileInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

FULL_RUN_DONE = ForwardMsg.FINISHED_SUCCESSFULLY
FRAGMENT_DONE = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
WIDGETS = {
    "slider",
    "number_input",
    "selectbox",
    "radio",
    "checkbox",
    "text_input",
    "button",
    "text_area",
    "file_uploader",
}
XSRF_COOKIE = "_streamlit_xsrf"
LANE_COMPONENT = "conv_explorer_lane"  # ui/lanes.py: the page asks the browser to move
BEACON_COMPONENT = "conv_explorer_beacon"  # ui/beacon.py: the browser watches the room's beacon
MAX_MOVES_IN_A_ROW = 2  # a move that leads to another move at once is followed once more, no further


class ClientError(RuntimeError):
    pass


@dataclass
class Widget:
    kind: str  # the Element field: slider, selectbox, ...
    proto: Any  # the widget's proto as last sent
    state: WidgetState | None = None  # what we send back (None: nothing to send, e.g. a button)

    @property
    def label(self) -> str:
        return self.proto.label

    @property
    def value(self) -> Any:
        """The value as Python sees it (option labels for select widgets)."""
        s = self.state
        if s is None:
            return None
        which = s.WhichOneof("value")
        if which == "double_array_value":
            data = list(s.double_array_value.data)
            return data[0] if len(data) == 1 else data
        if which == "string_array_value":
            data = list(s.string_array_value.data)
            return data[0] if len(data) == 1 else data
        return getattr(s, which) if which else None


@dataclass
class Run:
    """One finished run (full or fragment) as this client saw it."""

    run_id: str
    fragment_ids: tuple[str, ...]
    status: int
    finished_at: float  # time.perf_counter()


@dataclass
class _Stats:
    full_runs: int = 0
    fragment_runs: int = 0
    auto_reruns_sent: int = 0
    beacon_reads: int = 0
    beacon_reruns_sent: int = 0
    messages: int = 0
    bytes: int = 0
    runs: list[Run] = field(default_factory=list)


class StClient:
    """One Streamlit session driven without a browser (thread-safe; see the module docstring)."""

    def __init__(
        self,
        url: str,
        path: str = "",
        query: str = "",
        *,
        timeout: float = 60.0,
        on_run: Callable[[StClient, Run], None] | None = None,
        keep_runs: int = 200,
        tag: Any = None,
        cookie: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self.page_name = path.strip("/")
        self.query_string = query.lstrip("?")
        self.page_script_hash = ""
        self.pages: dict[str, str] = {}  # url_pathname -> page_script_hash
        self.timeout = timeout
        self.on_run = on_run  # called (on the reader thread) after each finished run
        self.tag = tag  # anything the caller wants to know the client by
        self.keep_runs = keep_runs
        self.errors: list[str] = []
        self.latencies: list[float] = []
        self.stats = _Stats()
        self._elements: dict[tuple[int, ...], tuple[Any, str]] = {}  # path -> (Element, fragment id)
        self._written: set[tuple[int, ...]] = set()
        self._widgets: dict[str, Widget] = {}
        self._timers: dict[str, tuple[float, float]] = {}  # fragment id -> (interval, next due)
        self._run_id = ""
        self._run_fragments: tuple[str, ...] = ()
        self._active: str | None = None  # the run going on (new_session seen, script_finished not yet)
        self._started: dict[str, float] = {}  # run id -> when its new_session arrived
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        self._closed = False
        self.session_id = ""
        self._file_urls: dict[str, Any] = {}  # request id -> FileURLsResponse
        self._xsrf: str | None = None
        self.cookies: dict[str, str] = _parse_cookies(cookie)  # e.g. the proxy's ce_worker
        self.reconnects = 0
        self.moves = 0  # moves to the other pool of workers this client followed
        self._move: dict | None = None  # a move the last run asked for, not followed yet
        self._beacon: dict | None = None  # the beacon watcher the last full run mounted (ui/beacon.js)
        self._beacon_mounted = False  # ... mounted again by the run going on
        self._beacon_conn: http.client.HTTPConnection | None = None  # kept alive, as a browser's
        self._open()

    @property
    def cookie(self) -> str | None:
        """The Cookie header this browser sends (None: no cookies)."""
        with self._lock:
            jar = dict(self.cookies)
        if self._xsrf:
            jar.setdefault(XSRF_COOKIE, self._xsrf)
        return "; ".join(f"{k}={v}" for k, v in jar.items()) or None

    def _open(self) -> None:
        """Load the page's address, then connect the websocket and ask for the first run, as a
        browser's page load does."""
        self._load_page()
        ws_url = "ws" + self.base[4:] + "/_stcore/stream"
        cookie = self.cookie
        headers = {"Cookie": cookie} if cookie else None
        self._ws = connect(
            ws_url,
            subprotocols=["streamlit"],
            max_size=None,
            max_queue=None,
            open_timeout=self.timeout,
            close_timeout=2,
            compression=None,
            additional_headers=headers,
        )
        self._keep_cookies(self._ws.response.headers.get_all("Set-Cookie") if self._ws.response else [])
        self._reader = threading.Thread(target=self._read, name=f"st-client {self.page_name}", daemon=True)
        self._reader.start()
        self._request(fragment_id="", first=True)

    def _load_page(self) -> None:
        """GET the page's address (its link with the query), as a browser does before its script
        opens the websocket: behind scripts/serve.py's nginx this answer sets the cookies that
        place the browser (ce_worker; ce_lane for a link at a large working size). A failure
        here is the websocket's to report."""
        url = f"{self.base}/{self.page_name}" + (f"?{self.query_string}" if self.query_string else "")
        cookie = self.cookie
        request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as r:
                r.read()
                self._keep_cookies(r.headers.get_all("Set-Cookie") or [])
        except OSError:
            pass

    def _keep_cookies(self, set_cookies: list[str]) -> None:
        """Keep what a response's Set-Cookie headers set, as a browser's jar does (behind
        scripts/serve.py's nginx: the ce_worker cookie naming the worker that answered)."""
        with self._lock:
            for header in set_cookies:
                name, _, value = header.split(";", 1)[0].strip().partition("=")
                if name and name != XSRF_COOKIE:
                    self.cookies[name] = value

    def reconnect(self) -> None:
        """After the server closed the connection (a worker died), connect again as the browser
        does: a new session on the address it shows (the page and its query string), whose widget
        states start from the page's defaults and the URL."""
        with contextlib.suppress(Exception):
            self._ws.close()
        self._reader.join(timeout=5)
        with self._changed:
            self._closed = False
            self.page_name = self._current_path()
            self.page_script_hash = ""
            self._elements.clear()
            self._written = set()
            self._widgets.clear()
            self._timers.clear()
            self._active = None
            self._move = None
            self.stats.full_runs = 0
            self.reconnects += 1
        self._open()

    def follow_move(self) -> bool:
        """If the last run asked to move to the other pool (ui/lanes.py), do what the browser does:
        set its cookies, reload its link (a new session on the worker the proxy now picks) and
        wait for the first run there. Returns whether it moved."""
        moved = False
        for _ in range(MAX_MOVES_IN_A_ROW):
            with self._lock:
                move, self._move = self._move, None
            if not move:
                break
            with self._lock:
                for name, value in (move.get("cookies") or {}).items():
                    if value is None:
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = str(value)
                self.query_string = urlencode(move.get("query") or {})
            self.moves += 1
            moved = True
            self._closed = True  # this browser leaves: the socket's end is no error
            self.reconnect()
            self.wait_for(lambda: self.stats.full_runs > 0 and self.idle, what="the first run after a move")
        return moved

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def upstream(self) -> str:
        """Behind scripts/serve.py's nginx: the worker(s) its websocket's handshake went to, as the
        proxy's X-Conv-Worker header names them (the last one answered); "" without that proxy."""
        return self._ws.response.headers.get("X-Conv-Worker", "") if self._ws.response else ""

    # ------------------------------------------------------------------ reading the page
    def texts(self, main_only: bool = False) -> list[str]:
        """Text of the elements on the page now, in page order (sidebar first unless main_only)."""
        out = []
        with self._lock:
            for path in sorted(self._elements):
                if main_only and path[:1] != (0,):
                    continue
                text = _text_of(self._elements[path][0])
                if text:
                    out.append(text)
        return out

    def text(self) -> str:
        return "\n".join(self.texts())

    def widget(self, label: str) -> Widget:
        with self._lock:
            found = [w for w in self._widgets.values() if w.label == label]
        if not found:
            raise ClientError(f"no widget labelled {label!r}; have {sorted(self.labels())}")
        return found[0]

    def labels(self) -> list[str]:
        with self._lock:
            return [w.label for w in self._widgets.values()]

    def value(self, label: str) -> Any:
        return self.widget(label).value

    @property
    def full_runs(self) -> int:
        return self.stats.full_runs

    @property
    def idle(self) -> bool:
        """No full run is going on (fragment runs may be)."""
        return self._active is None or bool(self._run_fragments)

    # ------------------------------------------------------------------ acting
    def set(self, label: str, value: Any, wait: bool = True) -> float | None:
        """Set the widget labelled `label` and rerun, as a user does; returns the rerun's seconds."""
        w = self.widget(label)
        state = _encode(w, value)
        with self._lock:
            w.state = state
        return self.rerun(wait=wait)

    def click(self, label: str, wait: bool = True) -> float | None:
        trigger = WidgetState(id=self.widget(label).proto.id, trigger_value=True)
        return self.rerun(wait=wait, extra=[trigger])

    def upload(self, label: str, name: str, data: bytes, mime: str = "application/octet-stream") -> float:
        """Upload `data` as file `name` to the file uploader labelled `label` and rerun, as the
        browser does; returns the seconds from the URL request to the rerun's end."""
        w = self.widget(label)
        started = time.perf_counter()
        request_id = uuid.uuid4().hex
        msg = BackMsg()
        msg.file_urls_request.request_id = request_id
        msg.file_urls_request.file_names.append(name)
        msg.file_urls_request.session_id = self.session_id
        self._send(msg)
        self.wait_for(lambda: request_id in self._file_urls, what="the upload URL")
        response = self._file_urls.pop(request_id)
        if response.error_msg:
            raise ClientError(f"no upload URL: {response.error_msg}")
        urls = response.file_urls[0]
        self._put(urls.upload_url, name, data, mime)
        state = WidgetState(id=w.proto.id)
        state.file_uploader_state_value.uploaded_file_info.append(
            UploadedFileInfo(name=name, size=len(data), file_id=urls.file_id, file_urls=urls)
        )
        with self._lock:
            w.state = state
        self.rerun()
        return time.perf_counter() - started

    def _put(self, url: str, name: str, data: bytes, mime: str) -> None:
        """PUT one file as multipart form data, with the XSRF cookie and the same token as header."""
        if self._xsrf is None:  # the health check the browser makes first sets the cookie
            jar = self.cookie or ""
            health = urllib.request.Request(self.base + "/_stcore/health", headers={"Cookie": jar})
            with urllib.request.urlopen(health, timeout=self.timeout) as r:
                cookies = [c.split(";", 1)[0] for c in r.headers.get_all("Set-Cookie") or []]
            self._xsrf = next((c.split("=", 1)[1] for c in cookies if c.startswith(XSRF_COOKIE + "=")), "")
        boundary = uuid.uuid4().hex
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
                f"Content-Type: {mime}\r\n\r\n"
            ).encode()
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        if self._xsrf:
            headers["X-Xsrftoken"] = self._xsrf
        cookie = self.cookie  # the proxy's cookies (the session's worker) and the XSRF cookie
        if cookie:
            headers["Cookie"] = cookie
        target = url if url.startswith("http") else self.base + url
        req = urllib.request.Request(target, data=body, method="PUT", headers=headers)
        with urllib.request.urlopen(req, timeout=self.timeout) as r:
            if r.status >= 300:
                raise ClientError(f"upload answered {r.status}")

    def switch_page(self, url_path: str, wait: bool = True) -> float | None:
        with self._lock:
            if url_path not in self.pages:
                raise ClientError(f"no page {url_path!r}; have {sorted(self.pages)}")
            self.page_script_hash = self.pages[url_path]
        return self.rerun(wait=wait)  # outside the lock: sending must never wait for the reader

    def rerun(self, wait: bool = True, extra: list[WidgetState] | None = None) -> float | None:
        """Ask for a full run with the current widget values; with wait, block until it finished
        and return the seconds it took from the request."""
        sent = time.perf_counter()
        self._request(fragment_id="", extra=extra)  # never under self._lock: the reader needs it
        if not wait:
            return None
        self.wait_for(lambda: self._full_run_since(sent), what="the rerun")
        self.follow_move()
        latency = time.perf_counter() - sent
        self.latencies.append(latency)
        return latency

    def wait_idle(self, timeout: float | None = None) -> None:
        """Wait for the first full run (or the next one, if a run is going on)."""
        self.wait_for(lambda: self.stats.full_runs > 0 and self.idle, timeout, "the first run")
        self.follow_move()

    def wait_for(
        self, predicate: Callable[[], bool], timeout: float | None = None, what: str = "a condition"
    ) -> None:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        with self._changed:
            while not predicate():
                if self._closed:
                    raise ClientError(f"connection closed while waiting for {what}: {self.errors[-3:]}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{what} did not happen within {timeout or self.timeout:g} s")
                self._changed.wait(min(left, 0.5))

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(Exception):  # closing a broken socket
            self._ws.close()
        self._reader.join(timeout=5)

    def __enter__(self) -> StClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol
    def _full_run_since(self, sent: float) -> bool:
        """A full run that started after `sent` has finished."""
        return any(
            r.fragment_ids == () and r.status == FULL_RUN_DONE and self._started.get(r.run_id, 0) >= sent
            for r in self.stats.runs
        )

    def _request(
        self,
        fragment_id: str,
        first: bool = False,
        auto: bool = False,
        extra: list[WidgetState] | None = None,
    ) -> None:
        with self._lock:
            msg = self._rerun_msg(fragment_id, first, auto, extra)
        self._send(msg)

    def _rerun_msg(
        self, fragment_id: str, first: bool, auto: bool, extra: list[WidgetState] | None
    ) -> BackMsg:
        msg = BackMsg()
        rs = msg.rerun_script
        rs.query_string = self.query_string
        if first or not self.page_script_hash:
            rs.page_name = self.page_name  # the browser's first request names the page by its path
        else:
            rs.page_script_hash = self.page_script_hash
        rs.fragment_id = fragment_id
        rs.is_auto_rerun = auto
        states = [w.state for w in self._widgets.values() if w.state is not None]
        extra_ids = {s.id for s in extra or []}
        rs.widget_states.widgets.extend([s for s in states if s.id not in extra_ids] + list(extra or []))
        ctx = rs.context_info
        ctx.timezone, ctx.timezone_offset, ctx.locale = "UTC", 0, "en-US"
        ctx.url = f"{self.base}/{self.page_name if first else self._current_path()}"
        return msg

    def _current_path(self) -> str:
        for path, h in self.pages.items():
            if h == self.page_script_hash:
                return path
        return self.page_name

    def _send(self, msg: BackMsg) -> None:
        data = msg.SerializeToString()
        with self._send_lock:
            self._ws.send(data)

    def _read(self) -> None:
        try:
            while not self._closed:
                try:
                    data = self._ws.recv(timeout=self._next_timer_in())
                except TimeoutError:
                    self._fire_timers()
                    continue
                msg = ForwardMsg()
                msg.ParseFromString(data)
                with self._changed:
                    self.stats.messages += 1
                    self.stats.bytes += len(data)
                    self._handle(msg)
                    self._changed.notify_all()
                self._fire_timers()
        except ConnectionClosed as exc:
            if not self._closed:
                self.errors.append(f"connection closed: {exc}")
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            with self._changed:
                self._closed = True
                self._changed.notify_all()

    def _next_timer_in(self) -> float:
        with self._lock:
            dues = [due for _, due in self._timers.values()]
            if self._beacon is not None and not self._beacon["asked"]:
                dues.append(self._beacon["due"])
            if not dues:
                return 0.5
            return max(0.0, min(dues) - time.monotonic())

    def _fire_timers(self) -> None:
        now = time.monotonic()
        due = []
        with self._lock:
            for fid, (interval, at) in list(self._timers.items()):
                if at <= now:
                    self._timers[fid] = (interval, at + interval if at + interval > now else now + interval)
                    due.append(fid)
        for fid in due:  # the browser's setInterval: ask for the fragment, whatever else is going on
            self.stats.auto_reruns_sent += 1
            self._request(fragment_id=fid, auto=True)
        self._look_at_beacon(now)

    def _look_at_beacon(self, now: float) -> None:
        """ui/beacon.js: every every_ms read the room's beacon; once it names a version after the
        one the page showed, send the component's trigger (one rerun) and stop looking."""
        with self._lock:
            watch = self._beacon
            if watch is None or watch["asked"] or watch["due"] > now:
                return
            watch["due"] = now + watch["every_ms"] / 1000
            url = f"{self.base}/{watch['url']}"
        self.stats.beacon_reads += 1
        try:
            version = int(json.loads(self._get_kept_alive(url))["v"])
        except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
            self._beacon_conn = None  # no beacon (yet), or it did not answer: look again next time
            return
        with self._lock:
            if self._beacon is not watch or watch["asked"] or version <= watch["shown"]:
                return
            watch["asked"] = True
        event = json.dumps([{"event": "changed", "value": {"shown": watch["shown"], "seen": version}}])
        trigger = WidgetState(id=_make_trigger_id(watch["id"], "events"), json_trigger_value=event)
        self.stats.beacon_reruns_sent += 1
        self._request(fragment_id="", extra=[trigger])

    def _get_kept_alive(self, url: str) -> bytes:
        """GET on one kept-alive connection, as a browser's fetch does (OSError or HTTPException
        when it fails; a status other than 200 is an OSError)."""
        parts = urlsplit(url)
        if self._beacon_conn is None:
            cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            self._beacon_conn = cls(parts.netloc, timeout=2)
        headers = {"Cookie": self.cookie} if self.cookie else {}
        self._beacon_conn.request("GET", parts.path, headers=headers)
        r = self._beacon_conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise OSError(f"HTTP {r.status}")
        return body

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            run = msg.metadata.run
            self._run_id, self._run_fragments = run.script_run_id, tuple(run.fragment_ids)
            self._active = run.script_run_id
            self._started[run.script_run_id] = time.perf_counter()
            if len(self._started) > 400:
                for old in list(self._started)[:200]:
                    del self._started[old]
            ns = msg.new_session
            if ns.initialize.session_id:
                self.session_id = ns.initialize.session_id
            if ns.page_script_hash:
                self.page_script_hash = ns.page_script_hash
            if ns.app_pages:  # by URL path and by title (Streamlit fills either, by version)
                self.pages.update(_page_keys(ns.app_pages))
            if not self._run_fragments:  # a full run: the browser drops its auto-rerun timers
                self._timers.clear()
                self._beacon_mounted = False
            self._written = set()
        elif kind == "delta":
            self._delta(msg)
        elif kind == "script_finished":
            self._finished(msg.script_finished)
        elif kind == "file_urls_response":
            self._file_urls[msg.file_urls_response.response_id] = msg.file_urls_response
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "auto_rerun":
            fid, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if fid and self._timers.get(fid, (None,))[0] != interval:
                self._timers[fid] = (interval, time.monotonic() + interval)
        elif kind == "stop_auto_rerun":
            for fid in msg.stop_auto_rerun.fragment_ids:
                self._timers.pop(fid, None)
        elif kind == "navigation":
            if msg.navigation.app_pages:
                self.pages = _page_keys(msg.navigation.app_pages)
            if msg.navigation.page_script_hash:
                self.page_script_hash = msg.navigation.page_script_hash
        elif kind == "page_not_found":
            self.errors.append(f"page not found: {msg.page_not_found.page_name!r}")
        elif (
            kind == "session_event" and msg.session_event.WhichOneof("type") == "script_compilation_exception"
        ):
            e = msg.session_event.script_compilation_exception
            self.errors.append(f"{e.type}: {e.message}")

    def _delta(self, msg: ForwardMsg) -> None:
        path = tuple(msg.metadata.delta_path)
        delta = msg.delta
        which = delta.WhichOneof("type")
        if which == "new_element":
            el = delta.new_element
            self._elements[path] = (el, delta.fragment_id)
            kind = el.WhichOneof("type")
            if kind == "exception":
                self.errors.append(f"{el.exception.type}: {el.exception.message}")
            if kind == "bidi_component" and el.bidi_component.component_name.endswith(LANE_COMPONENT):
                self._move = json.loads(el.bidi_component.json or "{}")
            if kind == "bidi_component" and el.bidi_component.component_name.endswith(BEACON_COMPONENT):
                data = json.loads(el.bidi_component.json or "{}")
                every = float(data.get("every_ms", 500))
                self._beacon = {
                    "id": el.bidi_component.id,
                    "url": str(data.get("url", "")),
                    "shown": int(data.get("shown", -1)),
                    "every_ms": every,
                    "due": time.monotonic() + every / 1000,
                    "asked": False,
                }
                self._beacon_mounted = True
            if kind in WIDGETS:
                self._widget(kind, getattr(el, kind))
        elif which == "add_block":
            self._elements[path] = (delta.add_block, delta.fragment_id)  # texts() reads an expander's label
        else:
            return
        self._written.add(path)

    def _widget(self, kind: str, proto: Any) -> None:
        old = self._widgets.get(proto.id)
        w = Widget(kind, proto, old.state if old is not None else None)
        if kind == "button":
            w.state = None
        elif getattr(proto, "set_value", False) or w.state is None:
            w.state = _state_from_proto(kind, proto)
        self._widgets[proto.id] = w

    def _finished(self, status: int) -> None:
        run = Run(self._run_id, self._run_fragments, status, time.perf_counter())
        self._active = None
        if status == FULL_RUN_DONE:
            self.stats.full_runs += 1
            if not self._beacon_mounted:  # not following any more: the watcher is gone
                self._beacon = None
            written = self._written
            self._elements = {p: e for p, e in self._elements.items() if _under(p, written)}
            live = {
                getattr(el, el.WhichOneof("type")).id
                for el, _ in self._elements.values()
                if el is not None and el.WhichOneof("type") in WIDGETS
            }
            self._widgets = {i: w for i, w in self._widgets.items() if i in live}
        elif status == FRAGMENT_DONE:
            self.stats.fragment_runs += 1
            mine = set(self._run_fragments)
            self._elements = {
                p: e for p, e in self._elements.items() if e[1] not in mine or p in self._written
            }
        self.stats.runs.append(run)
        del self.stats.runs[: -self.keep_runs]
        if self.on_run is not None and status in (FULL_RUN_DONE, FRAGMENT_DONE):
            try:
                self.on_run(self, run)
            except Exception as exc:
                self.errors.append(f"on_run: {type(exc).__name__}: {exc}")


def _parse_cookies(header: str | None) -> dict[str, str]:
    """A Cookie header ("a=1; b=2") as a jar."""
    jar = {}
    for part in (header or "").split(";"):
        name, eq, value = part.strip().partition("=")
        if name and eq:
            jar[name] = value
    return jar


def _page_keys(app_pages: Any) -> dict[str, str]:
    """page_script_hash by URL path and by title."""
    keys = {p.url_pathname: p.page_script_hash for p in app_pages if p.url_pathname}  # paths first
    for p in app_pages:
        if p.page_name:
            keys.setdefault(p.page_name, p.page_script_hash)
    return keys


def _under(path: tuple[int, ...], written: set[tuple[int, ...]]) -> bool:
    """Kept after a full run: written in it (a block's children live under its path)."""
    return path in written


def _text_of(el: Any) -> str:
    if el is None:
        return ""
    kind = el.WhichOneof("type")
    if kind == "markdown":
        return el.markdown.body
    if kind == "heading":
        return el.heading.body
    if kind == "alert":
        return el.alert.body
    if kind == "text":
        return el.text.body
    if kind == "metric":
        return f"{el.metric.label}: {el.metric.body}"
    if kind == "exception":
        return f"{el.exception.type}: {el.exception.message}"
    if kind == "code":
        return el.code.code_text
    if kind == "expandable":  # a block: an expander's label
        return el.expandable.label
    return ""


def _state_from_proto(kind: str, p: Any) -> WidgetState | None:
    """The value the browser would hold for a widget it has just drawn (Python's, else the default)."""
    s = WidgetState(id=p.id)
    if kind == "slider":
        if p.type == p.SELECT_SLIDER:
            labels = list(p.raw_value) if p.set_value else [p.options[int(i)] for i in p.default]
            s.string_array_value.data.extend(labels)
        else:
            s.double_array_value.data.extend(list(p.value) if p.set_value else list(p.default))
    elif kind in ("selectbox", "radio"):
        if p.set_value:
            s.string_value = p.raw_value
        elif 0 <= p.default < len(p.options):
            s.string_value = p.options[p.default]
        else:
            return None
    elif kind == "checkbox":
        s.bool_value = p.value if p.set_value else p.default
    elif kind == "number_input":
        v = p.value if p.set_value else p.default
        if p.data_type == p.INT:
            s.int_value = int(v)
        else:
            s.double_value = v
    elif kind in ("text_input", "text_area"):
        s.string_value = p.value if p.set_value else p.default
    else:
        return None
    return s


def _encode(w: Widget, value: Any) -> WidgetState:
    p, s = w.proto, WidgetState(id=w.proto.id)
    if w.kind == "slider":
        if p.type == p.SELECT_SLIDER:
            labels = [str(v) for v in (value if isinstance(value, list | tuple) else [value])]
            bad = [v for v in labels if v not in p.options]
            if bad:
                raise ClientError(f"{w.label!r} has no option {bad[0]!r}; options {list(p.options)}")
            s.string_array_value.data.extend(labels)
        else:
            s.double_array_value.data.extend(
                [float(v) for v in (value if isinstance(value, list | tuple) else [value])]
            )
    elif w.kind in ("selectbox", "radio"):
        if str(value) not in p.options:
            raise ClientError(f"{w.label!r} has no option {value!r}; options {list(p.options)}")
        s.string_value = str(value)
    elif w.kind == "checkbox":
        s.bool_value = bool(value)
    elif w.kind == "number_input":
        if p.data_type == p.INT:
            s.int_value = int(value)
        else:
            s.double_value = float(value)
    elif w.kind in ("text_input", "text_area"):
        s.string_value = str(value)
    else:
        raise ClientError(f"cannot set a {w.kind} ({w.label!r}); use click() for buttons")
    return s
