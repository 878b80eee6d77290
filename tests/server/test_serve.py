"""The classroom deployment (scripts/serve.py: 2 workers, Redis, nginx) at CI size.

Headless clients (tests/support/st_client.py) pinned to a worker by the proxy's sticky cookie, as browsers
are: an instructor on one worker, followers on both, the room in Redis. Then the faults a lecture
meets: a worker killed mid-class (its students reconnect, land on the other worker and follow the
same room), Redis not answering (a clear message, and following resumes when it answers again).
No timing is asserted; the measured recovery times are printed for the record.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.support.deployment import deployment  # noqa: F401 (a fixture)
from tests.support.helpers import require

FOLLOWERS = 10


@pytest.fixture(scope="module")
def st_client():
    require("streamlit", "the deployment tests")
    from tests.support.st_client import StClient

    return StClient


def start_room(StClient, d, worker: int):
    teacher = StClient(d.url, "direct", "cap=64", cookie=d.cookies[worker], timeout=120)
    teacher.wait_idle()
    teacher.click("Start a room (instructor)")
    code = re.search(r"Instructing room ([A-Z0-9]{6})", teacher.text()).group(1)
    return teacher, code


def follower(StClient, d, code: str, worker: int, tag):
    c = StClient(d.url, "", f"room={code}", cookie=d.cookies[worker], timeout=120, tag=tag)
    c.wait_for(lambda: f"Following room {code}" in c.text() and c.idle, 60, "joining")
    return c


def test_followers_on_every_worker_follow_an_instructor_on_one(deployment, st_client):  # noqa: F811
    d = deployment
    assert d.worker_of(d.cookies[0]) == 0 and d.worker_of(d.cookies[1]) == 1
    teacher, code = start_room(st_client, d, 0)
    clients = [follower(st_client, d, code, i % 2, i) for i in range(FOLLOWERS)]
    try:
        for c in clients:
            c.wait_for(lambda c=c: c.value("Stride S") == 1, 60, "the instructor's page")
        for stride in (2, 3, 1):
            teacher.set("Stride S", stride)
            for c in clients:
                c.wait_for(lambda c=c, s=stride: c.value("Stride S") == s and c.idle, 60, f"stride {stride}")
        teacher.wait_for(lambda: f"with {FOLLOWERS} followers" in teacher.text(), 30, "the follower count")
        for c in [teacher, *clients]:
            assert not c.errors, (c.tag, c.errors)
    finally:
        for c in [teacher, *clients]:
            c.close()


def test_an_upload_through_the_proxy_reaches_its_sessions_worker(deployment, st_client):  # noqa: F811
    """A photo larger than nginx's in-memory body buffer, uploaded as a browser does (its sticky
    cookie on the PUT): it reaches the worker holding the session (nginx, run as root, had given
    the request body to a temp file its workers could not write: HTTP 500)."""
    import io

    import numpy as np
    from PIL import Image

    d = deployment
    rgb = np.random.default_rng(7).integers(0, 255, (300, 400, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "PNG")
    assert len(buf.getvalue()) > 64 * 1024
    for worker in (0, 1):
        c = st_client(d.url, "direct", cookie=d.cookies[worker], timeout=120)
        try:
            c.wait_idle()
            c.set("Image source", "Upload")
            label = next(x for x in c.labels() if x.startswith("Upload an image"))
            c.upload(label, "photo.png", buf.getvalue(), "image/png")
            assert any("your upload:" in t for t in c.texts()), c.texts()
            assert not c.errors, c.errors
        finally:
            c.close()


def test_a_killed_worker_comes_back_and_its_students_keep_following(deployment, st_client):  # noqa: F811
    d = deployment
    teacher, code = start_room(st_client, d, 0)
    students = [follower(st_client, d, code, 1, i) for i in range(4)]
    try:
        d.kill_worker(1)
        killed = time.perf_counter()
        for s in students:
            s.wait_for(lambda s=s: s.closed, 30, "the dead worker's socket closing")
        back = []
        for s in students:  # the browser reconnects to the same address; the proxy picks a live worker
            s.reconnect()
            s.wait_for(lambda s=s: f"Following room {code}" in s.text() and s.idle, 60, "rejoining")
            back.append(time.perf_counter() - killed)
        teacher.set("Stride S", 2)
        for s in students:
            s.wait_for(lambda s=s: s.value("Stride S") == 2 and s.idle, 60, "following after the restart")
            assert not [e for e in s.errors if "connection closed" not in e], s.errors
        print("students back in their room after (s):", [round(t, 2) for t in back])
        deadline = time.monotonic() + 60
        while not (d.children()["worker1"]["restarts"] >= 1 and d._answers(d.children()["worker1"]["port"])):
            assert time.monotonic() < deadline, "the supervisor did not restart the worker"
            time.sleep(0.3)
        assert not teacher.errors, teacher.errors
    finally:
        for c in [teacher, *students]:
            c.close()


def test_redis_not_answering_is_said_and_following_resumes(deployment, st_client):  # noqa: F811
    d = deployment
    teacher, code = start_room(st_client, d, 0)
    student = follower(st_client, d, code, 1, "s")
    try:
        d.pause_redis(True)
        try:
            student.rerun(wait=False)  # as a browser's reload would; its poll says the same
            try:
                student.wait_for(
                    lambda: "classroom store is not answering" in student.text(), 30, "the message"
                )
            except TimeoutError as exc:
                raise AssertionError(f"{exc}: the follower shows {student.text()[-600:]!r}") from exc
            assert f"Following room {code}" in student.text()  # still in the room, waiting
        finally:
            d.pause_redis(False)
        student.wait_for(lambda: "not answering" not in student.text(), 30, "the message going away")
        teacher.set("Stride S", 3)
        student.wait_for(lambda: student.value("Stride S") == 3 and student.idle, 60, "following again")
        assert not student.errors and not teacher.errors, student.errors + teacher.errors
    finally:
        teacher.close()
        student.close()
