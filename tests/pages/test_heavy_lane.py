"""ui.budget.heavy_lane: runs of students exploring large images go one at a time per process;
light runs and a class's runs never wait, and a heavy run waits a bounded time, then runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from ui import budget

LARGE, SMALL = budget.HEAVY_SIZE, budget.HEAVY_SIZE // 2
PATIENCE_S = 10.0  # how long a test waits for something that must happen


@pytest.fixture(autouse=True)
def fresh_lanes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(budget, "HEAVY_LANES", 1)
    budget._heavy_lanes.clear()
    yield
    budget._heavy_lanes.clear()


class Run(threading.Thread):
    """A rerun that enters the lane, says so, and stays inside until told to leave."""

    def __init__(self, size: int, *, in_class: bool = False) -> None:
        super().__init__(daemon=True)
        self.size, self.in_class = size, in_class
        self.inside, self.leave, self.done = threading.Event(), threading.Event(), threading.Event()

    def run(self) -> None:
        with budget.heavy_lane(self.size, in_class=self.in_class):
            self.inside.set()
            self.leave.wait(PATIENCE_S)
        self.done.set()


def start(run: Run) -> Run:
    run.start()
    return run


def test_a_second_heavy_run_waits_for_the_first_and_then_runs():
    first = start(Run(LARGE))
    assert first.inside.wait(PATIENCE_S)
    second = start(Run(LARGE))
    assert not second.inside.wait(0.5)  # still waiting while the first holds the lane
    first.leave.set()
    assert second.inside.wait(PATIENCE_S)
    second.leave.set()
    assert second.done.wait(PATIENCE_S)


@pytest.mark.parametrize(("size", "in_class"), [(SMALL, False), (LARGE, True)], ids=["light", "class"])
def test_light_runs_and_class_runs_never_wait_for_the_lane(size: int, in_class: bool):
    heavy = start(Run(LARGE))
    assert heavy.inside.wait(PATIENCE_S)
    other = start(Run(size, in_class=in_class))
    assert other.inside.wait(PATIENCE_S)  # it got in while the heavy run still holds the lane
    assert not heavy.done.is_set()
    other.leave.set()
    heavy.leave.set()
    assert heavy.done.wait(PATIENCE_S) and other.done.wait(PATIENCE_S)


def test_a_heavy_run_that_waited_too_long_runs_anyway_and_frees_no_lane_it_did_not_take(monkeypatch):
    monkeypatch.setattr(budget, "HEAVY_WAIT_S", 0.2)
    first = start(Run(LARGE))
    assert first.inside.wait(PATIENCE_S)
    late = start(Run(LARGE))
    assert late.inside.wait(PATIENCE_S)  # past HEAVY_WAIT_S it ran beside the first
    late.leave.set()
    assert late.done.wait(PATIENCE_S)
    monkeypatch.setattr(budget, "HEAVY_WAIT_S", PATIENCE_S)
    third = start(Run(LARGE))
    assert not third.inside.wait(0.5)  # the late run released nothing: the first still holds the lane
    first.leave.set()
    assert third.inside.wait(PATIENCE_S)
    third.leave.set()
    assert third.done.wait(PATIENCE_S)


def test_lanes_off_lets_heavy_runs_in_together(monkeypatch):
    monkeypatch.setattr(budget, "HEAVY_LANES", 0)
    runs = [start(Run(LARGE)) for _ in range(3)]
    assert all(r.inside.wait(PATIENCE_S) for r in runs)
    for r in runs:
        r.leave.set()
    assert all(r.done.wait(PATIENCE_S) for r in runs)


def test_on_a_large_image_worker_heavy_runs_go_in_together(monkeypatch):
    """Under serve's lanes (ui/lanes.py) heavy sessions have workers of their own: nobody light to
    protect there, so the lane lets them all in."""
    monkeypatch.setattr(budget, "LARGE_WORKER", True)
    runs = [start(Run(LARGE)) for _ in range(3)]
    assert all(r.inside.wait(PATIENCE_S) for r in runs)
    for r in runs:
        r.leave.set()
    assert all(r.done.wait(PATIENCE_S) for r in runs)


class NestedRun(Run):
    """A heavy rerun whose page takes the lane again inside it (a LeNet training chunk)."""

    def run(self) -> None:
        with budget.heavy_lane(self.size), budget.heavy_lane(LARGE):
            self.inside.set()
            self.leave.wait(PATIENCE_S)
        self.done.set()


def test_a_run_inside_the_lane_does_not_wait_for_it_again_and_frees_it_once(monkeypatch):
    """With one lane and a wait longer than the test's patience, a nested wait would show as a run
    that never gets inside; after it leaves, the lane is free exactly once (the next run gets in,
    a second one waits for it)."""
    monkeypatch.setattr(budget, "HEAVY_WAIT_S", 10 * PATIENCE_S)
    nested = start(NestedRun(LARGE))
    assert nested.inside.wait(PATIENCE_S)
    nested.leave.set()
    assert nested.done.wait(PATIENCE_S)
    after = start(Run(LARGE))
    assert after.inside.wait(PATIENCE_S)
    waiting = start(Run(LARGE))
    assert not waiting.inside.wait(0.5)
    after.leave.set()
    assert waiting.inside.wait(PATIENCE_S)
    waiting.leave.set()
    assert waiting.done.wait(PATIENCE_S)
