"""Live classroom rooms: an instructor publishes what the class sees, followers mirror it.

No Streamlit here. The rooms live in a store that every server process of a deployment shares, so
a follower on any worker follows an instructor on any other:

- `RoomStore` holds the rules once: codes, the instructor's secret (only its hash is stored),
  versioned snapshots, presence, limits and rate limits. It keeps its data in a `Backend`, one of
  two with the same small interface: `MemoryBackend` (one process, the default of
  `python3 scripts/dev.py app`) and `RedisBackend` (`CONV_EXPLORER_REDIS_URL`, what
  `python3 scripts/dev.py serve` starts). Times are wall-clock seconds (`time.time`), the clock
  every process agrees on; tests inject their own.
- A room is one record (JSON): the secret's hash, its owner's address, the instructor's last
  heartbeat, a version, the page, the settings and the shared image's key. A follower's poll reads
  that one record (one GET: microseconds in Redis, a dict lookup in memory); the version tells
  it whether anything changed, so an unchanged room costs no rerun.
- Presence: the instructor's open tab beats every few seconds. Without a beat for `left_after_s`
  followers read "the instructor has left"; after `end_after_s` the room has ended. A beat in
  between (the instructor's worker restarted, the tab reconnected) carries on with the same code.
- Limits, all per client address and shared by every process: failed joins (code guessing),
  room creations, wrong passphrases, and live rooms per address, so that no single client can
  fill the server's room limit. Shared images and networks live beside the room with the same
  lifetime, capped in size, named by a hash of their bytes: they are written once when they change
  (not at every publish), and a follower fetches one only when the snapshot names a new one.

Codes: 6 characters of `CODE_ALPHABET` (31 symbols without 0/O/1/I/L: 31**6 = 887,503,681
codes); secrets: `secrets.token_urlsafe(32)` (256 bits), compared by hash in constant time. With
20 live rooms and 30 failed joins per minute per address, a 90-minute lecture allows 2,700
guesses per address, P(hit) <= 2,700 * 20 / 887.5e6 = 6e-5; a hit only lets someone watch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L: readable from a projector
CODE_LENGTH = 6
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NPZ_SIGNATURE = b"PK\x03\x04"  # an .npz is a zip file (numpy.savez)

MAX_SETTINGS = 256  # keys in one snapshot
MAX_TEXT = 4096  # characters in a str setting value (a custom 15 x 15 kernel as URL text: up to 3150)
MAX_INT = 2**31  # |int setting| < MAX_INT
MAX_NAME = 80  # characters in a shared image's or network's name
ENDED_KEEP_S = 6 * 3600.0  # how long "room X ended" is remembered (instead of "no room X")
FOLLOWER_TIMEOUT_S = 30.0  # a follower that has not polled for this long is not counted
KEY_PREFIX = "ce:"  # every key this store writes (one Redis may serve other things too)

_PAGE = re.compile(r"^[A-Za-z0-9_\-]{0,64}$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FIELDS = frozenset({"page", "settings", "image", "network"})

# ------------------------------------------------------------------------------------- errors


class RoomError(Exception):
    """A classroom request that cannot be served; str(error) is a message for people."""


class RoomNotFound(RoomError):  # noqa: N818 (the names read as what happened)
    def __init__(self, shown: str) -> None:
        what = f"no room {shown}" if shown else "no room with that code"
        super().__init__(f"{what}: check the code on the projector")


class RoomEnded(RoomError):  # noqa: N818
    """The room existed and has ended (the instructor closed it or left)."""


class RoomExpired(RoomEnded):
    def __init__(self, code: str, after_s: float) -> None:
        super().__init__(f"room {code} ended: the instructor left {_duration(after_s)} ago")


class RoomClosed(RoomEnded):
    def __init__(self, code: str) -> None:
        super().__init__(f"room {code} ended: the instructor closed it")


class NotInstructor(RoomError):  # noqa: N818
    def __init__(self, code: str) -> None:
        super().__init__(f"only the instructor who started room {code} can change it")


class RoomFull(RoomError):  # noqa: N818
    def __init__(self, code: str, limit: int) -> None:
        super().__init__(
            f"room {code} is full ({limit} followers, the server's limit CONV_EXPLORER_MAX_FOLLOWERS): "
            "tell the instructor"
        )


class RoomLimitReached(RoomError):  # noqa: N818
    def __init__(self, limit: int, end_after_s: float) -> None:
        super().__init__(
            f"this server already runs {limit} rooms (the limit CONV_EXPLORER_MAX_ROOMS): a room ends "
            f"{_duration(end_after_s)} after its instructor's tab closes"
        )


class TooManyRooms(RoomError):  # noqa: N818
    def __init__(self, limit: int) -> None:
        super().__init__(
            f"this address already runs {limit} live room{'' if limit == 1 else 's'} "
            "(CONV_EXPLORER_MAX_ROOMS_PER_CLIENT): end one first"
        )


class TooManyAttempts(RoomError):  # noqa: N818
    def __init__(self, what: str, retry_after_s: float) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(
            f"too many {what} from this address: wait {math.ceil(retry_after_s)} s and try again"
        )


class StoreUnavailable(RoomError):  # noqa: N818
    """The shared store (Redis) does not answer; the room itself is not lost."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the classroom store is not answering ({detail}): following pauses and resumes when it is back"
        )


