"""ui.picking, the pick skeleton every page runs: clicks land on grids, picks follow shrinking grids,
and resolve() applies this run's click before it builds the hover rules. Each check runs a small
script in AppTest (the skeleton lives in a Streamlit session); the page tests check the same rules
through the pages themselves."""

from __future__ import annotations

import pytest

from tests.support.helpers import require

require("streamlit", "the skeleton's tests")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ui import pick  # noqa: E402
from ui.state import Cell  # noqa: E402


def _clicks() -> None:
    import streamlit as st

    from ui import picking
    from ui.pick import Click
    from ui.state import Cell, Param

    pick = Param("t_pick", Cell("a", 0, 0), choices=("a", "b"))
    grids = {
        ("chart", "x"): picking.Grid(pick, "a", (3, 4)),
        ("chart", "x2"): picking.Grid(pick, "b", (2, 2)),
    }
    seen = []
    for click in [
        Click("chart", "x", 2, 3),  # inside grid a: picked
        Click("chart", "x2", 2, 0),  # row 2 is outside grid b (2 x 2): nothing changes
        Click("other", "x", 0, 0),  # a chart without grids: nothing
        Click("chart", "x2", 1, 1),  # inside grid b
        None,  # no click this run
    ]:
        changed = picking.click_cell(click, grids)
        seen.append((changed, str(st.session_state.get("t_pick"))))
    st.session_state["seen"] = seen


def test_a_click_picks_the_cell_of_the_grid_it_lands_on_and_nothing_else():
    at = AppTest.from_function(_clicks).run()
    assert not at.exception
    assert at.session_state["seen"] == [
        (True, "a:2,3"),
        (False, "a:2,3"),
        (False, "a:2,3"),
        (True, "b:1,1"),
        (False, "b:1,1"),
    ]


def _fits() -> None:
    import streamlit as st

    from ui import picking
    from ui.state import Cell, Param

    pick = Param("t_pick", Cell("a", 1, 1), choices=("a", "b"))
    first = picking.fitted(pick, {"a": (5, 5), "b": (2, 2)})  # unset: the default, kept
    st.session_state["t_pick"] = Cell("b", 7, -3)  # a link, or a grid that shrank under the pick
    moved = picking.fitted(pick, {"a": (5, 5), "b": (4, 6)})
    st.session_state["fits"] = [str(first), str(moved), str(st.session_state["t_pick"])]


def test_a_pick_moves_to_the_nearest_cell_when_its_grid_shrinks():
    at = AppTest.from_function(_fits).run()
    assert not at.exception
    assert at.session_state["fits"] == ["a:1,1", "b:3,0", "b:3,0"]


def _resolves() -> None:
    import streamlit as st

    from ui import picking
    from ui.state import Cell, Param
    from viz.style import NORMAL

    pick = Param("t_pick", None, choices=("out", "in"))
    hovered = []

    def hover(cell: Cell) -> dict:
        hovered.append(str(cell))
        return {}

    def clicked(click, cell: Cell) -> Cell | None:
        return Cell("in", click.row, click.col) if click.chart == "chart" else None

    def fit(cell: Cell | None) -> Cell:
        return Cell("out", 4, 4) if cell is None else Cell(cell.space, min(cell.row, 9), min(cell.col, 9))

    keep = st.session_state.get("keep_default", True)
    cell = picking.resolve(pick, picking.Rules(fit, clicked, hover, keep_default=keep), NORMAL)
    st.session_state["resolved"] = [str(cell), str(st.session_state.get("t_pick")), hovered]


@pytest.mark.parametrize("keep", [True, False])
def test_resolve_uses_the_default_and_keeps_it_in_the_link_only_when_asked(keep):
    at = AppTest.from_function(_resolves)
    at.session_state["keep_default"] = keep
    at.run()
    assert not at.exception
    cell, stored, hovered = at.session_state["resolved"]
    assert cell == "out:4,4" and hovered == ["out:4,4"]  # the hover rules follow the pick in use
    assert stored == ("out:4,4" if keep else "None")


def test_resolve_fits_a_stored_pick_into_the_geometry_and_stores_it():
    at = AppTest.from_function(_resolves)
    at.session_state["t_pick"] = Cell("in", 30, 2)
    at.run()
    assert not at.exception
    assert at.session_state["resolved"] == ["in:9,2", "in:9,2", ["in:9,2"]]


def test_resolve_applies_this_runs_click_before_it_builds_the_hover_maps():
    """The click of this run (read before the bridge mounts) is the pick the hover rules are built
    for: the page draws the new pick in the run that follows the click, never one run late."""
    at = AppTest.from_function(_resolves)
    at.session_state[pick.KEY] = {"click": {"chart": "chart", "panel": "x", "row": 2, "col": 7}}
    at.run()
    assert not at.exception
    assert at.session_state["resolved"] == ["in:2,7", "in:2,7", ["in:2,7"]]


def test_resolve_ignores_a_click_on_no_cell_of_the_page():
    at = AppTest.from_function(_resolves)
    at.session_state[pick.KEY] = {"click": {"chart": "elsewhere", "panel": "x", "row": 2, "col": 7}}
    at.session_state["keep_default"] = False
    at.run()
    assert not at.exception
    assert at.session_state["resolved"] == ["out:4,4", "None", ["out:4,4"]]
