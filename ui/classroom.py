"""Live classroom rooms: an instructor publishes what the class sees, followers mirror it.

No Streamlit here: this is the process-wide state the classroom mode shares between sessions.
- One `RoomRegistry` per server process (the app holds it with st.cache_resource). Each Streamlit
  session runs in its own thread, so every method takes one registry lock; a room's state is an
  immutable `Snapshot` (page, settings, optional shared PNG, version) that followers read by
  reference, so a poll (`current`) is a dict lookup under the lock.
- `create_room` gives a 6-character code (alphabet `CODE_ALPHABET`: 31 symbols without 0/O/1/I/L,
  31**6 = 887,503,681 codes) and a `secrets.token_urlsafe(32)` secret (256 bits) that only the
  instructor's session holds; only a hash of it is kept. Publishing needs the secret (constant-time
  compare), so a student holding the code or the join link can watch but never drive.
- Guessing: a session gets `join_attempts` failed joins per `join_window_s` (default 10 per minute).
  With 20 live rooms that is 900 guesses in a 90-minute lecture, P(hit) <= 900 * 20 / 887.5e6 = 2e-5
  per session (a script opening many sessions multiplies that); a hit only lets someone watch.
- Bounded memory: at most `max_rooms` rooms, `max_followers` live followers per room (a follower that
  stops polling for `follower_timeout_s` is dropped), one image of <= `max_image_bytes` per room, and
  bounded tables of ended rooms and rate-limit entries. Rooms expire after `idle_expiry_s` without a
  publish or `touch` from the instructor; expiry is checked lazily on access (no timer thread).
- Several server processes: a room lives in the memory of the process that created it. A per-browser
  sticky cookie is not enough (the instructor and each student would stick to different processes);
  the whole class must reach the instructor's process, e.g. one process per port or base URL path
  (`--server.baseUrlPath`) with the join link naming it. Sharing rooms across processes would take
  an external store with this same API: Redis hashes for the room (secret hash, snapshot, INCR
  version, EXPIRE for idle expiry), pub/sub or polling for followers, INCR + EXPIRE counters for the
  join limit. We chose one process (60 followers polling once a second is ~60 lookups/s) and document
  the routing rule.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import re
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: readable from a projector
CODE_LENGTH = 6
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

MAX_SETTINGS = 256  # keys in one snapshot
MAX_TEXT = 4096  # characters in a str setting value (a custom 15 x 15 kernel as URL text: up to 3150)
MAX_INT = 2**31  # |int setting| < MAX_INT
MAX_NAME = 80  # characters in a shared image's name
MAX_WAIT_S = 60.0  # longest wait_for_change
ENDED_KEEP_S = 6 * 3600.0  # how long "room X ended" is remembered (instead of "no room X")
ENDED_KEEP_MAX = 1000
MAX_TRACKED_SESSIONS = 10_000  # sessions with recent failed joins (oldest forgotten first)
SWEEP_EVERY_S = 1.0

_PAGE = re.compile(r"^[A-Za-z0-9_\-]{0,64}$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FIELDS = frozenset({"page", "settings", "image"})

# ------------------------------------------------------------------------------------- errors


class RoomError(Exception):
    """A classroom request that cannot be served; str(error) is a message for people."""


class RoomNotFound(RoomError):  # noqa: N818 (names fixed by the integration contract)
    def __init__(self, shown: str) -> None:
        what = f"no room {shown}" if shown else "no room with that code"
        super().__init__(f"{what}: check the code on the projector")


class RoomEnded(RoomError):  # noqa: N818 (names fixed by the integration contract)
    """The room existed and has ended (expired or closed)."""


class RoomExpired(RoomEnded):
    def __init__(self, code: str, idle_s: float) -> None:
        super().__init__(f"room {code} ended: no instructor activity for {_duration(idle_s)}")


class RoomClosed(RoomEnded):
    def __init__(self, code: str) -> None:
        super().__init__(f"room {code} ended: the instructor closed it")


class NotInstructor(RoomError):  # noqa: N818 (names fixed by the integration contract)
    def __init__(self, code: str) -> None:
        super().__init__(f"only the instructor who started room {code} can change it")


class RoomFull(RoomError):  # noqa: N818 (names fixed by the integration contract)
    def __init__(self, code: str, limit: int) -> None:
        super().__init__(
            f"room {code} is full ({limit} followers, the server's limit CONV_EXPLORER_MAX_FOLLOWERS): "
            "tell the instructor"
        )


class RoomLimitReached(RoomError):  # noqa: N818 (names fixed by the integration contract)
    def __init__(self, limit: int, idle_s: float) -> None:
        super().__init__(
            f"this server already runs {limit} rooms (the limit CONV_EXPLORER_MAX_ROOMS): close one, or "
            f"wait until an idle room expires ({_duration(idle_s)} without instructor activity)"
        )


class TooManyAttempts(RoomError):  # noqa: N818 (names fixed by the integration contract)
    def __init__(self, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"too many wrong room codes from this session: wait {math.ceil(retry_after_s)} s and try again"
        )


class InvalidSnapshot(RoomError, ValueError):  # noqa: N818 (names fixed by the integration contract)
    """What the instructor's session tried to publish is malformed (a bug in the caller)."""