class InvalidSnapshot(RoomError, ValueError):  # noqa: N818
    """What the instructor's session tried to publish is malformed (a bug in the caller)."""


class ImageTooLarge(InvalidSnapshot):
    pass


class NetworkTooLarge(InvalidSnapshot):
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
        object.__setattr__(self, "name", _shared_name(self.name, "image"))
        object.__setattr__(self, "key", _content_key(png))

    @property
    def nbytes(self) -> int:
        return len(self.png)


def _content_key(data: bytes) -> str:
    """The name of shared bytes in the store: a hash of the bytes, so equal bytes are one entry."""
    return hashlib.sha256(data).hexdigest()[:32]


def _shared_name(name: object, what: str) -> str:
    if not isinstance(name, str):
        raise InvalidSnapshot(f"the shared {what}'s name must be text, not {type(name).__name__}")
    return _CONTROL.sub(" ", name)[:MAX_NAME]


@dataclass(frozen=True)
class SharedNetwork:
    """A trained network the instructor shares: its weights as .npz bytes and a display name (e.g.
    "epoch 3, step 36"); `key` identifies the bytes. The store checks only that they look like an
    .npz: what the weights mean is the page's business, and a follower checks them on loading."""

    npz: bytes = field(repr=False)
    name: str
    key: str = field(init=False)

    def __post_init__(self) -> None:
        npz = self.npz
        if isinstance(npz, bytearray | memoryview):
            npz = bytes(npz)
            object.__setattr__(self, "npz", npz)
        if not isinstance(npz, bytes) or not npz.startswith(NPZ_SIGNATURE):
            raise InvalidSnapshot("the shared network must be the .npz bytes of its weights")
        object.__setattr__(self, "name", _shared_name(self.name, "network"))
        object.__setattr__(self, "key", _content_key(npz))

    @property
    def nbytes(self) -> int:
        return len(self.npz)


@dataclass(frozen=True)
class Snapshot:
    """What followers mirror (immutable). The image and the network are named by key;
    `RoomStore.image` and `RoomStore.network` have their bytes."""

    page: str  # url_path of the page, e.g. "direct" ("" for the home page)
    settings: Mapping[str, str | int | bool]  # a read-only MappingProxyType
    image_key: str | None
    image_name: str
    version: int  # 1, 2, ... per room, bumped only when the content changes
    instructor_here: bool  # False once the instructor's heartbeat is overdue (the room goes on a while)
    network_key: str | None = None
    network_name: str = ""


@dataclass(frozen=True)
class RoomStatus:
    """What the instructor's sidebar shows (returned by heartbeat)."""

    code: str
    version: int
    followers: int


# ------------------------------------------------------------------------------ the backends


class Backend(Protocol):
    """The few operations the rooms need; MemoryBackend and RedisBackend implement them alike."""

    def get(self, key: str) -> bytes | None: ...
    def put(self, key: str, value: bytes, ttl_s: float, *, only_new: bool = False) -> bool: ...
    def expire(self, key: str, ttl_s: float) -> None: ...
    def delete(self, key: str) -> None: ...
    def count_in_window(self, key: str, window_s: float) -> int: ...
    def mark(self, key: str, member: str, when: float) -> None: ...
    def unmark(self, key: str, member: str) -> None: ...
    def count_since(self, key: str, since: float) -> int: ...  # marked after `since`
    def is_marked(self, key: str, member: str, since: float) -> bool: ...


