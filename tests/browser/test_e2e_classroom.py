"""The classroom mode in real browsers: an instructor and a follower, each in its own tab (its own
Streamlit session; the app keeps nothing in cookies), against one server, and a second follower without a
browser (tests/support/st_client.py, Streamlit's own protocol: what a room sends reaches every session the
same way, and a third Chromium page cost a third of this test's time on a 2-core machine).

Screenshots (tests/artifacts/): the instructor's sidebar with code, link and QR code, and a
follower's page, at 1366 x 768.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.support.browser import _free_port, no_exception, shot, start_server, wait_idle, warm_up
from tests.support.st_client import StClient

pytestmark = [pytest.mark.e2e, pytest.mark.tour]
LAPTOP = {"width": 1366, "height": 768}


def until(check, timeout: float = 30.0, what: str = "the condition") -> float:
    """Poll `check` until it is true; returns the seconds it took."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            if check():
                return time.perf_counter() - t0
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def open_page(browser, url: str):
    page = browser.new_page(viewport=LAPTOP)
    page.goto(url)
    wait_idle(page)
    return page


def start_room(page) -> str:
    """Open the classroom expander and start a room. On a loaded machine a click that lands while
    the expander's content is still moving reaches no button (the browser sends nothing, no run
    starts: seen in CI); the click is repeated, at most twice, once the page is idle again."""
    page.get_by_text("Classroom: follow or teach").click()
    button = page.get_by_role("button", name="Start a room (instructor)")
    mode_line = page.get_by_text(re.compile(r"Instructing room [A-Z0-9]{6}"))
    for attempt in range(3):
        button.click()
        try:
            mode_line.wait_for(timeout=10000 if attempt < 2 else 30000)
            break
        except Exception:
            wait_idle(page)  # a run the click started finishes first
            if mode_line.count() or not button.count():
                break
    else:
        shot(page, "classroom_start_room_failed")
        raise AssertionError("three clicks on 'Start a room' did not start one (tests/artifacts/)")
    mode_line.wait_for(timeout=30000)
    wait_idle(page)
    return re.search(r"Instructing room ([A-Z0-9]{6})", page.inner_text("body")).group(1)


def slider_value(page, name: str) -> str | None:
    return page.get_by_role("slider", name=name).input_value(timeout=5000)


def press_slider(page, name: str, key: str) -> None:
    slider = page.get_by_role("slider", name=name)
    slider.focus()
    slider.press(key)


def title(page) -> str:
    return page.locator("h1").first.inner_text()


def follow(browser, server: str, code: str, path: str = ""):
    page = open_page(browser, f"{server}/{path}?room={code}")
    page.get_by_text(f"Following room {code}").wait_for(timeout=30000)
    return page


def on_page(client: StClient, title: str) -> bool:
    """The headless follower shows the page titled `title` and no run is going on."""
    return client.idle and title in client.texts(main_only=True)


def headless_follower(server: str, code: str, path: str) -> StClient:
    """A follower without a browser, joining from `path` through the room's link."""
    b = StClient(server, path, f"room={code}")
    b.wait_for(lambda: f"Following room {code}" in b.text() and b.idle, 30, "the headless follower joining")
    return b