class ImageTooLarge(InvalidSnapshot):
    pass


class ConfigError(ValueError):
    """An environment variable has a value the classroom mode cannot use."""


# ------------------------------------------------------------------------------ the values


@dataclass(frozen=True)
class SharedImage:
    """An image the instructor chose to share: PNG bytes and a display name (`key` identifies it)."""

    png: bytes = field(repr=False)
    name: str
    key: str = field(init=False)

    def __post_init__(self) -> None:
        png = self.png
        if isinstance(png, bytearray | memoryview):
            png = bytes(png)
            object.__setattr__(self, "png", png)
        if not isinstance(png, bytes) or not png.startswith(PNG_SIGNATURE):
            raise InvalidSnapshot("the shared image must be PNG bytes (re-encode the working image)")
        if not isinstance(self.name, str):
            raise InvalidSnapshot(f"the shared image's name must be text, not {type(self.name).__name__}")
        object.__setattr__(self, "name", _CONTROL.sub(" ", self.name)[:MAX_NAME])
        object.__setattr__(self, "key", hashlib.sha256(png).hexdigest()[:32])

    @property
    def nbytes(self) -> int:
        return len(self.png)


@dataclass(frozen=True)
class Snapshot:
    """What followers mirror. Immutable, so many threads may read the same one."""

    page: str  # url_path of the page, e.g. "direct" ("" for the home page)
    settings: Mapping[str, str | int | bool]  # a read-only MappingProxyType
    image: SharedImage | None
    version: int  # 1, 2, ... per room, bumped only when the content changes
    published_at: float  # the registry clock when this version was published


@dataclass(frozen=True)
class RoomStatus:
    """What the instructor's sidebar shows (returned by touch)."""

    code: str
    version: int
    followers: int
    expires_in_s: float


@dataclass(frozen=True)
class RegistryStats:
    rooms: int
    followers: int
    image_bytes: int  # bytes of shared images held by live rooms
    ended_rooms: int  # remembered so that their followers hear "ended", not "no room"
    tracked_sessions: int  # sessions with failed joins inside the rate-limit window


@dataclass(frozen=True)
class RoomView:
    """A follower's handle on a room it joined (holds no secret: it cannot publish)."""

    code: str
    follower_id: str
    registry: RoomRegistry = field(repr=False, compare=False)

    def current(self) -> Snapshot | None:
        return self.registry.current(self.code, follower_id=self.follower_id)

    def wait_for_change(self, known_version: int, timeout_s: float) -> Snapshot | None:
        return self.registry.wait_for_change(
            self.code, known_version, timeout_s, follower_id=self.follower_id
        )

    def leave(self) -> None:
        self.registry.leave(self.code, self.follower_id)


# ------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class _Var:
    name: str
    default: float
    lo: float
    hi: float
    whole: bool
    scale: float  # value in the variable's unit -> RoomRegistry's unit
    kwarg: str


