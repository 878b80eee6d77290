"""Shared fixtures: PyTorch as a reference, the GPU marker, and CI strictness.

In CI (CI=true) nothing may skip silently: a missing test dependency is a failure.
GPU tests skip with the reason when no CUDA device answers (always so in CI).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import numpy as np
import pytest

from tests.support.helpers import IN_CI, gpu_available, require, seed_of

# The app's own tests need Streamlit, Plotly and Pillow. Where they are missing (the GPU machine has neither)
# their modules are not collected, and the summary says which; in CI that is an error instead.
APP_DEPENDENCIES = ("streamlit", "plotly", "PIL")
APP_IMPORTS = (
    "import streamlit",
    "from streamlit",
    "import plotly",
    "from plotly",
    "from viz",
    "from ui",
    "import ui",
    "tests.support.apptest",
    "tests.support.browser",
    "from PIL",
)
_not_collected: list[str] = []
_missing: list[str] = []


def pytest_ignore_collect(collection_path, config: pytest.Config) -> bool | None:
    if IN_CI or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    missing = [m for m in APP_DEPENDENCIES if importlib.util.find_spec(m) is None]
    if missing and any(s in collection_path.read_text() for s in APP_IMPORTS):
        _missing[:] = missing
        _not_collected.append(collection_path.name)
        return True
    return None


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _not_collected:
        terminalreporter.write_line(
            f"not collected ({', '.join(_missing)} not installed here): {', '.join(_not_collected)}"
        )


# The browser test files of the first group; the rest form the second. In the quick suite (2-core
# machine, pytest --durations) this one's tests take about 115 s (the class through the proxy 59,
# Back 18, picks 15, home and upload 23), the other's about 45 (first visit): each worker then
# takes the other tiers' tests as it frees up (START_ORDER). The tour (`test --all`) adds each
# page's tours to both groups.
BROWSER_GROUP_A = (
    "test_e2e.py",
    "test_e2e_classroom.py",
    "test_e2e_serve.py",
    "test_e2e_reflect_pad.py",
    "test_e2e_pick.py",
    "test_e2e_presentation.py",
    "test_e2e_history.py",
)


def browser_group(nodeid: str) -> str | None:
    """The browser tests live in tests/browser/test_e2e*.py (marked e2e; checked at collection), in two
    groups of about equal time (BROWSER_GROUP_A and the rest)."""
    path = nodeid.split("::")[0]
    name = path.rsplit("/", 1)[-1]
    if "browser/" not in path:
        return None
    return "browser-a" if name in BROWSER_GROUP_A else "browser-b"


# The tiers in the order their tests are handed out: the longest tests first, the many short core
# tests last, where they fill whichever worker frees up (2-core machine, tests/server's last tests
# had one worker finishing 44 s after the other).
START_ORDER = ("tests/browser/", "tests/server/", "tests/pages/", "tests/core/")


def start_order(item: pytest.Item) -> int:
    """Where an item's tier comes in START_ORDER (anything else last)."""
    path = item.nodeid.split("::")[0]
    return next((k for k, tier in enumerate(START_ORDER) if path.startswith(tier)), len(START_ORDER))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """With pytest-xdist's --dist loadgroup (scripts/dev.py test asks for it) each group of
    browser tests runs in one worker, in turn, with its own server and Chromium: on two cores one
    browser leaves the other core half idle (it waits on the server), two fill both. The other
    tests spread over whichever worker is free. Grouped by file name: the controller sees node ids
    only."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BrowserGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return browser_group(nodeid) or nodeid

    return BrowserGroups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = [i.nodeid for i in items if ("e2e" in i.keywords) != (browser_group(i.nodeid) is not None)]
    if misplaced:
        raise pytest.UsageError(f"browser tests live in tests/browser/ and are marked e2e: {misplaced}")
    items.sort(key=start_order)  # stable: within a tier, the files' own order
    if not any("gpu" in item.keywords for item in items):
        return
    ok, reason = gpu_available()
    if not ok:
        skip = pytest.mark.skip(reason=f"no usable CUDA GPU: {reason}")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="module")
def numpy_backend():
    """Run a module on NumPy whatever the machine has (page tests: the same numbers everywhere).
    Use with pytestmark = pytest.mark.usefixtures("numpy_backend")."""
    from gpuops import backend

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONV_EXPLORER_BACKEND", "numpy")
        backend.reset_backend()
        yield
    backend.reset_backend()


@pytest.fixture(scope="session")
def torch() -> ModuleType:
    module = require("torch", "parity with PyTorch's F.conv2d / unfold / fold / pad")
    module.backends.cudnn.allow_tf32 = False
    module.backends.cuda.matmul.allow_tf32 = False
    return module


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh generator per test, seeded by the test's id (reproducible, not shared)."""
    return np.random.default_rng(seed_of(request.node.nodeid))


@pytest.fixture
def xp(request: pytest.FixtureRequest) -> ModuleType:
    """numpy or cupy, as the test's `backend` parameter says."""
    return importlib.import_module(request.param)


# The browser tests' fixtures (one server and one Chromium for the whole session), available to
# every test module; imported last because tests/support/browser.py uses IN_CI and require from here.
from tests.support.browser import browser, playwright, server  # noqa: E402, F401
from tests.support.redis_server import redis_server, redis_url  # noqa: E402, F401
