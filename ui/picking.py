"""The pick skeleton every operation page shares: a click on a cell of a figure becomes the pick,
the pick stays inside grids that shrink under it, the keyboard edits it, and the hover rules that
follow it are mounted with the bridge (ui.pick).

A pick is a `Cell` in a URL setting (ui.state). Pages describe their pickable grids and rules;
the order of one run is always the same:

    settings -> click (read before the bridge mounts) -> clamp into the grids -> hover rules -> bridge

`resolve` runs that order for a page whose hover rules follow its one pick; `click_cell`, `fitted`
and `pick_inputs` are the pieces, for pages with several picks whose hover rules do not move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import streamlit as st

from ui import hover, pick, state
from ui.state import Cell, Param
from viz.style import Style

Shape = tuple[int, int]


@dataclass(frozen=True)
class Grid:
    """A grid a click may land on: the setting its pick goes to, the space it names, its shape."""

    param: Param
    space: str
    shape: Shape


def nearest(row: int, col: int, shape: Shape) -> tuple[int, int]:
    """The cell of a grid of `shape` nearest to (row, col)."""
    return min(max(int(row), 0), shape[0] - 1), min(max(int(col), 0), shape[1] - 1)


def click_cell(click: pick.Click | None, grids: Mapping[tuple[str, str], Grid]) -> bool:
    """Apply a click on (chart, panel) to the grid there: a cell inside it becomes that grid's pick.
    Returns whether a pick changed (a click elsewhere, or outside the grid, changes nothing)."""
    if click is None:
        return False
    grid = grids.get((click.chart, click.panel))
    if grid is None or not (0 <= click.row < grid.shape[0] and 0 <= click.col < grid.shape[1]):
        return False
    state.put(grid.param, Cell(grid.space, click.row, click.col))
    return True


def fitted(param: Param, shapes: Mapping[str, Shape]) -> Cell:
    """The pick of `param` (its default when unset), moved to the nearest cell of its grid: the
    settings may have shrunk the grid under it. The moved pick is stored."""
    cell = state.get(param) or param.default
    cell = Cell(cell.space, *nearest(cell.row, cell.col, shapes[cell.space]))
    state.put(param, cell)
    return cell


def _typed(param: Param, prefix: str) -> None:
    ss = st.session_state
    state.put(
        param, Cell(ss[f"{prefix}_space"], int(ss[f"{prefix}_row"] or 0), int(ss[f"{prefix}_col"] or 0))
    )


def pick_inputs(param: Param, cell: Cell, spaces: Mapping[str, tuple[str, Shape]], row: list) -> None:
    """The keyboard path, in sync with clicks, in three columns of `row`: which grid (spaces:
    space -> (its name, its shape)), the row and the column of the pick."""
    prefix = f"w_{param.key}"
    st.session_state.update(
        {f"{prefix}_space": cell.space, f"{prefix}_row": cell.row, f"{prefix}_col": cell.col}
    )
    names = {space: name for space, (name, _) in spaces.items()}
    args = (param, prefix)
    row[0].radio(
        "Picked",
        list(names),
        format_func=names.get,
        key=f"{prefix}_space",
        horizontal=True,
        on_change=_typed,
        args=args,
    )
    rows, cols = spaces[cell.space][1]
    row[1].number_input("row", 0, rows - 1, step=1, key=f"{prefix}_row", on_change=_typed, args=args)
    row[2].number_input("column", 0, cols - 1, step=1, key=f"{prefix}_col", on_change=_typed, args=args)


@dataclass(frozen=True)
class Rules:
    """How a page's one pick follows its figures. fit: the stored pick (None: none yet) moved
    inside the current geometry, or the page's default; clicked: the pick a click makes (None:
    not a cell of the page's); hover: the hover rules that go with a pick (ui.hover); keep_default:
    False leaves a default pick out of the link (it follows the image until a cell is picked);
    in_browser: hover rules that do not follow the pick."""

    fit: Callable[[Cell | None], Cell]
    clicked: Callable[[pick.Click, Cell], Cell | None]
    hover: Callable[[Cell], hover.Rules]
    keep_default: bool = True
    in_browser: hover.Rules | None = None


def resolve(param: Param, rules: Rules, look: Style) -> Cell:
    """This run's pick, in the skeleton's order: the stored pick fitted to the geometry; this run's
    click, read before the bridge mounts; the bridge mounted with that pick's hover rules. A click
    only the bridge saw (none was pending) is applied after, and the page runs again when the
    new pick needs other hover rules. The pick is stored, so the link shows it."""
    stored = state.get(param)
    cell = rules.fit(stored)
    peeked = pick.pending()
    moved = rules.clicked(peeked, cell) if peeked is not None else None
    cell = moved or cell
    following = rules.hover(cell)
    click = pick.bridge(style=look.outline_style(), rules=hover.combine(rules.in_browser or {}, following))
    if click is not None and peeked is None:
        late = rules.clicked(click, cell)
        if late is not None and late != cell:
            moved, cell = late, late
            if rules.hover(cell) != following:
                state.put(param, cell)
                state.rerun()
    if stored is not None or moved is not None or rules.keep_default:
        state.put(param, cell)
    return cell
