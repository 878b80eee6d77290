"""gpuops.autotune on any machine: gpuops.timing.gpu_times replaced by a scripted one (the choice
logic, not the GPU's timings, is what is checked here; the GPU tests time real kernels)."""

import pytest

from gpuops import autotune, timing


@pytest.fixture
def scripted(monkeypatch):
    """gpu_times(fn, ...) returns, per candidate, the next of its scripted round medians."""
    script: dict[str, list[float]] = {}
    calls: list[str] = []
    runs: list[int] = []

    def gpu_times(fn, warmup, repeat):
        name = fn()
        calls.append(name)
        runs.append(repeat)
        return [script[name].pop(0)] * repeat

    monkeypatch.setattr(timing, "gpu_times", gpu_times)
    return script, calls, runs


def _candidate(name: str):
    return lambda: name


def _refusing():
    raise ValueError("cannot run these arguments")


def test_a_transient_in_one_round_does_not_decide(scripted):
    """a is slow in round 1 only (a first call, another process): its best round wins over b."""
    script, calls, _ = scripted
    script.update(a=[9.0, 1.0], b=[2.0, 2.0])
    choice = autotune.fastest(("t1", 1), {"a": _candidate("a"), "b": _candidate("b")})
    assert choice == "a"
    assert calls == ["a", "b", "a", "b"]  # interleaved rounds


def test_refusals_are_skipped_and_the_choice_is_remembered(scripted):
    script, calls, _ = scripted
    script.update(b=[3.0, 4.0], c=[5.0, 2.5])
    candidates = {"a": _refusing, "b": _candidate("b"), "c": _candidate("c")}
    assert autotune.fastest(("t2", 1), candidates) == "c"
    assert autotune.fastest(("t2", 1), candidates) == "c" and calls == ["b", "c", "b", "c"]
    assert autotune.fastest(("t3", 1), {"a": _refusing}) is None


def test_short_candidates_run_long_enough_to_fill_a_round(scripted):
    """Round 1 is repeat / rounds runs each; in round 2 a 0.05 ms candidate runs 1 / 0.05 = 20
    times (about a millisecond), a 0.004 ms one is capped at MAX_RUNS, a 2 ms one keeps 5
    (timing.runs_to_fill)."""
    script, calls, runs = scripted
    script.update(a=[0.05, 0.05], b=[0.004, 0.004], c=[2.0, 2.0])
    candidates = {n: _candidate(n) for n in "abc"}
    assert autotune.fastest(("t4", 1), candidates, repeat=10, rounds=2) == "b"
    assert calls == ["a", "b", "c"] * 2
    assert runs == [5, 5, 5, round(timing.SHORT_ROUND_MS / 0.05), timing.MAX_RUNS, 5]