class MemoryBackend:
    """One process's memory; thread-safe. Expiry is checked on access with the given clock."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._values: dict[str, tuple[bytes, float]] = {}
        self._sets: dict[str, dict[str, float]] = {}
        self._last_sweep = -math.inf

    def _live(self, key: str, now: float) -> tuple[bytes, float] | None:
        item = self._values.get(key)
        if item is not None and item[1] <= now:
            del self._values[key]
            return None
        return item

    def _sweep(self, now: float) -> None:
        """Forget expired values now and then (bounded memory without a timer thread)."""
        if now - self._last_sweep < 60:
            return
        self._last_sweep = now
        for key in [k for k, (_, until) in self._values.items() if until <= now]:
            del self._values[key]

    def get(self, key: str) -> bytes | None:
        with self._lock:
            item = self._live(key, self._clock())
            return None if item is None else item[0]

    def put(self, key: str, value: bytes, ttl_s: float, *, only_new: bool = False) -> bool:
        with self._lock:
            now = self._clock()
            self._sweep(now)
            if only_new and self._live(key, now) is not None:
                return False
            self._values[key] = (value, now + ttl_s)
            return True

    def expire(self, key: str, ttl_s: float) -> None:
        with self._lock:
            now = self._clock()
            item = self._live(key, now)
            if item is not None:
                self._values[key] = (item[0], now + ttl_s)

    def delete(self, key: str) -> None:
        with self._lock:
            self._values.pop(key, None)
            self._sets.pop(key, None)

    def count_in_window(self, key: str, window_s: float) -> int:
        with self._lock:
            now = self._clock()
            item = self._live(key, now)
            count = 1 if item is None else int(item[0]) + 1
            self._values[key] = (str(count).encode(), now + window_s if item is None else item[1])
            return count

    def mark(self, key: str, member: str, when: float) -> None:
        with self._lock:
            self._sets.setdefault(key, {})[member] = when

    def unmark(self, key: str, member: str) -> None:
        with self._lock:
            self._sets.get(key, {}).pop(member, None)

    def count_since(self, key: str, since: float) -> int:
        with self._lock:
            members = self._sets.get(key, {})
            for old in [m for m, t in members.items() if t <= since]:
                del members[old]
            return len(members)

    def is_marked(self, key: str, member: str, since: float) -> bool:
        with self._lock:
            return self._sets.get(key, {}).get(member, -math.inf) > since


class RedisBackend:
    """Redis, shared by every process of a deployment (`redis` client; short timeouts, so a
    stopped Redis is a clear StoreUnavailable within a second, and the next call reconnects)."""

    def __init__(self, url: str) -> None:
        import redis

        self._errors = (redis.exceptions.RedisError, OSError)
        self.url = url
        self._redis = redis.Redis.from_url(
            url, socket_timeout=1.0, socket_connect_timeout=1.0, health_check_interval=15
        )

    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except self._errors as exc:
            raise StoreUnavailable(f"Redis at {_redacted(self.url)}: {type(exc).__name__}") from exc

    def get(self, key: str) -> bytes | None:
        return self._call(lambda: self._redis.get(key))

    def put(self, key: str, value: bytes, ttl_s: float, *, only_new: bool = False) -> bool:
        ms = max(1, int(ttl_s * 1000))
        return bool(self._call(lambda: self._redis.set(key, value, px=ms, nx=only_new)))

    def expire(self, key: str, ttl_s: float) -> None:
        self._call(lambda: self._redis.pexpire(key, max(1, int(ttl_s * 1000))))

    def delete(self, key: str) -> None:
        self._call(lambda: self._redis.delete(key))

    def count_in_window(self, key: str, window_s: float) -> int:
        def count() -> int:
            pipe = self._redis.pipeline()
            pipe.incr(key)
            pipe.pexpire(key, max(1, int(window_s * 1000)), nx=True)
            return int(pipe.execute()[0])

        return self._call(count)

    def mark(self, key: str, member: str, when: float) -> None:
        def add() -> None:
            pipe = self._redis.pipeline()
            pipe.zadd(key, {member: when})
            pipe.expire(key, int(ENDED_KEEP_S))
            pipe.execute()

        self._call(add)

    def unmark(self, key: str, member: str) -> None:
        self._call(lambda: self._redis.zrem(key, member))

    def count_since(self, key: str, since: float) -> int:
        def count() -> int:
            pipe = self._redis.pipeline()
            pipe.zremrangebyscore(key, "-inf", since)
            pipe.zcard(key)
            return int(pipe.execute()[1])

        return self._call(count)

    def is_marked(self, key: str, member: str, since: float) -> bool:
        score = self._call(lambda: self._redis.zscore(key, member))
        return score is not None and score > since


def _redacted(url: str) -> str:
    """A Redis URL without its password, to show in a message."""
    return re.sub(r"//[^@/]*@", "//***@", url)


# ------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class _Var:
    name: str
    default: float
    lo: float
    hi: float
    whole: bool
    scale: float  # value in the variable's unit -> RoomStore's unit
    kwarg: str


ENV_VARS = (
    _Var("CONV_EXPLORER_MAX_ROOMS", 20, 1, 1000, True, 1, "max_rooms"),
    _Var("CONV_EXPLORER_MAX_ROOMS_PER_CLIENT", 2, 1, 100, True, 1, "max_rooms_per_client"),
    _Var("CONV_EXPLORER_MAX_FOLLOWERS", 400, 1, 5000, True, 1, "max_followers"),
    _Var("CONV_EXPLORER_ROOM_END_MINUTES", 3, 0.1, 1440, False, 60, "end_after_s"),
    _Var("CONV_EXPLORER_ROOM_IMAGE_MB", 8, 0, 64, False, 1024 * 1024, "max_image_bytes"),
    _Var("CONV_EXPLORER_ROOM_NETWORK_MB", 1, 0, 16, False, 1024 * 1024, "max_network_bytes"),
)
REDIS_ENV = "CONV_EXPLORER_REDIS_URL"
_WHOLE = re.compile(r"^\d{1,7}$")
_DECIMAL = re.compile(r"^\d{1,7}(\.\d{1,6})?$")


def config_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """RoomStore keyword arguments from CONV_EXPLORER_* variables (unset or empty: the default).

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
        kwargs[var.kwarg] = int(scaled) if var.whole or var.kwarg.endswith("_bytes") else float(scaled)
    return kwargs


