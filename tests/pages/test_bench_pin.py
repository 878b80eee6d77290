"""bench.pin_core: the benchmark command pins itself to the core where the host is fastest."""

from __future__ import annotations

import os

import pytest

from bench import pin_core


@pytest.fixture
def cores(monkeypatch):
    """Four allowed cores; sched_setaffinity recorded instead of applied."""
    state = {"allowed": {0, 1, 2, 3}, "current": {0, 1, 2, 3}, "set": []}

    def setaffinity(pid, cpus):
        assert pid == 0
        state["current"] = set(cpus)
        state["set"].append(set(cpus))

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(state["allowed"]), raising=False)
    monkeypatch.setattr(os, "sched_setaffinity", setaffinity, raising=False)
    return state


def test_each_core_is_probed_on_itself_and_the_fastest_is_kept(cores):
    speed = {0: 21.0, 1: 14.5, 2: 13.2, 3: 19.9}  # host us of a launch, as on the device machine
    probed = []

    def probe():
        (core,) = cores["current"]  # the probe runs pinned to the one core it measures
        probed.append(core)
        return speed[core]

    got = pin_core.pin_to_fastest_core(probe)
    assert probed == [0, 1, 2, 3]
    assert cores["current"] == {2} and cores["set"][-1] == {2}
    assert got == {"core": 2, "cores": 4, "probe_us": 13.2, "slowest_us": 21.0}


def test_one_allowed_core_is_left_alone(cores):
    cores["allowed"] = {5}
    assert pin_core.pin_to_fastest_core(lambda: pytest.fail("nothing to choose from")) is None
    assert cores["set"] == []


def test_probe_us_is_the_best_loop(monkeypatch):
    """Three loops of 200 calls; the fastest loop's time a call, in microseconds."""
    clock = iter([0.0, 0.004, 1.0, 1.003, 2.0, 2.005])  # 20, 15 and 25 us a call
    monkeypatch.setattr(pin_core.time, "perf_counter", lambda: next(clock))
    calls = []
    assert pin_core.probe_us(lambda: calls.append(1)) == pytest.approx(15.0)
    assert len(calls) == 600