def test_follow_break_away_rejoin_and_change_page(server, browser):
    """One room: the followers follow the instructor's slider, pick and page; a follower who
    moves a slider explores alone and rejoins with one click, or opens another page on its own.
    Follower a is a browser; the instructor and follower b (joining from another page) are headless:
    the instructor's sidebar in a browser is checked in the next test."""
    teacher = StClient(server, "direct", "cap=64")  # a small working size: quick reruns
    teacher.wait_idle()
    teacher.click("Start a room (instructor)")
    code = re.search(r"Instructing room ([A-Z0-9]{6})", teacher.text()).group(1)
    assert f"/direct?room={code}" in teacher.text()

    a, b = follow(browser, server, code), headless_follower(server, code, "reflect")
    try:  # joined from the home page and from another page: both on the instructor's
        until(lambda: title(a) == "Direct convolution", what="the follower opening the instructor's page")
        until(lambda: on_page(b, "Direct convolution"), what="b opening the instructor's page")
        until(lambda: "with 2 followers" in teacher.text(), 30, "the instructor's follower count")

        # the instructor's slider and pick reach every follower
        teacher.set("Stride S", 2)
        delays = [
            until(lambda: slider_value(a, "Stride S") == "2", what="the stride"),
            until(lambda: b.value("Stride S") == 2, what="the stride (b)"),
        ]
        teacher.set("Row", 5)  # the pick, by its keyboard path
        delays += [
            until(lambda: a.get_by_label("Row").input_value() == "5", what="the pick"),
            until(lambda: b.value("Row") == 5, what="the pick (b)"),
        ]
        wait_idle(a)
        no_exception(a)
        shot(a, "classroom_follower_1366x768")

        # a follower cannot drive: its own change takes it out of the room, and nothing reaches the others
        press_slider(a, "Padding P", "ArrowLeft")  # padding 1 -> 0
        a.get_by_text("Exploring on your own", exact=True).wait_for(timeout=30000)
        assert a.get_by_text("You changed “Padding P”").count() == 1
        assert "room=" not in a.url
        time.sleep(2.5)  # two polls: had anything reached the room, the others would show it now
        assert teacher.value("Padding P") == 1 and b.value("Padding P") == 1
        assert slider_value(a, "Padding P") == "0"
        teacher.set("Dilation D", 2)  # the class goes on without a
        until(lambda: b.value("Dilation D") == 2, what="b following")
        time.sleep(1.5)
        assert slider_value(a, "Dilation D") == "1"
        a.get_by_role("button", name=f"Follow {code} again").click()  # one click back
        until(
            lambda: slider_value(a, "Dilation D") == "2" and slider_value(a, "Padding P") == "1",
            what="rejoining",
        )
        a.get_by_text(f"Following room {code}").wait_for(timeout=30000)

        # the instructor changes page: everyone follows
        teacher.switch_page("reflect")
        delays += [
            until(lambda: title(a) == "Reflect padding", what="the page change"),
            until(lambda: on_page(b, "Reflect padding"), what="the page change (b)"),
        ]
        assert f"room={code}" in a.url and "/reflect" in a.url
        assert f"room={code}" in b.query_string and f"Following room {code}" in b.text()
        no_exception(a)
        print("follower delays (s):", [round(d, 2) for d in delays])
        # a follower opening another page explores it on its own
        a.locator(".st-key-page_menu").get_by_role("link", name="Unfold / Fold").click()
        a.get_by_text("You opened another page").wait_for(timeout=30000)
        assert on_page(teacher, "Reflect padding") and on_page(b, "Reflect padding")
        assert not b.errors and not teacher.errors, b.errors + teacher.errors
    finally:
        b.close()
        teacher.close()
    no_exception(a)
    a.close()


def test_a_room_ends_when_its_instructor_leaves(browser):
    """The instructor's sidebar shows the code, the link and its QR code. A server whose rooms
    end 12 s after the instructor's last heartbeat (followers hear "left" after 6 s): the open
    tab's heartbeat keeps the room; closing the instructor's tab ends it, and the follower is told
    twice and keeps working. On the light Home page: a page whose rerun outlasts the expiry would
    hold up the heartbeat."""
    port = _free_port()
    proc = start_server(port, env={"CONV_EXPLORER_ROOM_END_MINUTES": "0.2"})
    server = f"http://127.0.0.1:{port}"
    try:
        warm_up(browser, server + "/")
        teacher = open_page(browser, f"{server}/")
        code = start_room(teacher)
        sidebar = teacher.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_text(code, exact=True).count() == 1
        assert sidebar.locator("img").count() >= 1, "the QR code"
        assert f"/?room={code}" in sidebar.inner_text()
        shot(teacher, "classroom_instructor_1366x768")
        student = follow(browser, server, code)
        time.sleep(13)  # longer than the room's end time: the open tab's heartbeat keeps the room
        assert student.get_by_text(f"Following room {code}").count() == 1
        assert student.get_by_text("The instructor has left").count() == 0
        teacher.close()
        student.get_by_text("The instructor has left").wait_for(timeout=20000)
        student.get_by_text(f"room {code} ended: the instructor left 12 seconds ago").wait_for(timeout=20000)
        assert student.get_by_text("Exploring on your own", exact=True).count() == 0  # nothing to rejoin
        no_exception(student)
        shot(student, "classroom_expired_1366x768")
        student.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
