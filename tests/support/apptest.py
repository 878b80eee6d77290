"""The app's pages through streamlit.testing.v1.AppTest, opened the way a browser opens them.

One place for what every page test needs: the entry point run before the page, a check that
nothing raised, and Plotly's typed arrays read back as NumPy arrays. Page test modules also run on
NumPy: pytestmark = pytest.mark.usefixtures("numpy_backend") (tests/conftest.py).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np

from tests.support.helpers import require

require("streamlit", "the app's page tests")
from streamlit.runtime.pages_manager import PagesManager  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

# AppTest starts every run as a freshly started server does: it sets PagesManager's "app with a
# pages/ folder" flag anew, so each run of a page would go through ui/navigation.through_app()'s
# hand-over to app.py, a rerun that drops the run's button clicks. A server clears the flag for good
# at its first run of app.py (tests/server/test_server_faults.py checks a fresh server); page tests do too.
_pages_manager_init = PagesManager.__init__


def _init_as_a_running_server(self, *args, **kwargs) -> None:
    _pages_manager_init(self, *args, **kwargs)
    PagesManager.uses_pages_directory = False


PagesManager.__init__ = _init_as_a_running_server

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = {
    "direct": "pages/direct.py",
    "im2col": "pages/im2col.py",
    "unfold": "pages/unfold.py",
    "reflect": "pages/reflect.py",
    "backward": "pages/backward.py",
    "channels": "pages/channels.py",
    "pool": "pages/pool.py",
    "lenet": "pages/lenet.py",
    "bench": "pages/benchmarks.py",
}


def open_page(page: str | None = None, query: dict | None = None, state: dict | None = None) -> AppTest:
    """Run app.py (as a browser's first request does), then switch to `page` (a PAGES key or a
    path; None stays on Home), with the query parameters and session state given."""
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    for k, v in (state or {}).items():
        at.session_state[k] = v
    at.run()
    if page:
        for k, v in (query or {}).items():
            at.query_params[k] = v
        at.switch_page(PAGES.get(page, page))
        at.run()
    assert_clean(at)
    return at


def rerun(at: AppTest, **state) -> AppTest:
    """Set session state (what a click or a widget leaves behind) and run again."""
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert_clean(at)
    return at


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def latex_results(at: AppTest) -> list[str]:
    """The right-most value of each formula shown (what the formula evaluates to)."""
    return [re.split(r"=\s*", el.value.strip().strip("$").strip())[-1].strip() for el in at.get("latex")]


def typed_array(value, dtype: type | None = None) -> np.ndarray:
    """A figure array as Plotly's JSON holds it: a plain list, or a base64 typed array
    {"dtype", "bdata", "shape"}. A list becomes an array of `dtype`."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return flat.reshape([int(n) for n in str(shape).split(",")]) if shape else flat
    return np.asarray(value, dtype=dtype)


def expected_out(size: int, k: int, s: int, p: int, d: int) -> int:
    """Independent output size: count the window starts that fit in the padded input."""
    return len(range(0, size + 2 * p - (d * (k - 1) + 1) + 1, s))
