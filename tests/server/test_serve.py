"""The classroom deployment (scripts/serve.py: 2 workers, Redis, nginx) at CI size.

Headless clients (tests/support/st_client.py) pinned to a worker by the proxy's sticky cookie, as browsers
are: an instructor on one worker, followers on both, the room in Redis. Then the faults a lecture
meets: a worker killed mid-class (its students reconnect, land on the other worker and follow the
same room), Redis not answering (a clear message, and following resumes when it answers again).
Worker 0 is the light pool, worker 1 the large-image pool (ui/lanes.py): the proxy routes by the
lane cookie, an explorer going large moves there with its settings and its upload, a class never
moves, and a pool whose only worker was killed is served by the other.
No timing is asserted; the measured recovery times are printed for the record.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

import pytest

from tests.support.deployment import deployment  # noqa: F401 (a fixture)
from tests.support.helpers import require

FOLLOWERS = 10
UPLOADED = "your upload: 250 x 170 px, 3 channels"  # the sidebar's caption of the test's upload


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
        # the followers learnt of the changes from the room's beacon, which nginx serves (ui/beacon.py),
        # not from polling their worker every second (their slow poll could catch one change first)
        with urllib.request.urlopen(f"{d.url}/beacon/{code}.json", timeout=5) as r:
            assert json.loads(r.read()) == {"v": 4}  # the room's start, then three changes
        assert sum(c.stats.beacon_reruns_sent for c in clients) >= 2 * FOLLOWERS
    finally:
        for c in [teacher, *clients]:
            c.close()


def test_a_beacon_rerun_asked_from_an_older_page_keeps_following(deployment, st_client):  # noqa: F811
    """A follower's slow poll can see the instructor's change before its page's beacon does; the
    beacon's rerun then carries the widget values of the version that page showed. Those are no
    change of the student's: the follower keeps following, at the room's values (before: "You
    changed Stride S", and the student stopped following without touching anything)."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    from tests.support.st_client import _encode

    d = deployment
    teacher, code = start_room(st_client, d, 0)
    student = follower(st_client, d, code, 0, "late-beacon")
    try:
        assert student.value("Stride S") == 1 and student._beacon is not None
        older = student._beacon["shown"]
        teacher.set("Stride S", 2)
        student.wait_for(lambda: student.value("Stride S") == 2 and student.idle, 60, "stride 2")
        assert student._beacon["shown"] > older
        stride = student.widget("Stride S")
        with student._lock:  # the older page's values, as that page would send them
            stride.state = _encode(stride, 1)
        event = json.dumps([{"event": "changed", "value": {"shown": older, "seen": older + 1}}])
        asked = WidgetState(id=_make_trigger_id(student._beacon["id"], "events"), json_trigger_value=event)
        student.rerun(extra=[asked])
        student.wait_for(lambda: student.idle, 60, "the beacon's rerun")
        assert f"Following room {code}" in student.text(), student.text()[:300]
        assert student.value("Stride S") == 2
        assert not teacher.errors and not student.errors, teacher.errors + student.errors
    finally:
        teacher.close()
        student.close()


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
        cap = "cap=512" if d.is_large(worker) else ""  # an explorer stays in the pool of its size
        c = st_client(d.url, "direct", cap, cookie=d.cookies[worker], timeout=120)
        try:
            c.wait_idle()
            c.set("Image source", "Upload")
            label = next(x for x in c.labels() if x.startswith("Upload an image"))
            c.upload(label, "photo.png", buf.getvalue(), "image/png")
            assert any("your upload:" in t for t in c.texts()), c.texts()
            assert not c.errors, c.errors
            assert c.moves == 0 and d.worker_of(c.cookie) == worker
        finally:
            c.close()


def wait_restarted(d, worker: int, restarts: int) -> None:
    """Wait until the supervisor has restarted the worker (more than `restarts` times) and it answers."""
    deadline = time.monotonic() + 60
    while True:
        info = d.children()[f"worker{worker}"]
        if info["restarts"] > restarts and d._answers(info["port"]):
            return
        assert time.monotonic() < deadline, "the supervisor did not restart the worker"
        time.sleep(0.3)


def test_a_killed_worker_comes_back_and_its_students_keep_following(deployment, st_client):  # noqa: F811
    d = deployment
    restarts = d.children()["worker1"]["restarts"]
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
        wait_restarted(d, 1, restarts)
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


def png_of(pixels) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "PNG")
    return buf.getvalue()


