"""The classroom rooms (ui/classroom.py): who may drive a room, what followers see, presence,
limits per client address, and the same rules on both backends.

Every rule runs against MemoryBackend and against a real Redis (redis-server started by the
`redis_url` fixture; CI installs Debian's package). Time is a fake clock the tests advance; the
stores' records live far longer than any test, so Redis's own expiry never decides a result.
"""

from __future__ import annotations

import re
import threading

import pytest

from ui.classroom import (
    CODE_ALPHABET,
    ConfigError,
    ImageTooLarge,
    InvalidSnapshot,
    Limit,
    MemoryBackend,
    NotInstructor,
    RedisBackend,
    RoomClosed,
    RoomExpired,
    RoomFull,
    RoomLimitReached,
    RoomNotFound,
    RoomStore,
    SharedImage,
    StoreUnavailable,
    TooManyAttempts,
    TooManyRooms,
    backend_from_env,
    config_from_env,
    normalize_code,
)

PNG = b"\x89PNG\r\n\x1a\n"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0  # wall-clock seconds, as time.time gives

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "redis"])
def backend(request, clock):
    """A fresh backend of each kind (Redis: a flushed database of the test's server)."""
    if request.param == "memory":
        return MemoryBackend(clock)
    url = request.getfixturevalue("redis_url")
    b = RedisBackend(url)
    b._redis.flushdb()
    return b


@pytest.fixture
def make(backend, clock):
    """RoomStore(**kw) on the test's backend and clock; several calls share the backend, as the
    server processes of one deployment share Redis."""
    return lambda **kw: RoomStore(backend, clock=clock, **kw)


def fields(page: str = "direct", image: SharedImage | None = None, **settings) -> dict:
    return {"page": page, "settings": settings or {"direct_k": 3}, "image": image}


def png(n: int, salt: bytes = b"") -> bytes:
    """n bytes that start like a PNG (the store checks the signature, never decodes)."""
    return PNG + (salt + b"x" * n)[: n - len(PNG)]


def wrong_code(code: str) -> str:
    """A well-formed code that differs from `code` in its last character."""
    return code[:-1] + (CODE_ALPHABET[0] if code[-1] != CODE_ALPHABET[0] else CODE_ALPHABET[1])


# ------------------------------------------------------------------------------------ codes


def test_codes_are_unambiguous_unique_and_the_secret_long(make):
    store = make(max_rooms=500, max_rooms_per_client=500, creations=Limit(500, 60))
    made = [store.create_room(f"10.0.0.{i % 3}") for i in range(200)]
    codes = [c for c, _ in made]
    assert len(set(codes)) == len(codes)
    for code, secret in made:
        assert len(code) == 6 and set(code) <= set(CODE_ALPHABET)
        assert not set(code) & set("01OIL")
        assert len(secret) >= 43  # 32 random bytes, URL-safe base64


def test_students_may_type_the_code_loosely():
    assert normalize_code(" k7q-f2m ") == "K7QF2M"
    assert normalize_code("k7q_f2m") == "K7QF2M"
    for bad in ("K7QF2", "K7QF2MM", "K7QF2O", "K7QF21", None, 123, "x" * 50):
        assert normalize_code(bad) is None


# --------------------------------------------------------------------------- who drives


def test_only_the_secret_publishes_a_follower_with_the_code_cannot(make):
    store = make()
    code, secret = store.create_room("10.0.0.1")
    assert store.publish(code, secret, fields(direct_k=5)) == 1
    with pytest.raises(NotInstructor, match=f"only the instructor who started room {code}"):
        store.publish(code, "guess", fields(direct_k=7))
    with pytest.raises(NotInstructor):
        store.heartbeat(code, "")
    with pytest.raises(NotInstructor):
        store.close(code, secret[:-1])
    assert store.snapshot(code).settings["direct_k"] == 5


def test_the_store_keeps_no_copy_of_the_secret(make, backend):
    store = make()
    code, secret = store.create_room("10.0.0.1")
    store.publish(code, secret, fields())
    raw = backend.get(store._room_key(code))
    assert secret.encode() not in raw and code.encode() not in raw