ENV_VARS = (
    _Var("CONV_EXPLORER_MAX_ROOMS", 20, 1, 1000, True, 1, "max_rooms"),
    _Var("CONV_EXPLORER_MAX_FOLLOWERS", 100, 1, 1000, True, 1, "max_followers"),
    _Var("CONV_EXPLORER_ROOM_IDLE_MINUTES", 90, 0.05, 1440, False, 60, "idle_expiry_s"),
    _Var("CONV_EXPLORER_ROOM_IMAGE_MB", 8, 0, 64, False, 1024 * 1024, "max_image_bytes"),
)
_WHOLE = re.compile(r"^\d{1,7}$")
_DECIMAL = re.compile(r"^\d{1,7}(\.\d{1,6})?$")


def config_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """RoomRegistry keyword arguments from CONV_EXPLORER_* variables (unset or empty: the default).

    Raises ConfigError naming the variable, its value and the allowed range.
    """
    env = os.environ if environ is None else environ
    kwargs: dict[str, Any] = {}
    for var in ENV_VARS:
        raw = env.get(var.name, "").strip()
        if not raw:
            value = var.default
        else:
            shown = re.sub(r"[^A-Za-z0-9_.\-+]", "?", raw[:20]) + ("…" if len(raw) > 20 else "")
            unit = "a whole number" if var.whole else "a number"
            if not (_WHOLE if var.whole else _DECIMAL).match(raw):
                raise ConfigError(
                    f"{var.name}={shown!r} is not {unit}: use e.g. {var.name}={var.default:g} "
                    f"(allowed {var.lo:g} to {var.hi:g})"
                )
            value = float(raw)
            if not var.lo <= value <= var.hi:
                raise ConfigError(
                    f"{var.name}={raw} is out of range: allowed {var.lo:g} to {var.hi:g} "
                    f"(default {var.default:g})"
                )
        scaled = value * var.scale
        kwargs[var.kwarg] = int(scaled) if var.whole or var.kwarg == "max_image_bytes" else float(scaled)
    return kwargs


# ------------------------------------------------------------------------------ the registry


def _random_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize_code(raw: object) -> str | None:
    """The canonical code for what a student typed ("abc-123 " -> "ABC123"), or None if malformed."""
    if not isinstance(raw, str) or len(raw) > 40:
        return None
    code = re.sub(r"[\s\-_]", "", raw).upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        return None
    return code


def _shown_code(raw: object) -> str:
    """Untrusted input, safe to echo: letters and digits only, at most 8 of them."""
    text = re.sub(r"[^A-Z0-9]", "", str(raw).upper()) if isinstance(raw, str) else ""
    return text[:8] + ("…" if len(text) > 8 else "")


def _digest(secret: object) -> bytes:
    data = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) else b""
    return hashlib.sha256(b"conv-explorer-room\0" + data).digest()


def _duration(seconds: float) -> str:
    if seconds >= 60:
        minutes = seconds / 60
        text = f"{minutes:g}" if minutes == int(minutes) else f"{minutes:.1f}"
        return f"{text} minute{'' if text == '1' else 's'}"
    return f"{seconds:g} second{'' if seconds == 1 else 's'}"


def _settings_of(raw: object) -> dict[str, str | int | bool]:
    if not isinstance(raw, Mapping):
        raise InvalidSnapshot(f"settings must be a mapping of names to values, not {type(raw).__name__}")
    if len(raw) > MAX_SETTINGS:
        raise InvalidSnapshot(f"{len(raw)} settings; a snapshot holds at most {MAX_SETTINGS}")
    out: dict[str, str | int | bool] = {}
    for key in sorted(raw, key=str):
        value = raw[key]
        if not isinstance(key, str) or not _KEY.match(key):
            raise InvalidSnapshot(f"setting name {str(key)[:40]!r} is not an identifier of <= 64 characters")
        if isinstance(value, bool):
            pass
        elif isinstance(value, int):
            if not -MAX_INT < value < MAX_INT:
                raise InvalidSnapshot(f"setting {key}={value} is out of range (|value| < 2**31)")
        elif isinstance(value, str):
            if len(value) > MAX_TEXT:
                raise InvalidSnapshot(f"setting {key} has {len(value)} characters; at most {MAX_TEXT}")
        else:
            raise InvalidSnapshot(f"setting {key} is a {type(value).__name__}; only str, int and bool")
        out[key] = value
    return out