def test_the_proxy_routes_by_the_lane_cookie(deployment):  # noqa: F811
    d = deployment
    for i in range(12):
        assert d.worker_of(f"ce_worker=r{i}") == 0
        assert d.worker_of(f"ce_worker=r{i}; ce_lane=large") == 1
        assert d.worker_of(f"ce_worker=r{i}; ce_lane=other") == 0  # only "large" picks that pool


def test_an_explorer_going_large_moves_to_the_large_pool_with_its_settings_and_upload(
    deployment,  # noqa: F811
    st_client,
):
    """Raising the working size to 512 px: the page asks the browser to move; it reconnects with
    the lane cookie and lands on the large-image worker, with the link's settings, the pick and the
    uploaded image (carried through Redis under the ce_upload cookie). Back at 256 px it returns."""
    import numpy as np

    d = deployment
    pixels = np.random.default_rng(11).integers(0, 255, (170, 250, 3), dtype=np.uint8)
    query = "direct_k=5&direct_stride=2&direct_pick=out:3,4"
    c = st_client(d.url, "direct", query, cookie=d.cookies[0], timeout=120)
    try:
        c.wait_idle()
        c.set("Image source", "Upload")
        label = next(x for x in c.labels() if x.startswith("Upload an image"))
        c.upload(label, "mine.png", png_of(pixels), "image/png")
        assert UPLOADED in c.texts(), [t for t in c.texts() if "upload" in t]
        assert c.moves == 0 and d.worker_of(c.cookie) == 0
        c.set("Working size (longest side, px)", "512")
        assert c.moves == 1 and "ce_lane=large" in c.cookie and "ce_upload=" in c.cookie
        assert d.worker_of(c.cookie) == 1
        assert c.value("Size K") == 5 and c.value("Stride S") == 2
        assert c.value("Image source") == "Upload"
        assert UPLOADED in c.texts(), c.texts()  # the same image
        for setting in ("direct_pick=out%3A3%2C4", "direct_k=5", "direct_stride=2", "cap=512"):
            assert setting in c.query_string, c.query_string
        c.set("Stride S", 1)  # at home on the large worker: no further move
        assert c.moves == 1
        c.set("Working size (longest side, px)", "256")
        assert c.moves == 2 and "ce_lane" not in c.cookie and d.worker_of(c.cookie) == 0
        assert UPLOADED in c.texts(), [t for t in c.texts() if "upload" in t]
        assert not c.errors, c.errors
    finally:
        c.close()


def test_a_class_at_a_large_size_never_moves(deployment, st_client):  # noqa: F811
    d = deployment
    size = "Working size (longest side, px)"
    teacher, code = start_room(st_client, d, 0)
    student = follower(st_client, d, code, 0, "s")
    try:
        teacher.set(size, "512")
        student.wait_for(lambda: student.value(size) == "512" and student.idle, 60, "the working size")
        teacher.set("Stride S", 2)
        student.wait_for(lambda: student.value("Stride S") == 2 and student.idle, 60, "stride 2")
        assert teacher.moves == 0 and student.moves == 0
        assert d.worker_of(teacher.cookie) == 0 and d.worker_of(student.cookie) == 0
        assert not teacher.errors and not student.errors, teacher.errors + student.errors
    finally:
        teacher.close()
        student.close()


def test_a_browser_whose_pool_is_down_is_served_by_the_other_and_stays(deployment, st_client):  # noqa: F811
    """The large pool's one worker killed: nginx sends its browsers to the light pool, where the
    page does not send them back (their cookie already asks for the large pool): no reload loop."""
    d = deployment
    restarts = d.children()["worker1"]["restarts"]
    d.kill_worker(1)
    c = st_client(d.url, "direct", "cap=1024", cookie=d.cookies[1], timeout=120)
    try:
        c.wait_idle()
        assert d.worker_named(c.upstream) == 0, c.upstream  # a restarted worker 1 needs seconds to start
        assert c.moves == 0 and not any("reloading" in t for t in c.texts())
        assert c.value("Working size (longest side, px)") == "1024"
        assert not c.errors, c.errors
    finally:
        c.close()
    wait_restarted(d, 1, restarts)