def test_versions_bump_only_when_the_content_changes(make):
    store = make()
    code, secret = store.create_room("10.0.0.1")
    assert store.snapshot(code) is None  # nothing published yet
    assert store.publish(code, secret, fields(direct_k=3)) == 1
    assert store.publish(code, secret, fields(direct_k=3)) == 1
    assert store.publish(code, secret, fields(direct_k=5)) == 2
    assert store.publish(code, secret, fields("reflect", direct_k=5)) == 3
    assert store.publish(code, secret, fields("reflect", direct_k="5")) == 4  # "5" is not 5
    snap = store.snapshot(code)
    assert (snap.page, snap.version, dict(snap.settings)) == ("reflect", 4, {"direct_k": "5"})
    with pytest.raises(TypeError):
        snap.settings["direct_k"] = 1  # read-only


def test_a_follower_on_another_process_sees_the_instructors_changes(make):
    """Two RoomStore objects on one backend: two server processes sharing Redis (or, in memory,
    two sessions of one process)."""
    instructor_side, follower_side = make(), make()
    code, secret = instructor_side.create_room("10.0.0.1")
    follower_side.join(code, "f1", "10.0.0.2")
    instructor_side.publish(code, secret, fields(direct_k=7, direct_stride=2))
    snap = follower_side.snapshot(code, "f1")
    assert dict(snap.settings) == {"direct_k": 7, "direct_stride": 2} and snap.instructor_here
    assert instructor_side.heartbeat(code, secret).followers == 1


def test_images_are_shared_by_key_capped_and_png_only(make):
    store = make(max_image_bytes=1000)
    code, secret = store.create_room("10.0.0.1")
    a = SharedImage(png(500, b"a"), "the instructor's image")
    assert store.publish(code, secret, fields(image=a)) == 1
    snap = store.snapshot(code)
    assert snap.image_key == a.key and snap.image_name == "the instructor's image"
    assert store.image(a.key) == a.png
    assert (
        store.publish(code, secret, fields(image=SharedImage(png(500, b"a"), "the instructor's image"))) == 1
    )
    assert store.publish(code, secret, fields(image=SharedImage(png(500, b"b"), "x"))) == 2
    with pytest.raises(ImageTooLarge, match=re.escape("at most 0.0 MB")):
        store.publish(code, secret, fields(image=SharedImage(png(1001), "big")))
    with pytest.raises(InvalidSnapshot, match="must be PNG bytes"):
        SharedImage(b"GIF89a", "x")
    assert store.image("../../etc/passwd") is None and store.image("0" * 32) is None
    off = make(max_image_bytes=0)
    code2, secret2 = off.create_room("10.0.0.9")
    with pytest.raises(ImageTooLarge, match="sharing images is off"):
        off.publish(code2, secret2, fields(image=a))


@pytest.mark.parametrize(
    "bad,message",
    [
        ({"page": "direct"}, "needs 'page' and 'settings'"),
        ({"page": "../x", "settings": {}}, "is not a page url_path"),
        ({"page": "direct", "settings": {"1x": 1}}, "is not an identifier"),
        ({"page": "direct", "settings": {"k": 2**31}}, "out of range"),
        ({"page": "direct", "settings": {"k": 1.5}}, "only str, int and bool"),
        ({"page": "direct", "settings": {"k": "x" * 5000}}, "at most 4096"),
        ({"page": "direct", "settings": {}, "extra": 1}, "unknown snapshot fields"),
        ({"page": "direct", "settings": {}, "image": b"png"}, "must be a SharedImage"),
    ],
)
def test_malformed_snapshots_are_refused_with_the_reason(make, bad, message):
    store = make()
    code, secret = store.create_room("10.0.0.1")
    with pytest.raises(InvalidSnapshot, match=re.escape(message)):
        store.publish(code, secret, bad)


def test_wrong_code_gives_room_not_found_with_the_code(make):
    store = make()
    code, _ = store.create_room("10.0.0.1")
    with pytest.raises(RoomNotFound, match=f"no room {wrong_code(code)}: check the code on the projector"):
        store.join(wrong_code(code), "f", "10.0.0.2")
    with pytest.raises(RoomNotFound, match="no room SCRIPTAL…: check"):
        store.snapshot("<script>alert(1)</script>")


# ------------------------------------------------------------------------------ presence


def test_the_instructor_leaves_then_the_room_ends_unless_they_come_back(make, clock):
    store = make(end_after_s=180, left_after_s=20)
    code, secret = store.create_room("10.0.0.1")
    store.publish(code, secret, fields())
    store.join(code, "f", "10.0.0.2")
    clock.advance(19)
    assert store.snapshot(code, "f").instructor_here
    clock.advance(2)  # 21 s without a beat: followers are told
    assert not store.snapshot(code, "f").instructor_here
    clock.advance(100)
    assert store.heartbeat(code, secret).code == code  # back (a reload, a restarted worker)
    assert store.snapshot(code, "f").instructor_here
    clock.advance(180)
    with pytest.raises(RoomExpired, match=f"room {code} ended: the instructor left 3 minutes ago"):
        store.snapshot(code, "f")
    with pytest.raises(RoomExpired):
        store.heartbeat(code, secret)  # too late to resume
    assert store.live_rooms() == 0


