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
    (timing.runs_to_fill); the two short ones get SHORT_ROUNDS rounds, the long one two."""
    script, calls, runs = scripted
    script.update(a=[0.05] * 4, b=[0.004] * 4, c=[2.0, 2.0])
    candidates = {n: _candidate(n) for n in "abc"}
    assert autotune.fastest(("t4", 1), candidates, repeat=10, rounds=2) == "b"
    assert timing.SHORT_ROUNDS == 4 and calls == ["a", "b", "c"] * 2 + ["a", "b"] * 2
    fill = round(timing.SHORT_ROUND_MS / 0.05)
    assert runs == [5, 5, 5, fill, timing.MAX_RUNS, 5, fill, timing.MAX_RUNS, fill, timing.MAX_RUNS]


def test_a_short_candidate_held_up_for_two_rounds_still_wins(scripted):
    """A host-bound call whose first two rounds a transient slowed (0.03 ms against b's 0.025)
    shows its own time in the later rounds a short call gets."""
    script, calls, _ = scripted
    script.update(a=[0.03, 0.03, 0.02, 0.02], b=[0.025] * 4)
    assert autotune.fastest(("t5", 1), {"a": _candidate("a"), "b": _candidate("b")}) == "a"
    assert calls == ["a", "b"] * 4