def backend_from_env(environ: Mapping[str, str] | None = None) -> Backend:
    """RedisBackend when CONV_EXPLORER_REDIS_URL is set, else MemoryBackend."""
    env = os.environ if environ is None else environ
    url = env.get(REDIS_ENV, "").strip()
    if not url:
        return MemoryBackend()
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(
            f"{REDIS_ENV} must be a redis://, rediss:// or unix:// URL, not {_redacted(url)[:40]!r}"
        )
    try:
        return RedisBackend(url)
    except ImportError as exc:
        raise ConfigError(
            f"{REDIS_ENV} is set but the redis package is not installed (pip install redis)"
        ) from exc


# ------------------------------------------------------------------------------ the rules


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


def _digest(secret: object) -> str:
    data = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) else b""
    return hashlib.sha256(b"conv-explorer-room\0" + data).hexdigest()


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


def _checked(name: str, value: object, lo: float, *, whole: bool) -> None:
    if whole:
        if not isinstance(value, int) or isinstance(value, bool) or value < lo:
            raise ValueError(f"{name}={value!r} must be a whole number >= {lo:g}")
    elif not isinstance(value, int | float) or not lo < value < math.inf:
        raise ValueError(f"{name}={value!r} must be a number of seconds above {lo:g}")


@dataclass(frozen=True)
class Limit:
    """At most `count` events per `window_s` seconds per client address."""

    count: int
    window_s: float


