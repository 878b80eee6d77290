"""ui/lanes.py: which sessions move between serve's two pools of workers, and how a run that moves
looks (AppTest, with the worker's pool given by CONV_EXPLORER_LANE as scripts/serve.py gives it).
The move itself through nginx, with the upload carried in Redis: tests/server/test_serve.py."""

from __future__ import annotations

import json

import pytest

from tests.support.helpers import require

require("streamlit", "the lanes' tests")
from tests.support.apptest import AppTest, open_page  # noqa: E402
from ui import budget, lanes  # noqa: E402

pytestmark = pytest.mark.usefixtures("numpy_backend")
LARGE, SMALL = budget.HEAVY_SIZE, budget.HEAVY_SIZE // 2


@pytest.mark.parametrize(
    ("lane", "exploring", "size", "cookie", "moves_to"),
    [
        (None, True, 1024, None, None),  # lanes off: one process, or one pool
        ("light", True, LARGE, None, "large"),  # exactly HEAVY_SIZE is heavy
        ("light", True, 1024, "", "large"),
        ("light", True, SMALL, None, None),
        ("large", True, 1024, "large", None),
        ("large", True, SMALL, "large", "light"),
        ("light", False, 1024, None, None),  # an instructor or a follower stays with the class
        ("large", False, SMALL, "large", None),
        ("light", True, 1024, "large", None),  # asked for the large pool, landed here: it is down
        ("large", True, SMALL, None, None),  # asked for the light pool, landed here: it is down
        ("large", True, SMALL, "other", None),  # any cookie but "large" asks for the light pool
        ("medium", True, 1024, None, None),  # not a pool serve names: lanes off
    ],
)
def test_who_moves_where(lane, exploring, size, cookie, moves_to):
    assert lanes.wanted_lane(lane=lane, exploring=exploring, working_size=size, cookie=cookie) == moves_to


def test_the_pool_comes_from_the_environment():
    assert lanes.this_lane({}) is None
    assert lanes.this_lane({"CONV_EXPLORER_LANE": "large"}) == "large"
    assert lanes.this_lane({"CONV_EXPLORER_LANE": " light "}) == "light"
    assert lanes.this_lane({"CONV_EXPLORER_LANE": "fast"}) is None


def moves(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.json) for c in at.get("bidi_component") if "lane" in c.proto.component_name]


def test_lanes_off_no_component_and_the_page_runs(monkeypatch):
    monkeypatch.delenv("CONV_EXPLORER_LANE", raising=False)
    at = open_page("direct", {"cap": "1024"})
    assert moves(at) == []
    assert not any("reloading" in c.value for c in at.caption)
    assert [t.value for t in at.title] == ["Direct convolution"]


def test_an_explorer_at_a_large_size_on_a_light_worker_moves_before_the_page_computes(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_LANE", "light")
    query = {"cap": "1024", "direct_k": "5", "direct_pick": "out:3,4"}
    at = open_page("direct", query)
    (move,) = moves(at)
    assert move["cookies"] == {"ce_lane": "large", "ce_upload": None}  # no upload: an old token goes
    assert move["query"] == query  # the first run's link, page settings and pick included
    assert any(c.value == lanes.CAPTIONS["large"] for c in at.caption)
    assert not at.title and not at.get("plotly_chart")  # the page did not run here
    assert dict(at.query_params) == query  # nor did the run rewrite the link


def test_the_move_carries_the_settings_changed_in_the_session_not_just_the_first_link(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_LANE", "light")
    at = open_page("direct", {"cap": str(SMALL), "direct_k": "5"})
    assert moves(at) == []
    at.session_state["direct_stride"] = 3
    at.run()
    at.session_state["direct_k"] = 3  # its default: a setting the link names keeps its place
    at.run()
    written = {"cap": str(SMALL), "direct_k": "3", "direct_stride": "3"}
    assert moves(at) == [] and dict(at.query_params) == written
    at.session_state["cap"] = 1024
    at.run()
    (move,) = moves(at)
    assert move["query"] == {**written, "cap": "1024"}  # what the URL sync would have written


def test_a_small_size_on_a_large_worker_without_the_lane_cookie_stays_no_reload_loop(monkeypatch):
    """AppTest sends no cookies: a browser without ce_lane asked nginx for the light pool, so on a
    large worker that pool is down (nginx's other pool answered). Moving would land here again.
    (The move back with the cookie: tests/server/test_serve.py.)"""
    monkeypatch.setenv("CONV_EXPLORER_LANE", "large")
    at = open_page("direct", {"cap": str(SMALL)})
    assert moves(at) == [] and [t.value for t in at.title] == ["Direct convolution"]


def test_an_explorer_in_its_own_pool_stays_and_a_setting_moved_there_keeps_it(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_LANE", "large")
    at = open_page("direct", {"cap": "1024"})
    assert moves(at) == [] and [t.value for t in at.title] == ["Direct convolution"]
    at.session_state["direct_stride"] = 2
    at.run()
    assert moves(at) == [] and at.query_params["direct_stride"] == "2"


def test_an_instructor_raising_the_working_size_stays(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_LANE", "light")
    monkeypatch.delenv("CONV_EXPLORER_REDIS_URL", raising=False)
    at = open_page("direct", {"cap": "64"})
    next(b for b in at.button if b.label.startswith("Start a room")).click().run()
    assert at.session_state["_room_teach"]
    at.session_state["cap"] = 1024
    at.run()
    assert not at.exception and moves(at) == []
    assert at.query_params["cap"] == "1024" and [t.value for t in at.title] == ["Direct convolution"]


def test_a_link_with_an_upload_and_nothing_carried_shows_the_sample_and_says_so(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_LANE", "light")
    at = open_page("direct", {"source": "upload"})
    assert at.session_state["image"].name.startswith("sample:")
    assert any("which links cannot carry" in i.value for i in at.info)