def test_closing_a_room_ends_it_for_followers_and_joins(make):
    store = make()
    code, secret = store.create_room("10.0.0.1")
    store.publish(code, secret, fields())
    store.join(code, "f", "10.0.0.2")
    store.close(code, secret)
    with pytest.raises(RoomClosed, match=f"room {code} ended: the instructor closed it"):
        store.snapshot(code, "f")
    with pytest.raises(RoomClosed):
        store.join(code, "g", "10.0.0.3")
    assert store.live_rooms() == 0


# -------------------------------------------------------------------------------- limits


def test_failed_joins_are_limited_per_address_across_processes_and_connections(make, clock):
    """Guessing from one address: a new session (or a new worker) does not reset the count."""
    one, two = make(failed_joins=Limit(5, 60)), make(failed_joins=Limit(5, 60))
    code, _ = one.create_room("10.0.0.1")
    for i in range(5):
        with pytest.raises(RoomNotFound):
            (one if i % 2 else two).join(wrong_code(code), f"session{i}", "10.9.9.9")
    with pytest.raises(TooManyAttempts, match="too many failed joins from this address: wait"):
        one.join(code, "a-new-session", "10.9.9.9")  # even the right code, for now
    assert one.join(code, "someone-else", "10.0.0.7") is None  # other addresses are not affected
    clock.advance(61)
    assert two.join(code, "a-new-session", "10.9.9.9") is None


def test_one_address_cannot_fill_the_servers_room_limit(make, clock):
    store = make(max_rooms=3, max_rooms_per_client=2, creations=Limit(100, 600))
    store.create_room("10.6.6.6")
    store.create_room("10.6.6.6")
    with pytest.raises(TooManyRooms, match="this address already runs 2 live rooms"):
        store.create_room("10.6.6.6")
    code, _ = store.create_room("10.0.0.1")  # the real instructor still gets a room
    with pytest.raises(RoomLimitReached, match="already runs 3 rooms"):
        store.create_room("10.0.0.2")
    clock.advance(181)  # the throwaway rooms' tabs never beat: they end, their places free
    with pytest.raises(RoomExpired):
        store.snapshot(code)
    assert store.create_room("10.0.0.2")


def test_room_creation_is_rate_limited_per_address(make, backend):
    store = make(creations=Limit(3, 600), max_rooms_per_client=10)
    for _ in range(3):
        code, secret = store.create_room("10.5.5.5")
        store.close(code, secret)  # closed rooms do not count as live, creations still do
    with pytest.raises(TooManyAttempts, match="too many new rooms from this address"):
        store.create_room("10.5.5.5")
    assert store.create_room("10.5.5.6")


def test_a_full_room_refuses_followers_until_silent_ones_drop_out(make, clock):
    store = make(max_followers=2)
    code, secret = store.create_room("10.0.0.1")
    store.join(code, "a", "10.0.0.2")
    store.join(code, "b", "10.0.0.3")
    with pytest.raises(RoomFull, match=f"room {code} is full \\(2 followers"):
        store.join(code, "c", "10.0.0.4")
    assert store.snapshot(code, "a") is None  # a follower already in is never refused
    clock.advance(31)  # b stopped polling
    store.snapshot(code, "a")
    store.join(code, "c", "10.0.0.4")
    assert store.heartbeat(code, secret).followers == 2
    store.leave(code, "c")
    assert store.heartbeat(code, secret).followers == 1


def test_many_followers_polling_while_the_instructor_publishes(make):
    """Threads as sessions: every poll sees a complete snapshot whose version never goes back."""
    store = make()
    code, secret = store.create_room("10.0.0.1")
    store.publish(code, secret, fields(direct_k=1, direct_s=1))
    stop = threading.Event()
    problems: list[str] = []

    def follow(i: int) -> None:
        last = 0
        while not stop.is_set():
            snap = store.snapshot(code, f"f{i}")
            if snap.version < last or snap.settings["direct_k"] != snap.settings["direct_s"]:
                problems.append(f"f{i}: {snap}")
            last = snap.version

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for k in range(2, 60):
        store.publish(code, secret, fields(direct_k=k, direct_s=k))
    stop.set()
    for t in threads:
        t.join()
    assert not problems, problems[:3]
    assert store.heartbeat(code, secret).followers == 8