class _Room:
    """A live room (mutable; only touched under the registry lock). Holds no secret, only its hash."""

    __slots__ = ("changed", "code", "content", "followers", "last_activity", "secret_hash", "snapshot")

    def __init__(self, code: str, secret_hash: bytes, now: float, lock: threading.Lock) -> None:
        self.code = code
        self.secret_hash = secret_hash
        self.last_activity = now
        self.snapshot: Snapshot | None = None
        self.content: tuple | None = None
        self.followers: dict[str, float] = {}  # follower_id -> last seen
        self.changed = threading.Condition(lock)

    @property
    def version(self) -> int:
        return 0 if self.snapshot is None else self.snapshot.version


class RoomRegistry:
    """All rooms of this server process; thread-safe. See the module docstring for the design."""

    def __init__(
        self,
        max_rooms: int = 20,
        max_followers: int = 100,
        idle_expiry_s: float = 90 * 60.0,
        join_attempts: int = 10,
        join_window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        max_image_bytes: int = 8 * 1024 * 1024,
        follower_timeout_s: float = 30.0,
    ) -> None:
        for name, value, lo in (
            ("max_rooms", max_rooms, 1),
            ("max_followers", max_followers, 1),
            ("join_attempts", join_attempts, 1),
            ("max_image_bytes", max_image_bytes, 0),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < lo:
                raise ValueError(f"{name}={value!r} must be a whole number >= {lo}")
        for name, value in (
            ("idle_expiry_s", idle_expiry_s),
            ("join_window_s", join_window_s),
            ("follower_timeout_s", follower_timeout_s),
        ):
            if not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"{name}={value!r} must be a positive number of seconds")
        if not callable(clock):
            raise ValueError("clock must be a function returning seconds (like time.monotonic)")
        self.max_rooms = max_rooms
        self.max_followers = max_followers
        self.idle_expiry_s = float(idle_expiry_s)
        self.join_attempts = join_attempts
        self.join_window_s = float(join_window_s)
        self.max_image_bytes = max_image_bytes
        self.follower_timeout_s = float(follower_timeout_s)
        self._clock = clock
        self._lock = threading.Lock()
        self._rooms: dict[str, _Room] = {}
        # code -> (when it ended, why): a new exception is made per raise (no shared tracebacks)
        self._ended: OrderedDict[str, tuple[float, Callable[[], RoomEnded]]] = OrderedDict()
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._last_sweep = -math.inf

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> RoomRegistry:
        """A registry configured by CONV_EXPLORER_* variables (ConfigError on bad values)."""
        return cls(**{**config_from_env(environ), **overrides})

    # ---------------------------------------------------------------- instructor

    def create_room(self) -> tuple[str, str]:
        """A new room: (code to show on the projector, secret for the instructor's session only)."""
        secret = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            self._sweep(now, force=True)
            if len(self._rooms) >= self.max_rooms:
                raise RoomLimitReached(self.max_rooms, self.idle_expiry_s)
            code = _random_code()
            while code in self._rooms or code in self._ended:
                code = _random_code()
            self._rooms[code] = _Room(code, _digest(secret), now, self._lock)
        return code, secret

    def publish(self, code: str, secret: str, snapshot_fields: Mapping[str, Any]) -> int:
        """Publish {"page": str, "settings": {name: value}, "image": SharedImage | None}.

        Returns the room's version: bumped only when page, settings or image differ from the last
        publish. Any publish counts as instructor activity.
        """
        page, settings, image = self._fields(snapshot_fields)
        content = (page, tuple((k, type(v).__name__, v) for k, v in settings.items()),
                   None if image is None else (image.key, image.name))  # fmt: skip
        with self._lock:
            now = self._clock()
            room = self._instructor_room(code, secret, now)
            room.last_activity = now
            if content == room.content:
                return room.version
            old = None if room.snapshot is None else room.snapshot.image
            if image is not None and old is not None and (old.key, old.name) == (image.key, image.name):
                image = old  # the same object: followers' caches keyed on it stay warm
            room.snapshot = Snapshot(page, MappingProxyType(settings), image, room.version + 1, now)
            room.content = content
            room.changed.notify_all()
            return room.snapshot.version

    def touch(self, code: str, secret: str) -> RoomStatus:
        """The instructor's heartbeat (keeps the room alive without a change); also checks a secret."""
        with self._lock:
            now = self._clock()
            room = self._instructor_room(code, secret, now)
            room.last_activity = now
            self._prune_followers(room, now)
            return RoomStatus(room.code, room.version, len(room.followers), self.idle_expiry_s)

    def close(self, code: str, secret: str) -> None:
        """End the room now; its followers get RoomClosed."""
        with self._lock:
            now = self._clock()
            room = self._instructor_room(code, secret, now)
            self._end(room, lambda: RoomClosed(room.code), now)

    # ----------------------------------------------------------------- followers

    def join(self, code: str, follower_id: str) -> RoomView:
        """Follow room `code` (as typed by a student). Failed joins count against the session's limit."""
        fid = self._follower_id(follower_id)
        with self._lock:
            now = self._clock()
            self._sweep(now)
            self._check_attempts(fid, now)
            try:
                room = self._room(code, now)
            except (RoomNotFound, RoomEnded):
                self._record_failure(fid, now)
                raise
            self._admit(room, fid, now)
            return RoomView(room.code, fid, self)

    def leave(self, code: str, follower_id: str) -> None:
        """Stop following (no error if not following or the room is gone)."""
        fid = self._follower_id(follower_id)
        with self._lock:
            norm = normalize_code(code)
            room = self._rooms.get(norm) if norm else None
            if room is not None:
                room.followers.pop(fid, None)

    def current(self, code: str, follower_id: str | None = None) -> Snapshot | None:
        """The room's newest snapshot (None before the first publish). Cheap: poll it freely.

        With follower_id, also marks that follower as alive (re-admitting one dropped for silence,
        which may raise RoomFull). Raises RoomNotFound / RoomExpired / RoomClosed.
        """
        fid = None if follower_id is None else self._follower_id(follower_id)
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if fid is not None:
                self._admit(room, fid, now)
            return room.snapshot

    def wait_for_change(
        self, code: str, known_version: int, timeout_s: float, follower_id: str | None = None
    ) -> Snapshot | None:
        """Block until the room's version exceeds known_version, or timeout_s (real seconds) pass;
        then return the newest snapshot, as current() does. Raises as current() does, also when the
        room ends while waiting."""
        if not isinstance(timeout_s, int | float) or not 0 <= timeout_s <= MAX_WAIT_S:
            raise ValueError(f"timeout_s={timeout_s!r} must be between 0 and {MAX_WAIT_S:g} seconds")
        fid = None if follower_id is None else self._follower_id(follower_id)
        deadline = time.monotonic() + timeout_s
        with self._lock:
            room = self._room(code, self._clock())
            while (
                room.version <= known_version
                and self._rooms.get(room.code) is room
                and self._clock() - room.last_activity < self.idle_expiry_s
            ):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                room.changed.wait(remaining)
            now = self._clock()
            room = self._room(room.code, now)  # ended while waiting: raises
            if fid is not None:
                self._admit(room, fid, now)
            return room.snapshot

    # --------------------------------------------------------------------- stats

    def stats(self) -> RegistryStats:
        with self._lock:
            now = self._clock()
            self._sweep(now, force=True)
            for room in self._rooms.values():
                self._prune_followers(room, now)
            return RegistryStats(
                rooms=len(self._rooms),
                followers=sum(len(r.followers) for r in self._rooms.values()),
                image_bytes=sum(
                    r.snapshot.image.nbytes
                    for r in self._rooms.values()
                    if r.snapshot is not None and r.snapshot.image is not None
                ),
                ended_rooms=len(self._ended),
                tracked_sessions=len(self._failures),
            )

    # --------------------------------------------------- internals (lock held)

    def _fields(self, fields: Mapping[str, Any]) -> tuple[str, dict, SharedImage | None]:
        """Validate what the instructor publishes (no lock needed: pure)."""
        if not isinstance(fields, Mapping):
            raise InvalidSnapshot(f"publish takes a mapping of snapshot fields, not {type(fields).__name__}")
        unknown = set(fields) - _FIELDS
        if unknown:
            raise InvalidSnapshot(
                f"unknown snapshot fields {sorted(map(str, unknown))}; known: page, settings, image"
            )
        if "page" not in fields or "settings" not in fields:
            raise InvalidSnapshot("a snapshot needs 'page' and 'settings'")
        page = fields["page"]
        if not isinstance(page, str) or not _PAGE.match(page):
            raise InvalidSnapshot(f"page {str(page)[:40]!r} is not a page url_path")
        settings = _settings_of(fields["settings"])
        image = fields.get("image")
        if image is not None:
            if not isinstance(image, SharedImage):
                raise InvalidSnapshot(f"image must be a SharedImage or None, not {type(image).__name__}")
            if image.nbytes > self.max_image_bytes:
                if self.max_image_bytes == 0:
                    raise ImageTooLarge(
                        "sharing images is off on this server (CONV_EXPLORER_ROOM_IMAGE_MB=0)"
                    )
                raise ImageTooLarge(
                    f"the shared image is {image.nbytes / 2**20:.1f} MB; a room holds at most "
                    f"{self.max_image_bytes / 2**20:.1f} MB (CONV_EXPLORER_ROOM_IMAGE_MB): "
                    "share a smaller working size"
                )
        return page, settings, image

    def _room(self, code: object, now: float) -> _Room:
        norm = normalize_code(code)
        if norm is None:
            raise RoomNotFound(_shown_code(code))
        room = self._rooms.get(norm)
        if room is None:
            ended = self._ended.get(norm)
            if ended is not None and now - ended[0] <= ENDED_KEEP_S:
                raise ended[1]()
            raise RoomNotFound(norm)
        if now - room.last_activity >= self.idle_expiry_s:
            self._end(room, self._expired_error(norm), now)
            raise self._ended[norm][1]()
        return room

    def _expired_error(self, code: str) -> Callable[[], RoomEnded]:
        idle = self.idle_expiry_s
        return lambda: RoomExpired(code, idle)

    def _instructor_room(self, code: object, secret: object, now: float) -> _Room:
        room = self._room(code, now)
        if not hmac.compare_digest(room.secret_hash, _digest(secret)):
            raise NotInstructor(room.code)
        return room

    def _end(self, room: _Room, why: Callable[[], RoomEnded], now: float) -> None:
        del self._rooms[room.code]
        self._ended[room.code] = (now, why)
        while len(self._ended) > ENDED_KEEP_MAX:
            self._ended.popitem(last=False)
        room.followers.clear()
        room.changed.notify_all()

    def _sweep(self, now: float, force: bool = False) -> None:
        """End idle rooms; forget old ended rooms and old failed joins."""
        if not force and now - self._last_sweep < SWEEP_EVERY_S:
            return
        self._last_sweep = now
        for room in [r for r in self._rooms.values() if now - r.last_activity >= self.idle_expiry_s]:
            self._end(room, self._expired_error(room.code), now)
        while self._ended and now - next(iter(self._ended.values()))[0] > ENDED_KEEP_S:
            self._ended.popitem(last=False)
        for fid in [f for f, times in self._failures.items() if now - times[-1] >= self.join_window_s]:
            del self._failures[fid]

    def _prune_followers(self, room: _Room, now: float) -> None:
        stale = [f for f, seen in room.followers.items() if now - seen > self.follower_timeout_s]
        for fid in stale:
            del room.followers[fid]

    def _admit(self, room: _Room, fid: str, now: float) -> None:
        if fid not in room.followers and len(room.followers) >= self.max_followers:
            self._prune_followers(room, now)
            if len(room.followers) >= self.max_followers:
                raise RoomFull(room.code, self.max_followers)
        room.followers[fid] = now

    def _check_attempts(self, fid: str, now: float) -> None:
        times = self._failures.get(fid)
        if times is None:
            return
        while times and now - times[0] >= self.join_window_s:
            times.popleft()
        if not times:
            del self._failures[fid]
        elif len(times) >= self.join_attempts:
            raise TooManyAttempts(times[0] + self.join_window_s - now)

    def _record_failure(self, fid: str, now: float) -> None:
        times = self._failures.setdefault(fid, deque(maxlen=self.join_attempts))
        times.append(now)
        self._failures.move_to_end(fid)
        while len(self._failures) > MAX_TRACKED_SESSIONS:
            self._failures.popitem(last=False)

    @staticmethod
    def _follower_id(follower_id: object) -> str:
        if not isinstance(follower_id, str) or not 0 < len(follower_id) <= 128:
            raise ValueError("follower_id must be a non-empty string of at most 128 characters")
        return follower_id
