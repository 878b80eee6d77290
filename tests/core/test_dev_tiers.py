"""scripts/dev.py test: the quick suite leaves the browser tours out; --all or a -m of the caller's
own runs what was asked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DEV = Path(__file__).resolve().parents[2] / "scripts" / "dev.py"


@pytest.fixture(scope="module")
def dev():
    spec = importlib.util.spec_from_file_location("dev_script", DEV)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_quick_suite_deselects_the_tours(dev):
    assert dev.tiers([]) == ["-m", "not tour"]
    assert dev.tiers(["-k", "direct", "-x"]) == ["-m", "not tour", "-k", "direct", "-x"]


def test_all_runs_every_tier_and_passes_the_rest_on(dev):
    assert dev.tiers(["--all"]) == []
    assert dev.tiers(["-x", "--all", "tests/browser"]) == ["-x", "tests/browser"]


def test_a_marker_of_the_callers_own_is_kept_as_given(dev):
    assert dev.tiers(["-m", "gpu"]) == ["-m", "gpu"]
    assert dev.tiers(["-mtour", "-n", "0"]) == ["-mtour", "-n", "0"]
