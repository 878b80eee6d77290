"""Tables on the projector: presentation mode shows them as HTML tables (st.table), whose text the
presentation CSS sizes; st.dataframe draws on a canvas that CSS cannot reach (ui/tables.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.apptest import open_page
from ui.state import Cell

pytestmark = pytest.mark.usefixtures("numpy_backend")


def products(at, presentation: bool):
    """The Direct page's products table: (its element kind, its value column)."""
    if presentation:
        assert len(at.table) == 1 and len(at.dataframe) == 0
        return at.table[0].value
    assert len(at.dataframe) == 1 and len(at.table) == 0
    return at.dataframe[0].value


def test_the_products_table_is_html_on_the_projector_with_the_same_numbers():
    state = dict(cap=32, direct_preset="box blur", direct_pick=Cell("out", 5, 7))
    normal = products(open_page("direct", state=state), presentation=False)
    shown = products(open_page("direct", state={**state, "pres": True}), presentation=True)
    assert list(shown.columns) == list(normal.columns)
    assert len(shown) == len(normal) == 9  # one product per tap of the 3 x 3 window
    assert np.allclose(shown["product"].astype(float), normal["product"], atol=5e-5)  # 4 decimals shown
