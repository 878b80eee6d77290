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


def test_a_pinned_report_says_where_it_ran_in_the_generated_page():
    """A report's host_core becomes a note of the performance page; older or malformed ones none."""
    from bench import reports, to_markdown

    base = {"backend": {"gpu": True, "device": "GPU"}, "started": "2030-01-01T10:00:00Z", "results": []}
    core = {"core": 2, "cores": 16, "probe_us": 7.03, "slowest_us": 11.08}
    pinned = reports.parse_run({**base, "host_core": core}, "pinned.json")
    assert pinned.pinned == (
        "pinned to core 2 of 16, where a tiny kernel's launch took 7.03 us of host time "
        "(11.08 us on the slowest core)"
    )
    assert f"`pinned.json`: {pinned.pinned} (bench/pin_core.py).\n" in to_markdown.notes([pinned])
    for older in (base, {**base, "host_core": None}, {**base, "host_core": {"core": "two"}}):
        run = reports.parse_run(older, "older.json")
        assert run.pinned is None and to_markdown.notes([run]) == []


def test_pinned_runs_and_unpinned_ones_are_separate_leases():
    """Minutes apart on one machine, but timed differently: two groups, each of its own runs."""
    from bench import reports

    def run(minute, host_core):
        data = {"backend": {"gpu": True}, "started": f"2030-01-01T10:{minute:02d}:00Z", "results": []}
        return reports.parse_run({**data, "host_core": host_core}, f"m{minute}.json")

    core = {"core": 2, "cores": 16, "probe_us": 7.0, "slowest_us": 11.0}
    leases = reports.group_leases([run(0, None), run(4, None), run(9, core), run(13, core)])
    names = [[r.name for r in lease.runs] for lease in leases]
    assert names == [["m9.json", "m13.json"], ["m0.json", "m4.json"]]


def test_the_runs_caption_says_where_a_pinned_run_ran():
    from bench import reports
    from ui import benchmarks_view

    base = {"backend": {"gpu": True, "device": "GPU"}, "started": "2030-01-01T10:00:00Z", "results": []}
    core = {"core": 2, "cores": 16, "probe_us": 7.0, "slowest_us": 11.0}
    for data, said in (({**base, "host_core": core}, True), (base, False)):
        run = reports.parse_run(data, "r.json")
        caption = benchmarks_view.runs_caption(reports.group_leases([run])[0])
        assert ("the command ran pinned to core 2 of 16" in caption) == said