class RoomStore:
    """All rooms of a deployment (see the module docstring); thread-safe if its backend is."""

    def __init__(
        self,
        backend: Backend | None = None,
        *,
        max_rooms: int = 20,
        max_rooms_per_client: int = 2,
        max_followers: int = 400,
        end_after_s: float = 180.0,
        left_after_s: float = 20.0,
        max_image_bytes: int = 8 * 1024 * 1024,
        max_network_bytes: int = 1024 * 1024,
        failed_joins: Limit = Limit(30, 60.0),
        creations: Limit = Limit(6, 600.0),
        wrong_passphrases: Limit = Limit(5, 60.0),
        clock: Callable[[], float] = time.time,
    ) -> None:
        _checked("max_rooms", max_rooms, 1, whole=True)
        _checked("max_rooms_per_client", max_rooms_per_client, 1, whole=True)
        _checked("max_followers", max_followers, 1, whole=True)
        _checked("max_image_bytes", max_image_bytes, 0, whole=True)
        _checked("max_network_bytes", max_network_bytes, 0, whole=True)
        _checked("end_after_s", end_after_s, 0, whole=False)
        _checked("left_after_s", left_after_s, 0, whole=False)
        if not callable(clock):
            raise ValueError("clock must be a function returning seconds (like time.time)")
        self.backend = MemoryBackend(clock) if backend is None else backend
        self.max_rooms = max_rooms
        self.max_rooms_per_client = max_rooms_per_client
        self.max_followers = max_followers
        self.end_after_s = float(end_after_s)
        self.left_after_s = min(float(left_after_s), self.end_after_s / 2)
        self.max_image_bytes = max_image_bytes
        self.max_network_bytes = max_network_bytes
        self.limits = {
            "failed joins": failed_joins,
            "new rooms": creations,
            "wrong passphrases": wrong_passphrases,
        }
        self._clock = clock

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> RoomStore:
        """A store configured by CONV_EXPLORER_* variables (ConfigError on bad values)."""
        return cls(backend_from_env(environ), **{**config_from_env(environ), **overrides})

    # ---------------------------------------------------------------- keys
    @staticmethod
    def _room_key(code: str) -> str:
        return f"{KEY_PREFIX}room:{code}"

    @staticmethod
    def _followers_key(code: str) -> str:
        return f"{KEY_PREFIX}followers:{code}"

    @staticmethod
    def _image_key(key: str) -> str:
        return f"{KEY_PREFIX}image:{key}"

    @staticmethod
    def _network_key(key: str) -> str:
        return f"{KEY_PREFIX}network:{key}"

    @property
    def _blob_ttl_s(self) -> float:
        """Shared images and networks outlive their room's end by a minute (a last follower's read)."""
        return self.end_after_s + 60

    @staticmethod
    def _live_key(client: str | None = None) -> str:
        return f"{KEY_PREFIX}live" + ("" if client is None else f":{client}")

    @property
    def _record_ttl_s(self) -> float:
        return self.end_after_s + ENDED_KEEP_S

    # ---------------------------------------------------------------- rate limits
    def count_attempt(self, what: str, client: str) -> None:
        """Count one event of kind `what` ("failed joins", "new rooms", "wrong passphrases") for the
        client address; TooManyAttempts once its limit for the window is passed."""
        limit = self.limits[what]
        now = self._clock()
        window = int(now // limit.window_s)
        key = f"{KEY_PREFIX}limit:{what.replace(' ', '_')}:{client}:{window}"
        if self.backend.count_in_window(key, limit.window_s) > limit.count:
            raise TooManyAttempts(what, (window + 1) * limit.window_s - now)

    def check_attempts(self, what: str, client: str) -> None:
        """TooManyAttempts if the client has used up `what` in this window (counts nothing)."""
        limit = self.limits[what]
        now = self._clock()
        window = int(now // limit.window_s)
        raw = self.backend.get(f"{KEY_PREFIX}limit:{what.replace(' ', '_')}:{client}:{window}")
        if raw is not None and int(raw) >= limit.count:
            raise TooManyAttempts(what, (window + 1) * limit.window_s - now)

    # ---------------------------------------------------------------- instructor
    def create_room(self, client: str) -> tuple[str, str]:
        """A new room: (code to show on the projector, secret for the instructor's session only)."""
        now = self._clock()
        since = now - self.end_after_s
        if self.backend.count_since(self._live_key(client), since) >= self.max_rooms_per_client:
            raise TooManyRooms(self.max_rooms_per_client)
        if self.backend.count_since(self._live_key(), since) >= self.max_rooms:
            raise RoomLimitReached(self.max_rooms, self.end_after_s)
        self.count_attempt("new rooms", client)
        secret = secrets.token_urlsafe(32)
        record = {
            "secret": _digest(secret),
            "owner": client,
            "beat": now,
            "closed": False,
            "version": 0,
            "content": "",
            "page": "",
            "settings": {},
            "image": None,
            "network": None,
        }
        while True:
            code = _random_code()
            if self.backend.put(self._room_key(code), _encode(record), self._record_ttl_s, only_new=True):
                break
        self.backend.mark(self._live_key(), code, now)
        self.backend.mark(self._live_key(client), code, now)
        return code, secret

    def publish(self, code: str, secret: str, fields: Mapping[str, Any]) -> int:
        """Publish {"page": str, "settings": {name: value}, "image": SharedImage | None,
        "network": SharedNetwork | None} (image and network may be left out: None).

        Returns the room's version: bumped only when page, settings, image or network differ from
        the last publish. Shared bytes are written only when the room names new ones (a rerun that
        changed a setting sends no image or network again). A publish is also a heartbeat."""
        page, settings, image, network = self._fields(fields)
        room, record = self._instructor_record(code, secret)
        named = {
            "image": None if image is None else [image.key, image.name],
            "network": None if network is None else [network.key, network.name],
        }
        content = hashlib.sha256(json.dumps([page, settings, named["image"], named["network"]]).encode())
        now = self._clock()
        if image is not None:
            self._keep_blob(self._image_key(image.key), image.png, named["image"] == record["image"])
        if network is not None:
            self._keep_blob(
                self._network_key(network.key), network.npz, named["network"] == record.get("network")
            )
        if content.hexdigest() != record["content"]:
            record.update(
                version=record["version"] + 1,
                content=content.hexdigest(),
                page=page,
                settings=settings,
                **named,
            )
        self._beat(room, record, now)
        return record["version"]

    def _keep_blob(self, store_key: str, data: bytes, named_already: bool) -> None:
        """Write shared bytes the room does not name yet; renew the lifetime of those it names."""
        if named_already:
            self.backend.expire(store_key, self._blob_ttl_s)
        else:
            self.backend.put(store_key, data, self._blob_ttl_s)

    def heartbeat(self, code: str, secret: str) -> RoomStatus:
        """The instructor's open tab: keeps the room (and its image) alive; counts the followers.
        After a restart the same call resumes the room, as long as it has not ended."""
        room, record = self._instructor_record(code, secret)
        now = self._clock()
        self._beat(room, record, now)
        if record["image"]:
            self.backend.expire(self._image_key(record["image"][0]), self._blob_ttl_s)
        if record.get("network"):
            self.backend.expire(self._network_key(record["network"][0]), self._blob_ttl_s)
        followers = self.backend.count_since(self._followers_key(room), now - FOLLOWER_TIMEOUT_S)
        return RoomStatus(room, record["version"], followers)

    def close(self, code: str, secret: str) -> None:
        """End the room now; its followers hear RoomClosed at their next poll."""
        room, record = self._instructor_record(code, secret)
        record["closed"] = True
        self.backend.put(self._room_key(room), _encode(record), ENDED_KEEP_S)
        self.backend.unmark(self._live_key(), room)
        self.backend.unmark(self._live_key(record["owner"]), room)
        self.backend.delete(self._followers_key(room))

    # ----------------------------------------------------------------- followers
    def join(self, code: str, follower_id: str, client: str) -> Snapshot | None:
        """Follow room `code` (as a student typed it). Failed joins count against the address."""
        fid = _follower_id(follower_id)
        self.check_attempts("failed joins", client)
        try:
            return self.snapshot(code, fid)
        except (RoomNotFound, RoomEnded):
            self.count_attempt("failed joins", client)
            raise

    def snapshot(self, code: str, follower_id: str | None = None) -> Snapshot | None:
        """The room's newest snapshot (None before the first publish): one read of the store.

        With follower_id, also counts that follower as present (RoomFull when the room is full).
        Raises RoomNotFound / RoomExpired / RoomClosed / StoreUnavailable."""
        room, record = self._record(code)
        now = self._clock()
        if follower_id is not None:
            self._admit(room, _follower_id(follower_id), now)
        if record["version"] == 0:
            return None
        image = record["image"] or (None, "")
        network = record.get("network") or (None, "")
        return Snapshot(
            page=record["page"],
            settings=MappingProxyType(record["settings"]),
            image_key=image[0],
            image_name=image[1],
            version=record["version"],
            instructor_here=now - record["beat"] < self.left_after_s,
            network_key=network[0],
            network_name=network[1],
        )

    def leave(self, code: str, follower_id: str) -> None:
        """Stop following (no error if not following or the room is gone)."""
        norm = normalize_code(code)
        if norm:
            self.backend.unmark(self._followers_key(norm), _follower_id(follower_id))

    def image(self, key: str) -> bytes | None:
        """A shared image's PNG bytes (None once its room is gone)."""
        if not re.fullmatch(r"[0-9a-f]{32}", key or ""):
            return None
        return self.backend.get(self._image_key(key))

    def network(self, key: str) -> bytes:
        """A shared network's .npz bytes, checked: ValueError (a message for people) when it is gone,
        over this server's cap, or not the bytes its key names (a damaged entry of the store)."""
        if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{32}", key):
            raise ValueError("the instructor's network has no valid name")
        data = self.backend.get(self._network_key(key))
        if data is None:
            raise ValueError("the instructor's network is no longer in the room (the room ended?)")
        if len(data) > self.max_network_bytes:
            raise ValueError(
                f"the instructor's network is {len(data) / 2**10:.0f} KB, over this server's "
                f"{self.max_network_bytes / 2**10:.0f} KB (CONV_EXPLORER_ROOM_NETWORK_MB)"
            )
        if _content_key(data) != key:
            raise ValueError("the instructor's network arrived damaged (its bytes do not match its name)")
        return data

    def live_rooms(self) -> int:
        return self.backend.count_since(self._live_key(), self._clock() - self.end_after_s)

    # --------------------------------------------------- internals
    def _fields(
        self, fields: Mapping[str, Any]
    ) -> tuple[str, dict, SharedImage | None, SharedNetwork | None]:
        """Validate what the instructor publishes."""
        if not isinstance(fields, Mapping):
            raise InvalidSnapshot(f"publish takes a mapping of snapshot fields, not {type(fields).__name__}")
        unknown = set(fields) - _FIELDS
        if unknown:
            raise InvalidSnapshot(
                f"unknown snapshot fields {sorted(map(str, unknown))}; known: page, settings, image, network"
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
        return page, settings, image, self._network_of(fields.get("network"))

    def _network_of(self, network: object) -> SharedNetwork | None:
        if network is None:
            return None
        if not isinstance(network, SharedNetwork):
            raise InvalidSnapshot(f"network must be a SharedNetwork or None, not {type(network).__name__}")
        if network.nbytes > self.max_network_bytes:
            if self.max_network_bytes == 0:
                raise NetworkTooLarge(
                    "sharing networks is off on this server (CONV_EXPLORER_ROOM_NETWORK_MB=0)"
                )
            raise NetworkTooLarge(
                f"the network's weights are {network.nbytes / 2**10:.0f} KB; a room holds at most "
                f"{self.max_network_bytes / 2**10:.0f} KB (CONV_EXPLORER_ROOM_NETWORK_MB)"
            )
        return network

    def _record(self, code: object) -> tuple[str, dict]:
        """The live room's record; RoomNotFound / RoomEnded otherwise."""
        norm = normalize_code(code)
        if norm is None:
            raise RoomNotFound(_shown_code(code))
        raw = self.backend.get(self._room_key(norm))
        if raw is None:
            raise RoomNotFound(norm)
        record = json.loads(raw)
        if record["closed"]:
            raise RoomClosed(norm)
        if self._clock() - record["beat"] >= self.end_after_s:
            raise RoomExpired(norm, self.end_after_s)
        return norm, record

    def _instructor_record(self, code: object, secret: object) -> tuple[str, dict]:
        room, record = self._record(code)
        if not hmac.compare_digest(record["secret"], _digest(secret)):
            raise NotInstructor(room)
        return room, record

    def _beat(self, room: str, record: dict, now: float) -> None:
        record["beat"] = now
        self.backend.put(self._room_key(room), _encode(record), self._record_ttl_s)
        self.backend.mark(self._live_key(), room, now)
        self.backend.mark(self._live_key(record["owner"]), room, now)

    def _admit(self, room: str, fid: str, now: float) -> None:
        key, since = self._followers_key(room), now - FOLLOWER_TIMEOUT_S
        if (
            not self.backend.is_marked(key, fid, since)
            and self.backend.count_since(key, since) >= self.max_followers
        ):
            raise RoomFull(room, self.max_followers)
        self.backend.mark(key, fid, now)


def _encode(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()


def _follower_id(follower_id: object) -> str:
    if not isinstance(follower_id, str) or not 0 < len(follower_id) <= 128:
        raise ValueError("follower_id must be a non-empty string of at most 128 characters")
    return follower_id
