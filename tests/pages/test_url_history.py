"""The URL as history: what app.py writes (defaults left out, one write per run), what the page
menu's links carry, and when a run is Back / Forward to an older link (ui/state.py)."""

from __future__ import annotations

import time

import pytest

from tests.support.apptest import open_page
from ui.state import SETTLE_S, is_history_move

pytestmark = pytest.mark.usefixtures("numpy_backend")

HOME = ("", ())
DIRECT = ("direct", ())
PICKED = ("direct", (("direct_pick", "out:40,60"),))
REFLECT = ("reflect", ())


@pytest.mark.parametrize(
    ("link", "last", "changed", "after", "expected"),
    [
        (DIRECT, REFLECT, False, 5.0, True),  # Back from Reflect to Direct
        (PICKED, DIRECT, False, 5.0, True),  # Forward to the pick
        (DIRECT, DIRECT, False, 5.0, False),  # a rerun of the same link
        (("direct", (("direct_k", "9"),)), DIRECT, False, 5.0, False),  # a link this session never wrote
        (DIRECT, PICKED, True, 5.0, False),  # a click sent before the pick's URL arrived
        (DIRECT, PICKED, False, SETTLE_S / 2, False),  # a request that waited for the last run
    ],
)
def test_which_runs_are_back_or_forward(link, last, changed, after, expected):
    written = [HOME, DIRECT, PICKED, REFLECT]
    assert is_history_move(link, (*last, 100.0), written, changed=changed, at=100.0 + after) is expected


def test_no_last_run_is_a_first_visit():
    assert not is_history_move(DIRECT, None, [DIRECT], changed=False, at=0.0)


def link_of(at) -> dict[str, str]:
    """The address bar's query as AppTest holds it (a value may be a list of one)."""
    return {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}


def test_defaults_stay_out_of_the_link_and_the_menu_links_carry_the_settings():
    at = open_page("direct", state=dict(pres=True))
    assert link_of(at) == {"pres": "1"}  # every Direct setting at its default
    at.session_state["direct_k"] = 5
    at.run()
    assert link_of(at) == {"pres": "1", "direct_k": "5"}
    links = {el.proto.label: el.proto.query_string for el in at.sidebar.get("page_link")}
    assert links["Reflect padding"] == "pres=1"  # Reflect's settings at their defaults
    assert links["Direct convolution"] == ""  # the current page: followed as it is


def test_a_link_someone_wrote_stays_as_written():
    query = {"direct_k": "3", "direct_stride": "1", "direct_pick": "out:4,5"}  # defaults named explicitly
    at = open_page("direct", query=query)
    assert link_of(at) == query


def test_back_restores_but_a_change_sent_with_an_older_link_is_kept():
    """AppTest sends what a browser sends: the query string it holds. Back: an older link of the
    session and nothing else changed -> its settings. A person's change sent before the newer
    link arrived (the same older query string, plus the change) -> the change, nothing undone."""
    at = open_page("direct")
    at.session_state["direct_k"] = 5
    at.run()
    assert link_of(at) == {"direct_k": "5"}
    time.sleep(SETTLE_S)  # a person looks at the page before pressing Back
    at.query_params.clear()  # Back: the link the page's first run wrote
    at.run()
    assert at.session_state["direct_k"] == 3 and link_of(at) == {}
    at.session_state["direct_k"] = 5
    at.run()
    time.sleep(SETTLE_S)
    at.query_params.clear()  # the older link again, with a change typed into the pick's row
    at.number_input(key="w_direct_pick_row").set_value(7).run()
    assert at.session_state["direct_k"] == 5, "nothing undone"
    assert at.session_state["direct_pick"].row == 7
