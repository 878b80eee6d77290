"""The classroom mode through the real app (streamlit.testing.v1.AppTest): two and more sessions of
one process share the room store (in memory here; tests/pages/test_classroom.py runs the same rules on
Redis, and tests/server/test_serve.py runs the app's processes behind the proxy).

AppTest runs no timers: each `run()` stands for the follower's poll (a full run applies the newest
snapshot before the page runs, exactly what the poll's rerun does in the browser).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.support.helpers import require

require("streamlit", "the app's classroom tests")
from tests.support.apptest import AppTest  # noqa: E402 (every run through app.py, as on a server)
from ui import beacon, classroom_ui  # noqa: E402
from ui.classroom import SharedImage  # noqa: E402
from ui.images import png_bytes  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DIRECT = "pages/direct.py"


@pytest.fixture(autouse=True)
def fresh_rooms(monkeypatch):
    """CPU backend and a store of our own per test (the app holds one per process)."""
    from gpuops import backend
    from ui import shared

    monkeypatch.setenv("CONV_EXPLORER_BACKEND", "numpy")
    for var in (
        "CONV_EXPLORER_INSTRUCTOR_KEY",
        "CONV_EXPLORER_PUBLIC_URL",
        "CONV_EXPLORER_MAX_FOLLOWERS",
        "CONV_EXPLORER_REDIS_URL",
        "CONV_EXPLORER_BEACON_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    backend.reset_backend()
    shared.store.clear()
    yield
    shared.store.clear()
    backend.reset_backend()


def session(page: str | None = DIRECT, query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def button(at: AppTest, label: str):
    found = [b for b in at.button if b.label.startswith(label)]
    assert found, f"no button {label!r}: {[b.label for b in at.button]}"
    return found[0]


def slider(at: AppTest, label: str):
    return next(s for s in at.slider if s.label == label)


def markdown(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def messages(at: AppTest) -> str:
    return "\n".join(m.value for kind in ("error", "warning", "info", "success") for m in getattr(at, kind))


def start_room(at: AppTest) -> str:
    button(at, "Start a room").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state["_room_teach"][0]


def test_instructor_gets_code_link_and_qr_and_the_secret_stays_in_the_session():
    teacher = session(DIRECT)
    code = start_room(teacher)
    secret = teacher.session_state["_room_teach"][1]
    assert re.fullmatch(r"[2-9A-HJKMNP-Z]{6}", code)
    assert f"Instructing room {code}** with 0 followers" in markdown(teacher)
    link = f"http://localhost:8501/direct?room={code}"  # AppTest has no browser address
    assert any(link in m.value for m in teacher.sidebar.markdown)
    assert teacher.sidebar.image, "the QR code is drawn"
    png = classroom_ui.qr_png(link)
    assert png is not None and png.startswith(b"\x89PNG")
    # the secret is in no element, no widget and not in the address bar: only in the one script
    # that stores it as the browser's resume cookie (drawn nowhere)
    elements = [str(el.proto) for el in teacher.main] + [str(el.proto) for el in teacher.sidebar]
    holders = [e for e in elements if secret in e]
    assert len(holders) == 1 and "document.cookie" in holders[0] and "ce_room=" in holders[0]
    assert code in "".join(elements)
    assert secret not in str(dict(teacher.query_params)) and "room" not in teacher.query_params


def test_a_follower_gets_page_settings_pick_and_sidebar_but_keeps_its_display_mode():
    teacher = session(DIRECT)
    code = start_room(teacher)
    teacher.session_state["direct_pick"] = classroom_ui.state.Cell("out", 5, 7)  # a click on the output
    teacher.run()
    slider(teacher, "Stride S").set_value(3).run()
    teacher.sidebar.toggle[0].set_value(True).run()  # greyscale
    teacher.sidebar.toggle[1].set_value(True).run()  # presentation mode: the projector's, not the class's

    student = session(None, {"room": code.lower()})  # the join link, typed loosely: the home page first
    student.run()  # (the browser's poll) on the instructor's page now
    assert not student.exception
    assert [t.value for t in student.title] == ["Direct convolution"]
    assert slider(student, "Stride S").value == 3
    assert student.session_state["direct_pick"] == classroom_ui.state.Cell("out", 5, 7)
    assert student.session_state["grey"] is True and student.session_state["pres"] is False
    assert f"Following room {code}** on **Direct convolution**" in markdown(student)
    assert student.query_params["room"] == code
    teacher.run()
    assert f"Instructing room {code}** with 1 follower:" in markdown(teacher)

    slider(teacher, "Padding P").set_value(0).run()  # the instructor goes on; the student follows
    student.run()
    assert slider(student, "Padding P").value == 0


def test_a_follower_cannot_drive_it_breaks_away_and_rejoins_with_one_click():
    teacher = session(DIRECT)
    code = start_room(teacher)
    a = session(None, {"room": code})
    b = session(None, {"room": code})
    a.run(), b.run()
    version = classroom_ui.registry().snapshot(code).version

    slider(a, "Stride S").set_value(2).run()  # a student moves a slider
    assert a.session_state["_room_follow"] is None
    assert "You changed “Stride S”, so you are exploring on your own" in messages(a)
    assert f"Exploring on your own** (room {code} goes on)" in markdown(a)
    assert "room" not in a.query_params
    teacher.run(), b.run()
    assert classroom_ui.registry().snapshot(code).version == version  # nothing reached the room
    assert slider(teacher, "Stride S").value == 1 and slider(b, "Stride S").value == 1

    slider(teacher, "Dilation D").set_value(2).run()
    a.run()
    assert slider(a, "Dilation D").value == 1  # exploring: the instructor's changes do not arrive
    button(a, f"Follow {code} again").click().run()
    assert slider(a, "Stride S").value == 1 and slider(a, "Dilation D").value == 2
    assert f"Following room {code}**" in markdown(a)

    button(a, "Explore on my own").click().run()
    assert a.session_state["_room_follow"] is None and "You left room" in messages(a)


def test_wrong_codes_get_a_message_the_app_works_and_guessing_is_rate_limited(monkeypatch):
    store = classroom_ui.registry()
    now = store._clock()
    monkeypatch.setattr(store, "_clock", lambda: now)  # one rate-limit window for the whole test
    teacher = session()
    code = start_room(teacher)
    wrong = code[:-1] + ("2" if code[-1] != "2" else "3")
    student = session(None, {"room": wrong})  # a mistyped join link
    assert f"Could not join: no room {wrong}: check the code on the projector." in messages(student)
    assert "room" not in student.query_params and "_room_follow" not in student.session_state
    assert [t.value for t in student.title] == ["Conv Explorer"]  # the page still runs
    student.switch_page(DIRECT).run()
    for _ in range(30):  # typed codes: 30 failures a minute per address (here: one machine)
        student.text_input(key=classroom_ui.CODE_KEY).set_value(wrong)
        button(student, "Follow").click().run()
    assert "too many failed joins from this address" in messages(student)
    student.text_input(key=classroom_ui.CODE_KEY).set_value(code)  # even the right one, for now
    button(student, "Follow").click().run()
    assert "_room_follow" not in student.session_state


def test_an_ended_room_tells_its_followers_and_they_keep_working():
    teacher = session()
    code = start_room(teacher)
    student = session(None, {"room": code})
    button(teacher, "End room").click().run()
    assert f"Room {code} ended" in messages(teacher) and teacher.session_state.get("_room_teach") is None
    student.run()
    assert f"room {code} ended: the instructor closed it" in messages(student)
    assert "Follow" not in markdown(student) and not student.exception


def test_a_room_that_expired_says_so(monkeypatch):
    teacher = session()
    code = start_room(teacher)
    student = session(None, {"room": code})
    store = classroom_ui.registry()
    later = store._clock() + store.end_after_s + 1  # the instructor's tab stopped beating
    monkeypatch.setattr(store, "_clock", lambda: later)
    student.run()
    assert f"room {code} ended: the instructor left 3 minutes ago" in messages(student)


def test_the_instructor_passphrase_when_configured(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_INSTRUCTOR_KEY", "correct horse battery")
    at = session()
    button(at, "Start a room").click().run()
    assert "Wrong instructor passphrase" in messages(at) and at.session_state.get("_room_teach") is None
    at.text_input(key=classroom_ui.PASS_KEY).set_value("correct horse battery")
    button(at, "Start a room").click().run()
    assert at.session_state["_room_teach"][0]
    assert at.session_state[classroom_ui.PASS_KEY] == ""  # not kept


def test_images_an_unshared_upload_stays_home_a_shared_one_is_a_working_size_png():
    teacher = session()
    code = start_room(teacher)
    student = session(None, {"room": code})
    teacher.sidebar.radio[0].set_value("upload").run()
    rgb = (np.arange(60 * 40 * 3) % 251).astype(np.uint8).reshape(40, 60, 3)
    teacher.sidebar.file_uploader[0].set_value(("mine.png", png_bytes(rgb), "image/png")).run()
    assert any("your upload: 60 x 40 px" in c.value for c in teacher.sidebar.caption)
    assert classroom_ui.registry().snapshot(code).image_key is None  # not ticked: nothing leaves
    student.run()
    assert any("sample: shapes" in c.value for c in student.sidebar.caption)
    assert "uploaded image that is not shared" in "\n".join(c.value for c in student.caption)

    teacher.sidebar.checkbox(key=classroom_ui.SHARE_KEY).check().run()
    snap = classroom_ui.registry().snapshot(code)
    assert snap.image_name == "the instructor's image"
    assert SharedImage(classroom_ui.registry().image(snap.image_key), "x").key == snap.image_key
    student.run()
    assert any("the instructor's image: 60 x 40 px" in c.value for c in student.sidebar.caption)
    assert np.array_equal(np.asarray(student.session_state["image"].planes.shape), [3, 40, 60])


def test_room_limits_come_from_the_environment(monkeypatch):
    from ui import shared

    monkeypatch.setenv("CONV_EXPLORER_MAX_FOLLOWERS", "1")
    shared.store.clear()
    teacher = session()
    code = start_room(teacher)
    session(None, {"room": code})
    late = session(None, {"room": code})
    assert f"room {code} is full (1 followers" in messages(late)


def beacon_watch(at: AppTest) -> dict | None:
    """The data of the beacon watcher the run mounted (ui/beacon.py), or None."""
    for el in at.get("bidi_component"):
        if el.proto.component_name.endswith(beacon.COMPONENT):
            return json.loads(el.proto.json)
    return None


def test_with_beacons_each_change_is_written_and_a_follower_watches_for_the_next(monkeypatch, tmp_path):
    monkeypatch.setenv(beacon.DIR_ENV, str(tmp_path))
    teacher = session(DIRECT)
    code = start_room(teacher)
    student = session(None, {"room": code})
    student.run()
    shown = student.session_state["_room_version"]
    assert beacon.read(code) == shown >= 1  # what the follower shows is the room's newest
    watch = {"url": f"beacon/{code}.json", "shown": shown, "every_ms": beacon.EVERY_MS}
    assert beacon_watch(student) == watch
    assert beacon_watch(teacher) is None  # only followers watch
    assert classroom_ui.follower_poll_s() == classroom_ui.SLOW_POLL_S

    slider(teacher, "Stride S").set_value(2).run()
    assert beacon.read(code) == shown + 1  # the browser's next read asks for a rerun
    student.run()  # that rerun
    assert slider(student, "Stride S").value == 2
    assert beacon_watch(student)["shown"] == shown + 1

    store = type(classroom_ui.registry())
    real = store.snapshot

    def not_answering(*args, **kwargs):
        raise classroom_ui.StoreUnavailable("the classroom store is not answering (test)")

    monkeypatch.setattr(store, "snapshot", not_answering)
    student.run()  # the store is down: a rerun could not show what a beacon says, so no watching
    assert beacon_watch(student) is None and not student.exception
    monkeypatch.setattr(store, "snapshot", real)
    student.run()  # (its slow poll's rerun) back
    assert beacon_watch(student)["shown"] == shown + 1

    button(teacher, "End room").click().run()
    assert beacon.read(code) is None and not (tmp_path / f"{code}.json").exists()


def test_without_beacons_followers_poll_their_worker_every_second():
    teacher = session(DIRECT)
    code = start_room(teacher)
    student = session(None, {"room": code})
    assert beacon_watch(student) is None and beacon.read(code) is None
    assert classroom_ui.follower_poll_s() == classroom_ui.POLL_S


def test_a_beacon_is_written_only_for_a_well_formed_code(monkeypatch, tmp_path):
    monkeypatch.setenv(beacon.DIR_ENV, str(tmp_path))
    for bad in ("../../etc/x", "abc", "ABCDEF.json", ""):
        beacon.write(bad, 3)
    assert list(tmp_path.iterdir()) == []
    beacon.write("K7QF2M", 3)
    beacon.write("K7QF2M", 4)
    assert json.loads((tmp_path / "K7QF2M.json").read_text()) == {"v": 4}
    assert [p.name for p in tmp_path.iterdir()] == ["K7QF2M.json"]  # no temporary file left