# ---------------------------------------------------------------------------- Redis down


def test_a_stopped_redis_is_a_clear_message_and_recovery_follows(redis_server):
    """Stop the server: every call says so (StoreUnavailable, a RoomError the app shows); start it
    again on the same port: the same store object works, and rooms made before are still there
    (a Redis that kept its data, as one with persistence does after a restart)."""
    url, stop, start = redis_server
    store = RoomStore(RedisBackend(url))
    code, secret = store.create_room("10.0.0.1")
    store.publish(code, secret, fields(direct_k=9))
    stop()
    with pytest.raises(StoreUnavailable, match=r"the classroom store is not answering .*following pauses"):
        store.snapshot(code, "f")
    with pytest.raises(StoreUnavailable):
        store.heartbeat(code, secret)
    start()
    assert store.snapshot(code, "f").settings["direct_k"] == 9
    assert store.heartbeat(code, secret).followers == 1


# ---------------------------------------------------------------------------- configuration


def test_defaults_and_environment_configuration():
    assert config_from_env({}) == {
        "max_rooms": 20,
        "max_rooms_per_client": 2,
        "max_followers": 400,
        "end_after_s": 180.0,
        "max_image_bytes": 8 * 2**20,
    }
    env = {
        "CONV_EXPLORER_MAX_ROOMS": " 5 ",
        "CONV_EXPLORER_MAX_FOLLOWERS": "60",
        "CONV_EXPLORER_ROOM_END_MINUTES": "0.5",
        "CONV_EXPLORER_ROOM_IMAGE_MB": "",  # empty: the default
    }
    store = RoomStore.from_env(env)
    assert (store.max_rooms, store.max_followers, store.end_after_s, store.left_after_s) == (
        5,
        60,
        30.0,
        15.0,
    )
    assert isinstance(store.backend, MemoryBackend)
    assert isinstance(backend_from_env({"CONV_EXPLORER_REDIS_URL": "redis://localhost:1/0"}), RedisBackend)


@pytest.mark.parametrize(
    "name,value,message",
    [
        (
            "CONV_EXPLORER_MAX_ROOMS",
            "abc",
            "CONV_EXPLORER_MAX_ROOMS='abc' is not a whole number: use e.g. "
            "CONV_EXPLORER_MAX_ROOMS=20 (allowed 1 to 1000)",
        ),
        (
            "CONV_EXPLORER_MAX_ROOMS",
            "0",
            "CONV_EXPLORER_MAX_ROOMS=0 is out of range: allowed 1 to 1000 (default 20)",
        ),
        ("CONV_EXPLORER_MAX_ROOMS", "1e3", "is not a whole number"),
        ("CONV_EXPLORER_MAX_FOLLOWERS", "100000", "out of range: allowed 1 to 5000 (default 400)"),
        ("CONV_EXPLORER_ROOM_END_MINUTES", "nan", "is not a number"),
        ("CONV_EXPLORER_ROOM_END_MINUTES", "0", "out of range: allowed 0.1 to 1440"),
        ("CONV_EXPLORER_ROOM_IMAGE_MB", "8MB; rm -rf /" * 3, "'8MB??rm?-rf??8MB??rm…' is not a number"),
        ("CONV_EXPLORER_REDIS_URL", "http://x", "must be a redis://, rediss:// or unix:// URL"),
    ],
)
def test_bad_environment_values_are_refused_with_name_value_and_range(name, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        RoomStore.from_env({name: value})


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"max_rooms": 0}, "max_rooms=0 must be a whole number >= 1"),
        ({"max_followers": 2.5}, "max_followers=2.5"),
        ({"max_rooms_per_client": True}, "max_rooms_per_client=True"),
        ({"max_image_bytes": -1}, "max_image_bytes=-1"),
        ({"end_after_s": 0}, "end_after_s=0 must be a number of seconds above 0"),
        ({"left_after_s": float("inf")}, "left_after_s=inf"),
        ({"clock": 5}, "clock must be a function"),
    ],
)
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RoomStore(**kwargs)


def test_follower_ids_are_checked(make):
    store = make()
    code, _ = store.create_room("10.0.0.1")
    for bad in ("", "x" * 129, None, 5):
        with pytest.raises(ValueError, match="follower_id must be"):
            store.join(code, bad, "10.0.0.2")
